// Binds a pod to a node on the Kubernetes API server, as kube-scheduler's default binder does
// when no extender binds: `POST /api/v1/namespaces/{namespace}/pods/{name}/binding` with a v1
// Binding (k8s.io/api/core/v1 types.go: `Binding{ObjectMeta, Target ObjectReference}`;
// kubernetes pkg/scheduler/framework/plugins/defaultbinder/default_binder.go sets the
// namespace, name and UID of the pod and a Target of kind Node). The API server answers 201
// with the Binding, or a v1 Status whose `message` says why not (409 when the pod is already
// bound, 404 when it is gone, 403 without RBAC for pods/binding).
//
// Before a Binding, Verify reads the pod and the node from the API server (GET
// /api/v1/namespaces/{namespace}/pods/{name} and /api/v1/nodes/{node}) and checks them
// (serve/bind_check.h): the bind trusts the API server's objects, not what a caller sent to the
// filter. The RBAC this needs: get on pods and nodes, create on pods/binding (deploy/kubernetes).
//
// Authentication: a bearer token from `token_file` (a service account's projected token,
// which the kubelet rotates: it is read again for every Binding), TLS verified against
// `ca_file` for an https URL. An http URL (for example `kubectl proxy` on loopback) sends no
// token unless one is given.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kube_client.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/serve/extender_wire.h"

namespace httplib {
class Client;
}

namespace gpufit::serve {

struct ApiServerOptions {
  std::string url{};         // scheme://host[:port], e.g. https://kubernetes.default.svc
  std::string token_file{};  // empty: no Authorization header
  std::string ca_file{};     // https only; empty: the system's CA store
  double timeout_s = 5;      // connect, read and write, each
  // The kube-scheduler profiles that call this extender: a pod whose spec.schedulerName (absent:
  // default-scheduler) is another's is not bound (bind_check.h: CheckSchedulerName).
  std::vector<std::string> scheduler_names{"default-scheduler"};
};

// The v1 Binding that binds `args`' pod to its node, as JSON.
std::string BindingJson(const BindingArgs& args);

class ApiServerBinder {
 public:
  // Errors: kInvalidArgument for a URL that is not http:// or https:// host[:port] (no path),
  // a token or CA file that cannot be read, a token with an http:// URL that is not loopback.
  static Result<ApiServerBinder> Make(const ApiServerOptions& options);

  // Errors, by whether the Binding may exist:
  //  * kFailedPrecondition: it does not. The API server refused (a 4xx other than 409: 403
  //    without RBAC, 404 pod gone, 400/422 invalid), the server cannot be connected to, the
  //    name is not a DNS-1123 subdomain (it goes into the URL path), or the token file cannot
  //    be read.
  //  * kUnavailable: it may. No answer after the request went out (a timeout, a reset),
  //    409 Conflict (the pod is already bound: perhaps by an earlier attempt whose answer was
  //    lost), or a 5xx. The message has the status code and the Status message.
  Result<void> Bind(const BindingArgs& args) const;

  // The API server's pod, read and checked for the bind (see the top of this file), as
  // kube_reader.h parses it: its requests are what the bind reserves. Errors:
  //  * kFailedPrecondition: the pod or node is not bindable (not pending, another UID, the node
  //    excluded by its selector, affinity or taints; 404, 403), or a name is not a DNS-1123 subdomain;
  //  * kUnavailable: the API server did not answer in time, answered 5xx, or not JSON.
  Result<KubePod> Verify(const BindingArgs& args) const;

  // Every pod of the cluster (GET /api/v1/pods, paginated: ingest/kube_api/kube_client.h), for
  // restart recovery (serve/restart_recovery.h). Needs list on pods. Errors: those of
  // KubeClient::List and of ParseKubePodList.
  Result<std::vector<KubePod>> ListPods() const;

  const std::string& url() const { return options_.url; }

 private:
  Result<std::unique_ptr<httplib::Client>> Client(const BindingArgs& args) const;
  // The read-only client (ingest/kube_api/kube_client.h) for the same server, token and CA.
  Result<kube_api::KubeClient> ReadClient() const;
  explicit ApiServerBinder(ApiServerOptions options) : options_(std::move(options)) {}
  ApiServerOptions options_;
};

}  // namespace gpufit::serve

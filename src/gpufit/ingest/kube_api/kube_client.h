// A client of the Kubernetes API (HTTPS with cpp-httplib and OpenSSL) for the connection
// kubeconfig.h resolves: GET one object, LIST a collection the way kubectl does, and the write
// verbs `gpufit apply` needs (PATCH, POST, PUT, DELETE; the query string carries dryRun=All,
// fieldManager= and force= as the API server documents them). Everything but apply only reads.
//
// TLS: the server's certificate must chain to KubeConnection::ca_pem (only those CAs, as
// client-go's rest.Config with CAData), or to the system's CAs when there is none, and name the
// server's host, or tls_server_name when set (which is also the SNI name sent), unless
// insecure_skip_tls_verify. The client certificate and key are used from memory.
//
// Bounds (KubeClientOptions): a connect timeout, a read timeout, a total time and a body size per
// request; a LIST pages `limit` items at a time, stops at max_items and at a continue token
// given twice. No retries: a failed request is an error the caller sees.
//
// Errors name the server URL and path (a write verb: its method first), the HTTP status and the API server's Status
// message:
//   https://10.0.0.1:6443/api/v1/nodes: the API server answered 403: nodes is forbidden: User ...
// kNotFound for 404, kUnavailable when the server cannot be reached, does not answer in time,
// answers 5xx or 429, or fails TLS, kFailedPrecondition for other refusals (401, 403, a 409
// conflict, a 422 invalid object, an admission webhook's denial), kInvalidArgument for a
// connection that cannot be used (a certificate that is not PEM, a bad server URL).
// Thread-safety: a const KubeClient may be used from several threads (each request has its own
// connection).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kubeconfig.h"

namespace gpufit::kube_api {

struct KubeClientOptions {
  double connect_timeout_s = 10;
  double read_timeout_s = 60;    // per read of a response
  double total_timeout_s = 120;  // one request, headers and body (a LIST pays it per page)
  int page_limit = 500;          // items per LIST page (kubectl's --chunk-size default)
  // A page's body: 500 pods are a few MiB; far more is a hostile or broken server.
  std::size_t max_body_bytes = std::size_t{256} << 20;
  // Items of one LIST: Kubernetes' own scalability limits are 150,000 pods and 5,000 nodes.
  std::size_t max_items = 1'000'000;
};

// `s` as a query parameter's value: every byte but RFC 3986's unreserved ones (letters, digits,
// - _ . ~) as %XX (a label selector "app.kubernetes.io/name=x" -> "app.kubernetes.io%2Fname%3Dx").
std::string PercentEncode(const std::string& s);

class KubeClient {
 public:
  // Checks the server URL and parses the PEM material once. Errors: kInvalidArgument.
  static Result<KubeClient> Make(const KubeConnection& connection, const KubeClientOptions& options = {});

  // GET `path` (e.g. "/api/v1/nodes?limit=1"): the JSON body of a 200 answer.
  Result<nlohmann::json> Get(const std::string& path) const;

  // The body types of PATCH
  // (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/): strategic merge
  // (lists merged by their patchMergeKey, e.g. containers by name), JSON merge (RFC 7386), and server-side apply
  // (https://kubernetes.io/docs/reference/using-api/server-side-apply/; the path must carry ?fieldManager=).
  enum class PatchType { kStrategicMerge, kMerge, kApply };
  // The write verbs: the object the server answers with (200 or 201; DELETE also 202).
  Result<nlohmann::json> Patch(const std::string& path, PatchType type, const nlohmann::json& patch) const;
  Result<nlohmann::json> Create(const std::string& path, const nlohmann::json& object) const;   // POST
  Result<nlohmann::json> Replace(const std::string& path, const nlohmann::json& object) const;  // PUT
  Result<nlohmann::json> Delete(const std::string& path) const;

  // Every item of the collection at `path` (e.g. "/api/v1/pods"), paginated with
  // ?limit=&continue= as kubectl get does, as one document of the shape `kubectl get -o json`
  // prints: {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": RV}, "items":
  // [...]}, each item with the `kind` and `apiVersion` the API server leaves out of list items
  // (kubectl adds them too: "NodeList" items are "Node"). RV is the first page's
  // resourceVersion (kubectl prints ""), the store's revision at the list.
  Result<nlohmann::json> List(const std::string& path) const;

  const KubeConnection& connection() const { return connection_; }

 private:
  Result<nlohmann::json> Send(const std::string& method, const std::string& path, const std::string& content_type,
                              const std::string& payload) const;
  struct Tls;
  KubeClient() = default;
  KubeConnection connection_;
  KubeClientOptions options_;
  std::string scheme_, host_, base_path_;
  int port_ = 0;
  std::shared_ptr<const Tls> tls_;
};

}  // namespace gpufit::kube_api

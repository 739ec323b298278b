#include "gpufit/serve/api_binder.h"

#include <fmt/format.h>
#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/ingest/kube_api/kube_client.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/serve/bind_check.h"
#include "gpufit/serve/pod_affinity.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unavailable("{}: cannot read the API token", path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return Unavailable("{}: the API token file is empty", path);
  return token;
}

std::string StatusMessage(const std::string& body) {
  std::string why = body.substr(0, 300);
  try {  // a v1 Status: its message says why
    const Json status = Json::parse(body);
    if (status.is_object() && status.contains("message") && status["message"].is_string())
      why = status["message"].get<std::string>();
  } catch (const Json::exception&) {
  }
  return why;
}

}  // namespace

std::string BindingJson(const BindingArgs& args) {
  Json metadata{{"name", args.pod_name}, {"namespace", args.pod_namespace}};
  if (!args.pod_uid.empty()) metadata["uid"] = args.pod_uid;
  const Json binding{{"apiVersion", "v1"},
                     {"kind", "Binding"},
                     {"metadata", metadata},
                     {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", args.node}}}};
  return binding.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<ApiServerBinder> ApiServerBinder::Make(const ApiServerOptions& options) {
  const std::string& url = options.url;
  const bool https = url.starts_with("https://");
  const std::size_t scheme_end = url.find("://");
  if ((!https && !url.starts_with("http://")) || scheme_end == std::string::npos ||
      url.size() == scheme_end + 3 || url.find('/', scheme_end + 3) != std::string::npos) {
    return InvalidArgument("--kube-api: expected http(s)://host[:port] without a path, got '{}'", url);
  }
  if (!https && !options.token_file.empty()) {  // the token would cross the network in clear text
    const std::string host = url.substr(scheme_end + 3, url.find(':', scheme_end + 3) - scheme_end - 3);
    if (host != "127.0.0.1" && host != "localhost" && !url.starts_with("http://[::1]"))
      return InvalidArgument(
          "--kube-token-file with an http:// --kube-api ({}) would send the token in clear text: use https:// "
          "(http:// only on loopback, e.g. kubectl proxy)",
          url);
  }
  if (!options.token_file.empty()) {
    if (Result<std::string> token = ReadToken(options.token_file); !token)
      return InvalidArgument("--kube-token-file: {}", token.error().message);
  }
  if (https && !options.ca_file.empty() && !std::ifstream(options.ca_file)) {
    return InvalidArgument("--kube-ca-file: {}: cannot be read", options.ca_file);
  }
  return ApiServerBinder(options);
}

Result<void> ApiServerBinder::Bind(const BindingArgs& args) const {
  if (!IsDnsSubdomain(args.pod_namespace) || !IsDnsSubdomain(args.pod_name)) {
    return FailedPrecondition("bind: pod '{}/{}': namespace and name must be DNS-1123 subdomains", args.pod_namespace,
                              args.pod_name);
  }
  Result<std::unique_ptr<httplib::Client>> made = Client(args);
  if (!made) return made.error();
  httplib::Client& client = **made;
  const std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}/binding", args.pod_namespace, args.pod_name);
  const httplib::Result res = client.Post(path, BindingJson(args), "application/json");
  if (!res && res.error() == httplib::Error::Connection) {  // nothing was sent
    return FailedPrecondition("bind {}/{}: cannot connect to {} (cpp-httplib: {})", args.pod_namespace, args.pod_name,
                              options_.url, httplib::to_string(res.error()));
  }
  if (!res) {
    return Unavailable("bind {}/{}: {}{}: no answer within {} s (cpp-httplib: {}); the Binding may exist",
                       args.pod_namespace, args.pod_name, options_.url, path, options_.timeout_s,
                       httplib::to_string(res.error()));
  }
  if (res->status == 200 || res->status == 201) return {};
  const std::string why = StatusMessage(res->body);
  const std::string message = fmt::format("bind {}/{} to {}: the API server answered {}: {}", args.pod_namespace,
                                          args.pod_name, args.node, res->status, why);
  if (res->status == 409 || res->status >= 500) return Unavailable("{}", message);
  return FailedPrecondition("{}", message);
}

Result<std::unique_ptr<httplib::Client>> ApiServerBinder::Client(const BindingArgs& args) const {
  auto client = std::make_unique<httplib::Client>(options_.url);
  const auto seconds = static_cast<time_t>(options_.timeout_s);
  const auto micros = static_cast<time_t>((options_.timeout_s - static_cast<double>(seconds)) * 1e6);
  client->set_connection_timeout(seconds, micros);
  client->set_read_timeout(seconds, micros);
  client->set_write_timeout(seconds, micros);
  // Head and body go out in two writes: without TCP_NODELAY the body can wait for the API
  // server's delayed ACK, 40 ms (measured under kube-scheduler: bind p99 55 ms, p50 7 ms).
  client->set_tcp_nodelay(true);
  if (options_.url.starts_with("https://") && !options_.ca_file.empty())
    client->set_ca_cert_path(options_.ca_file.c_str());
  if (!options_.token_file.empty()) {
    Result<std::string> token = ReadToken(options_.token_file);
    if (!token) return FailedPrecondition("bind {}/{}: {}", args.pod_namespace, args.pod_name, token.error().message);
    client->set_bearer_token_auth(*token);
  }
  return client;
}

Result<KubePod> ApiServerBinder::Verify(const BindingArgs& args) const {
  if (!IsDnsSubdomain(args.pod_namespace) || !IsDnsSubdomain(args.pod_name) || !IsDnsSubdomain(args.node)) {
    return FailedPrecondition("bind: pod '{}/{}' to node '{}': namespace, name and node must be DNS-1123 subdomains",
                              args.pod_namespace, args.pod_name, args.node);
  }
  Result<kube_api::KubeClient> client = ReadClient();
  if (!client) return Unavailable("bind {}/{}: {}", args.pod_namespace, args.pod_name, client.error().message);
  // A pod or node the API server does not have (404), or will not show (401, 403), is not
  // bindable for certain; no answer, a 5xx or a 429 may pass.
  const auto get = [&](const std::string& path) -> Result<Json> {
    Result<Json> got = client->Get(path);
    if (got || got.error().code == Code::kUnavailable) return got;
    return FailedPrecondition("bind {}/{}: {}", args.pod_namespace, args.pod_name, got.error().message);
  };
  Result<Json> pod = get(fmt::format("/api/v1/namespaces/{}/pods/{}", args.pod_namespace, args.pod_name));
  if (!pod) return pod.error();
  if (Result<void> pending = CheckPending(*pod, args); !pending) return pending.error();
  if (Result<void> ours = CheckSchedulerName(*pod, options_.scheduler_names, args); !ours) return ours.error();
  Result<Json> node = get(fmt::format("/api/v1/nodes/{}", args.node));
  if (!node) return node.error();
  if (Result<void> admits = CheckNodeAdmits(*pod, *node, args); !admits) return admits.error();
  // The pod's required inter-pod (anti-)affinity: read only for a pod that has such a term.
  if (const AffinityReads reads = AffinityReadsOf(*pod); reads.any) {
    AffinityView view;
    Result<Json> nodes = get("/api/v1/nodes");
    if (!nodes) return nodes.error();
    for (const Json& n : (*nodes)["items"])
      view.node_labels[n["metadata"].value("name", "")] = n["metadata"].value("labels", Json::object());
    std::vector<std::string> lists;  // pods bound to a node: spec.nodeName!= (URL-encoded)
    if (reads.every_namespace) {
      lists.push_back("/api/v1/pods?fieldSelector=spec.nodeName%21%3D");
      Result<Json> namespaces = get("/api/v1/namespaces");
      if (!namespaces) return namespaces.error();
      for (const Json& n : (*namespaces)["items"])
        view.namespace_labels[n["metadata"].value("name", "")] = n["metadata"].value("labels", Json::object());
    } else {
      for (const std::string& ns : reads.namespaces)
        if (IsDnsSubdomain(ns)) lists.push_back(fmt::format("/api/v1/namespaces/{}/pods?fieldSelector=spec.nodeName%21%3D", ns));
    }
    for (const std::string& path : lists) {
      Result<Json> pods = get(path);
      if (!pods) return pods.error();
      for (Json& p : (*pods)["items"]) view.pods.push_back(std::move(p));
    }
    if (Result<void> ok = CheckPodAffinity(*pod, args.node, view, args); !ok) return ok.error();
  }
  Result<KubePod> parsed =
      ParseKubePod(*pod, fmt::format("the API server's pod {}/{}", args.pod_namespace, args.pod_name));
  if (!parsed) return FailedPrecondition("bind {}/{}: {}", args.pod_namespace, args.pod_name, parsed.error().message);
  return parsed;
}

Result<kube_api::KubeClient> ApiServerBinder::ReadClient() const {
  kube_api::KubeConnection connection;
  connection.server = options_.url;
  connection.source = "--kube-api";
  if (options_.url.starts_with("https://") && !options_.ca_file.empty()) {
    std::ifstream in(options_.ca_file, std::ios::binary);
    std::ostringstream pem;
    pem << in.rdbuf();
    if (!in) return InvalidArgument("--kube-ca-file: {}: cannot be read", options_.ca_file);
    connection.ca_pem = pem.str();
  }
  if (!options_.token_file.empty()) {
    Result<std::string> token = ReadToken(options_.token_file);
    if (!token) return Unavailable("--kube-token-file: {}", token.error().message);
    connection.token = std::move(*token);
  }
  kube_api::KubeClientOptions bounds;
  bounds.connect_timeout_s = options_.timeout_s;
  bounds.read_timeout_s = options_.timeout_s;
  return kube_api::KubeClient::Make(connection, bounds);
}

Result<std::vector<KubePod>> ApiServerBinder::ListPods() const {
  Result<kube_api::KubeClient> client = ReadClient();
  if (!client) return client.error();
  Result<Json> list = client->List("/api/v1/pods");
  if (!list) return list.error();
  return ParseKubePodList(*list, options_.url + "/api/v1/pods");
}

}  // namespace gpufit::serve

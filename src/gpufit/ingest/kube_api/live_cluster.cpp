#include "gpufit/ingest/kube_api/live_cluster.h"

#include "gpufit/ingest/kube/kube_reader.h"

namespace gpufit::kube_api {

using Json = nlohmann::json;

Result<Json> ListNodesAndSlices(const KubeClient& client, int* slices) {
  Result<Json> nodes = client.List("/api/v1/nodes");
  if (!nodes) return nodes.error();
  int count = 0;
  for (const char* path : {"/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1beta1/resourceslices"}) {
    Result<Json> found = client.List(path);
    if (!found && found.error().code == Code::kNotFound) continue;  // no DRA (at this version)
    if (!found) return found.error();
    for (Json& item : (*found)["items"]) {
      (*nodes)["items"].push_back(std::move(item));
      ++count;
    }
    break;
  }
  if (slices != nullptr) *slices = count;
  return nodes;
}

namespace {

// Every item's name and resourceVersion, hashed: a List's own resourceVersion is the store's
// revision, which moves when any object of the cluster changes (a lease renewed), not only these.
std::string Fingerprint(const Json& nodes, const Json& pods) {
  // Any field of any type: the reader, not this hash, says what is malformed.
  auto str = [](const Json& j, const char* key) -> std::string {
    if (!j.is_object()) return "";
    const auto it = j.find(key);
    return it == j.end() ? "" : it->is_string() ? it->get<std::string>() : it->dump();
  };
  std::string all;
  for (const Json* list : {&nodes, &pods})
    for (const Json& item : (*list)["items"]) {
      const Json meta = item.is_object() && item.contains("metadata") ? item["metadata"] : Json::object();
      all += str(item, "kind") + "/" + str(meta, "namespace") + "/" + str(meta, "name") + "@" +
             str(meta, "resourceVersion") + "\n";
    }
  return fmt::format("{:016x}", std::hash<std::string>{}(all));
}

}  // namespace

Result<LiveCluster> ReadLiveCluster(const KubeClient& client) {
  LiveCluster out;
  out.source = client.connection().Describe();
  const std::string& server = client.connection().server;
  Result<Json> nodes = ListNodesAndSlices(client, &out.resource_slices);
  if (!nodes) return nodes.error();
  Result<Json> pods = client.List("/api/v1/pods");
  if (!pods) return pods.error();
  out.version = Fingerprint(*nodes, *pods);
  Result<std::vector<KubeNode>> n = ParseKubeNodeList(std::move(*nodes), server + "/api/v1/nodes");
  if (!n) return n.error();
  Result<std::vector<KubePod>> p = ParseKubePodList(*pods, server + "/api/v1/pods");
  if (!p) return p.error();
  out.nodes = std::move(*n);
  out.pods = std::move(*p);
  return out;
}

Result<LiveCluster> ReadLiveCluster(const KubeconfigRequest& request, const KubeEnvironment& env,
                                    const KubeClientOptions& options) {
  Result<KubeConnection> connection = ResolveKubeconfig(request, env);
  if (!connection) return connection.error();
  Result<KubeClient> client = KubeClient::Make(*connection, options);
  if (!client) return client.error();
  return ReadLiveCluster(*client);
}

namespace {

class LiveSource final : public ClusterSource {
 public:
  LiveSource(KubeconfigRequest request, KubeEnvironment env, KubeClientOptions options)
      : request_(std::move(request)), env_(std::move(env)), options_(options) {}

  std::string Name() const override {
    if (!name_.empty()) return name_;
    return request_.path.empty() ? "the kubeconfig's cluster" : "the cluster of " + request_.path;
  }

  Result<ClusterObjects> Read() override {
    Result<LiveCluster> live = ReadLiveCluster(request_, env_, options_);
    if (!live) return live.error();
    version_ = live->version;
    return Objects(std::move(*live));
  }

  Result<std::optional<ClusterObjects>> ReadIfChanged() override {
    Result<LiveCluster> live = ReadLiveCluster(request_, env_, options_);
    if (!live) return live.error();
    if (!version_.empty() && live->version == version_) return std::optional<ClusterObjects>{};
    version_ = live->version;
    return std::optional<ClusterObjects>{Objects(std::move(*live))};
  }

 private:
  ClusterObjects Objects(LiveCluster live) {
    name_ = live.source;
    ClusterObjects out;
    out.summary = fmt::format(
        "{} nodes{} and {} pods", live.nodes.size(),
        live.resource_slices > 0 ? fmt::format(" ({} ResourceSlices)", live.resource_slices) : std::string(),
        live.pods.size());
    out.nodes = std::move(live.nodes);
    out.pods = std::move(live.pods);
    return out;
  }

  KubeconfigRequest request_;
  KubeEnvironment env_;
  KubeClientOptions options_;
  std::string version_, name_;
};

}  // namespace

std::unique_ptr<ClusterSource> LiveClusterSource(KubeconfigRequest request, KubeEnvironment env,
                                                 KubeClientOptions options) {
  return std::make_unique<LiveSource>(std::move(request), std::move(env), options);
}

}  // namespace gpufit::kube_api

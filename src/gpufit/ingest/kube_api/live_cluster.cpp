#include "gpufit/ingest/kube_api/live_cluster.h"

#include "gpufit/ingest/kube_reader.h"

namespace gpufit::kube_api {

using Json = nlohmann::json;

Result<Json> ListNodesAndSlices(const KubeClient& client, int* slices) {
  Result<Json> nodes = client.List("/api/v1/nodes");
  if (!nodes) return nodes.error();
  int count = 0;
  std::string slices_version;
  for (const char* path : {"/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1beta1/resourceslices"}) {
    Result<Json> found = client.List(path);
    if (!found && found.error().code == Code::kNotFound) continue;  // no DRA (at this version)
    if (!found) return found.error();
    slices_version = (*found)["metadata"]["resourceVersion"].get<std::string>();
    for (Json& item : (*found)["items"]) {
      (*nodes)["items"].push_back(std::move(item));
      ++count;
    }
    break;
  }
  // Both versions, so that a change in either shows in the one string.
  (*nodes)["metadata"]["resourceVersion"] =
      (*nodes)["metadata"]["resourceVersion"].get<std::string>() + "/" + slices_version;
  if (slices != nullptr) *slices = count;
  return nodes;
}

Result<LiveCluster> ReadLiveCluster(const KubeClient& client) {
  LiveCluster out;
  out.source = client.connection().Describe();
  const std::string& server = client.connection().server;
  Result<Json> nodes = ListNodesAndSlices(client, &out.resource_slices);
  if (!nodes) return nodes.error();
  Result<Json> pods = client.List("/api/v1/pods");
  if (!pods) return pods.error();
  out.version = (*nodes)["metadata"]["resourceVersion"].get<std::string>() + "/" +
                (*pods)["metadata"]["resourceVersion"].get<std::string>();
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

}  // namespace gpufit::kube_api

// The live cluster as input (issue 39): the nodes (with their DRA ResourceSlices) and the pods
// of every namespace, listed from the API server, in the shapes and with the rules of
// `kubectl get nodes,resourceslices -o json` and `kubectl get pods -A -o json` read by
// ingest/kube/kube_reader.h. Needs list on nodes, pods and resource.k8s.io resourceslices
// (deploy/kubernetes/clusterrole.yaml).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube/cluster_source.h"
#include "gpufit/ingest/kube_api/kube_client.h"
#include "gpufit/ingest/kube_api/kubeconfig.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit::kube_api {

// /api/v1/nodes with the items of /apis/resource.k8s.io/v1/resourceslices appended (v1beta1
// when the server has no v1; a 404 on both means no DRA and adds nothing): one List, as
// `kubectl get nodes,resourceslices -o json` prints it. `slices` (if not null) gets their count.
Result<nlohmann::json> ListNodesAndSlices(const KubeClient& client, int* slices = nullptr);

struct LiveCluster {
  std::vector<KubeNode> nodes;  // sorted by name, DRA GPUs counted (ReadKubeNodes)
  std::vector<KubePod> pods;    // sorted by namespace/name (ReadKubePods)
  int resource_slices = 0;
  std::string source;  // the server and context: "https://10.0.0.1:6443 (context prod)"
  // A hash of every item's kind, name and resourceVersion: equal on two reads when none of these
  // objects changed in between (serve's re-list skips such a list).
  std::string version;
};

// Lists the nodes, ResourceSlices and pods through `client`. Errors: the client's, and
// kube_reader's on the objects, which name the server and the collection path in place of a file.
Result<LiveCluster> ReadLiveCluster(const KubeClient& client);

// Resolves the kubeconfig (kubeconfig.h), then ReadLiveCluster.
Result<LiveCluster> ReadLiveCluster(const KubeconfigRequest& request, const KubeEnvironment& env,
                                    const KubeClientOptions& options = {});

// The ClusterSource of a live API server (ingest/kube/cluster_source.h): each read resolves
// the kubeconfig again (a rotated service account token, an exec plugin's new token) and lists
// the cluster; ReadIfChanged compares LiveCluster::version. Name(): the server and context once
// read, else the kubeconfig asked for.
std::unique_ptr<ClusterSource> LiveClusterSource(KubeconfigRequest request, KubeEnvironment env,
                                                 KubeClientOptions options = {});

}  // namespace gpufit::kube_api

#include "kube_source.h"

#include <cstdio>

namespace gpufit::cli {

void AddKubeApiOptions(CLI::App* cmd, KubeApiFlags& f) {
  cmd->add_option("--kubeconfig", f.kubeconfig,
                  "read the nodes and pods from the live cluster's API server with this kubeconfig (instead of "
                  "--nodes/--pods files); 'in-cluster' uses the pod's service account; --context alone uses "
                  "$KUBECONFIG or ~/.kube/config");
  cmd->add_option("--context", f.context, "the kubeconfig context to use (default: its current-context)");
}

Result<kube_api::LiveCluster> ReadLiveCluster(const KubeApiFlags& f, bool files_given, bool quiet) {
  if (files_given)
    return InvalidArgument(
        "--kubeconfig/--context read the nodes and pods from the live cluster: give them or --nodes/--pods "
        "(--watch-dir), not both");
  Result<kube_api::LiveCluster> live =
      kube_api::ReadLiveCluster({.path = f.kubeconfig, .context = f.context}, kube_api::KubeEnvironment::FromProcess());
  if (!live) return live.error();
  if (!quiet)
    std::fprintf(stderr, "gpufit: read %zu nodes%s and %zu pods from %s\n", live->nodes.size(),
                 live->resource_slices > 0 ? fmt::format(" ({} ResourceSlices)", live->resource_slices).c_str() : "",
                 live->pods.size(), live->source.c_str());
  return live;
}

}  // namespace gpufit::cli

#include "kube_source.h"

#include <cstdio>

#include "gpufit/ingest/kube_api/live_cluster.h"

namespace gpufit::cli {

void AddKubeApiOptions(CLI::App* cmd, KubeApiFlags& f) {
  // An empty value (`--kubeconfig "$UNSET"`) would otherwise read as "not given": the run would
  // go on without the cluster it was asked for.
  const auto non_empty = [](const std::string& v) { return v.empty() ? std::string("must not be empty") : ""; };
  cmd->add_option("--kubeconfig", f.kubeconfig,
                  "read the nodes and pods from the live cluster's API server with this kubeconfig (instead of "
                  "--nodes/--pods files); 'in-cluster' uses the pod's service account; --context alone uses "
                  "$KUBECONFIG or ~/.kube/config")
      ->check(non_empty);
  cmd->add_option("--context", f.context, "the kubeconfig context to use (default: its current-context)")
      ->check(non_empty);
}

Result<std::unique_ptr<ClusterSource>> MakeClusterSource(const KubeApiFlags& f, KubectlFilesOptions files,
                                                         const char* files_flags) {
  const bool files_given = !files.nodes.empty() || !files.pods.empty();
  if (f.given()) {
    if (files_given)
      return InvalidArgument(
          "--kubeconfig/--context read the nodes and pods from the live cluster: give them or {}, not both",
          files_flags);
    return kube_api::LiveClusterSource({.path = f.kubeconfig, .context = f.context},
                                       kube_api::KubeEnvironment::FromProcess());
  }
  if (!files_given) return std::unique_ptr<ClusterSource>();
  return KubectlFiles(std::move(files));
}

Result<ClusterObjects> ReadCluster(ClusterSource& source, const KubeApiFlags& f, bool quiet) {
  Result<ClusterObjects> read = source.Read();
  if (read && f.given() && !quiet)
    std::fprintf(stderr, "gpufit: read %s from %s\n", read->summary.c_str(), source.Name().c_str());
  return read;
}

}  // namespace gpufit::cli

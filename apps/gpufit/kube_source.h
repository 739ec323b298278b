// --kubeconfig and --context of plan, replay and serve: the nodes and pods from the live
// cluster's API server (ingest/kube_api/live_cluster.h) in place of the kubectl files of
// --nodes and --pods.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/live_cluster.h"

namespace gpufit::cli {

struct KubeApiFlags {
  std::string kubeconfig;  // a file, or "in-cluster"
  std::string context;
  bool given() const { return !kubeconfig.empty() || !context.empty(); }
};

void AddKubeApiOptions(CLI::App* cmd, KubeApiFlags& f);

// With `files_given` (--nodes, --pods or --watch-dir set), an error naming the flags. Else the
// live cluster, and one line on stderr: "gpufit: read 12 nodes and 340 pods from https://...
// (context X)" (`quiet`: none).
Result<kube_api::LiveCluster> ReadLiveCluster(const KubeApiFlags& f, bool files_given, bool quiet = false);

}  // namespace gpufit::cli

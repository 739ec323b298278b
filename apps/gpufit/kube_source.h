// Where plan, replay and serve take the cluster's nodes and pods from (ingest/kube/cluster_source.h):
// --kubeconfig and --context, the live cluster's API server (ingest/kube_api/live_cluster.h),
// or kubectl's files (--nodes, --pods; serve's --watch-dir).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube/cluster_source.h"
#include "gpufit/ingest/kube/kubectl_files.h"

namespace gpufit::cli {

struct KubeApiFlags {
  std::string kubeconfig;  // a file, or "in-cluster"
  std::string context;
  bool given() const { return !kubeconfig.empty() || !context.empty(); }
};

void AddKubeApiOptions(CLI::App* cmd, KubeApiFlags& f);

// The live cluster when `f` is given (an error when `files` names a file too: `files_flags`
// says which flags, e.g. "--nodes/--pods"), else `files`; nullptr when neither names anything.
Result<std::unique_ptr<ClusterSource>> MakeClusterSource(const KubeApiFlags& f, KubectlFilesOptions files,
                                                         const char* files_flags);

// source.Read(); from the live cluster, one line on stderr: "gpufit: read 12 nodes and 340 pods
// from https://... (context X)" (`quiet`: none).
Result<ClusterObjects> ReadCluster(ClusterSource& source, const KubeApiFlags& f, bool quiet = false);

}  // namespace gpufit::cli

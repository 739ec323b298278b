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
#include "telemetry_source.h"

namespace gpufit::cli {

struct KubeApiFlags {
  std::string kubeconfig;  // a file, or "in-cluster"
  std::string context;
  // No flag, but $KUBECONFIG, ~/.kube/config or the pod's service account is there
  // (UseDefaultKubeconfig): the kubeconfig's own resolution order (ingest/kube_api/kubeconfig.h).
  bool by_default = false;
  bool given() const { return by_default || !kubeconfig.empty() || !context.empty(); }
};

// A first run with no input flag: sets f.by_default and returns true when $KUBECONFIG names an
// existing file, ~/.kube/config exists, or KUBERNETES_SERVICE_HOST and _PORT are set (in a pod).
bool UseDefaultKubeconfig(KubeApiFlags& f);

// With neither --prometheus nor --telemetry: the cluster's metrics service
// (ingest/kube_api/metrics_service.h: Prometheus, Thanos Query, VictoriaMetrics by KRR's labels)
// becomes s.prometheus, reached at http://NAME.NS.svc:PORT in a pod, else through the API
// server's service proxy with the kubeconfig's credentials (set in s). One instant probe
// (vector(1) over the last step of the range) checks that it answers as Prometheus. Prints on
// stderr what was discovered (cluster, service, how it is reached, the other candidates, the
// range), each with the flag that overrides it. Errors: none found (kInvalidArgument, naming
// --prometheus and the labels searched), the kubeconfig's and the API server's, and a service
// that does not answer as Prometheus (kUnavailable, naming the service).
Result<void> DiscoverPrometheus(TelemetrySource& s, const KubeApiFlags& f, double now_s);

void AddKubeApiOptions(CLI::App* cmd, KubeApiFlags& f);

// The live cluster when `f` is given (an error when `files` names a file too: `files_flags`
// says which flags, e.g. "--nodes/--pods"), else `files`; nullptr when neither names anything.
Result<std::unique_ptr<ClusterSource>> MakeClusterSource(const KubeApiFlags& f, KubectlFilesOptions files,
                                                         const char* files_flags);

// source.Read(); from the live cluster, one line on stderr: "gpufit: read 12 nodes and 340 pods
// from https://... (context X)" (`quiet`: none).
Result<ClusterObjects> ReadCluster(ClusterSource& source, const KubeApiFlags& f, bool quiet = false);

}  // namespace gpufit::cli

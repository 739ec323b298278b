// The ClusterSource of kubectl's JSON files (cluster_source.h): `kubectl get nodes -o json`
// (with `resourceslices` for DRA) and `kubectl get pods -A -o json`, read by kube_reader.h.
#pragma once

#include <memory>
#include <string>

#include "gpufit/ingest/kube/cluster_source.h"

namespace gpufit {

struct KubectlFilesOptions {
  std::string nodes;  // the nodes file; empty: none
  std::string pods;   // the pods file; empty: none
  // serve --watch-dir: a pods file not there (yet) means no pods; once read, a pods file that is
  // gone is an error (a sidecar's slip, not an empty cluster: every GPU would look free).
  bool pods_may_be_absent = false;
  // Errors start with the flag ("--nodes FILE: ...", as plan and replay print them).
  bool flag_in_errors = true;
};

std::unique_ptr<ClusterSource> KubectlFiles(KubectlFilesOptions options);

}  // namespace gpufit

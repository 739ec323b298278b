// Where the cluster's nodes and pods come from, behind one interface (issue 39):
//  * kubectl's JSON files (kubectl_files.h): `--nodes`/`--pods`, or serve's `--watch-dir`;
//  * a live API server (ingest/kube_api/live_cluster.h): `--kubeconfig`/`--context`.
// Both give the objects kube_reader.h reads, by the same rules. `plan` and `replay` read once;
// `serve` reads again every --watch-interval-s and takes in only what changed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit {

struct ClusterObjects {
  std::optional<std::vector<KubeNode>> nodes;  // nullopt: this source has none (plan --pods alone)
  std::optional<std::vector<KubePod>> pods;    // nullopt: none
  std::string summary;                         // "8 nodes (1 ResourceSlices) and 31 pods"
};

class ClusterSource {
 public:
  virtual ~ClusterSource() = default;
  // The source in messages: "--nodes nodes.json", "DIR", "https://10.0.0.1:6443 (context prod)".
  virtual std::string Name() const = 0;
  // The objects now. Errors name the file, or the server and the collection path.
  virtual Result<ClusterObjects> Read() = 0;
  // Read(), or nullopt when nothing changed since the last read that succeeded: the same files
  // (inode, size, modification time), or the same objects at the same resourceVersions.
  virtual Result<std::optional<ClusterObjects>> ReadIfChanged() = 0;
};

}  // namespace gpufit

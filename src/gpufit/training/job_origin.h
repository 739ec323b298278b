// Where the figures of a training workload found in a cluster came from
// (training/cluster_jobs.h), for the plan to say so beside each figure. A workload file's
// jobs carry none: their figures are the user's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpufit {

struct JobOrigin {
  std::string namespace_name{};
  std::string owner{};              // "PyTorchJob/llm", "Job/ft", or the gang evidence
  std::vector<std::string> pods{};  // pod names, in node order of RunningState::nodes
  std::vector<std::string> nodes{};
  std::string capacity{};             // of its nodes: "spot", "on-demand", "mixed" or "unknown"
  std::optional<double> started_s{};  // Unix seconds: the earliest start of its pods
  double runtime_so_far_h = 0;        // from started_s to the end of the range
  // Per figure (gpus, pods, gpu_model, started, work_h, checkpoint_size_gib,
  // checkpoint_write_s, restore_s, checkpointing): where it came from, in words, e.g.
  // "annotation gpufit.io/restore-seconds" or "assumption: ...".
  std::map<std::string, std::string> sources{};
};

// Where the spot interruption rate came from.
struct SpotRateOrigin {
  std::string kind{};        // "cluster history", "catalog band" or "workload file"
  double events = 0;         // reclaims counted in the cluster's history
  double node_hours = 0;     // spot node-hours observed
  std::string counted_by{};  // the metric and rule that counted them
};

}  // namespace gpufit

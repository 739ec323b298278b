// What the controller reads back from a plan.json (docs/plan-json.md, schema_version 1): the
// plan's totals and, per workload, the GPU memory cap gpufit recommends, the peak it was fitted
// on and the backtest verdict of the strategy that placed it. The exporter (exposition.h) and
// the drift rules (drift.h) work on these facts, never on the JSON.
//
// Workload key: `pods[].workload` (a plan made with --pods), else "pod/" + the pod's name
// without its "[i]"/"@k" suffix, the key of `workload_profiles.workloads[]`.
// Cap of a pod: its group's `memory_caps_mib` entry where the back end caps memory (hami, kai,
// dra-mps), else its `right_sizing.required_mib` (peak plus the learned margin: the memory it
// is planned to stay under). A workload's cap is the largest of its pods'.
// Strategy: "colocation" for a pod in `groups`, "right_sizing" for one too big for the target
// (its own right-sized GPU), "kept" for one kept on its current GPU (nothing changes).
// Verdict: `summary.status[strategy].status` (backtest/status.h: "held", "did not hold",
// "provisional", "not tested"); "not tested" where the plan has none (kept pods, no backtest).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::controller {

struct WorkloadFacts {
  std::string workload;           // the key above
  std::vector<std::string> pods;  // its pods in the plan, as `pods[].pod`
  std::int64_t cap_mib = 0;       // recommended GPU memory cap, MiB
  double fitted_peak_mib = 0;     // `workload_profiles` memory_peak_mib (0 when absent)
  std::string strategy;           // colocation, right_sizing or kept
  std::string verdict;            // held, did not hold, provisional or not tested
};

struct PlanFacts {
  std::int64_t gpus_before = 0, gpus_after = 0;                                       // totals.gpus_before / gpus_after
  double usd_per_month_before = 0, usd_per_month_after = 0, usd_per_month_saved = 0;  // totals
  std::vector<WorkloadFacts> workloads;                                               // by workload key
  std::map<std::string, std::string> workload_of;  // pod (as pods[].pod) -> workload key
};

// The facts of `plan_json`, the text of a plan.json. A document without a co-location plan
// (only training or inference sections) has no workloads and zero totals. Errors:
// kInvalidArgument naming `what` (e.g. the file) when the text is not JSON, its
// schema_version is not 1, or a field above has the wrong type.
Result<PlanFacts> ReadPlanFacts(const std::string& plan_json, const std::string& what);

}  // namespace gpufit::controller

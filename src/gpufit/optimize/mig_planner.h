// MIG layout planner: choose a MIG layout per GPU and an instance per workload so that
// the number of GPUs of one MIG-capable model is minimal.
//
// A workload can run in any instance with at least its memory need (and compute need);
// "+me" profiles are left out (no workload here asks for media engines). Workloads with
// the same set of adequate profiles form one class, so the problem is small whatever the
// workload count:
//   minimize  sum_L x_L                                     (GPUs with layout L)
//   s.t.      sum_p y_cp = n_c                  for every class c (p adequate for c)
//             sum_c y_cp <= sum_L count_L(p) x_L  for every profile p
//             x, y >= 0 integer,
// over every valid layout L of the GPU model (placement/mig_layout.h enumerates them).
// Solved exactly with COIN-OR CBC (branch and cut); CBC's proven bound gives the gap
// (0 when optimal; under a time limit the incumbent and its gap). First-fit decreasing
// (each workload on its smallest adequate profile, onto the first GPU whose layout stays
// valid) is reported beside it as the heuristic baseline.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/placement/mig_layout.h"

namespace gpufit {

struct MigWorkload {
  std::string name;
  MiB memory_need{};            // e.g. peak GPU memory x 1.1
  int compute_slices_need = 0;  // 0: any
  std::string profile{};        // when set, only this profile will do (replicas of one pod template)
};

// The smallest profile of `gpu` (fewest memory slices, then compute slices; no "+me") with at
// least `memory_need`, or null when none is that large.
const MigProfile* SmallestProfile(const MigGpu& gpu, MiB memory_need);

struct MigPlanOptions {
  double max_seconds = 30;                     // CBC time limit; the best plan found so far is kept
  MigStrategy strategy = MigStrategy::kMixed;  // kSingle: only layouts of one profile
  bool minimize_cost = false;                  // minimize the sum of GPU prices, not the GPU count
  // GPUs per node. Under kSingle a node holds one MIG device type on all its GPUs (the device
  // plugin's rule, placement/mig_layout.h), so GPUs are planned by whole nodes of one layout:
  // x_L counts nodes, each worth gpus_per_node GPUs of layout L. 1: no node rule (the plan is
  // per GPU). Must be 1 under kMixed, which has no rule across a node's GPUs.
  int gpus_per_node = 1;
};

// One GPU model of a pool: its price and how many GPUs of it there are (-1: no limit).
struct MigPoolGpu {
  const MigGpu* gpu = nullptr;
  double usd_per_gpu_hour = 1.0;
  int max_gpus = -1;
};

struct MigGpuPlan {
  std::string config;                  // mig-parted config name of its layout
  std::string gpu_model;               // the pool model this GPU is
  int node = -1;                       // the planned node it belongs to (gpus_per_node > 1), else -1
  std::vector<MigInstance> instances;  // in creation order, explicit starts
  std::vector<std::string> workloads;  // workload in instances[i], "" if spare
};

struct MigAssignment {
  std::string workload;
  int gpu = -1;  // index into MigPlan::gpus; -1 when no profile is big enough
  std::string profile;
  std::string resource;  // e.g. nvidia.com/mig-3g.40gb
};

struct MigPlan {
  std::string gpu_model;  // the pool's models, comma-separated
  int gpus = 0;
  double objective = 0;  // GPUs, or USD per hour with minimize_cost
  double bound = 0;      // CBC's proven lower bound on the objective
  int lower_bound = 0;   // GPU objective: fewest GPUs possible (ceil of the bound)
  bool optimal = false;
  double gap = 0;          // (objective - bound) / objective; 0 when optimal
  int first_fit_gpus = 0;  // the heuristic baseline: the first model, the workloads it can hold
  int nodes = 0;           // planned nodes when gpus_per_node > 1 (their GPUs share one layout), else 0
  std::vector<MigGpuPlan> gpu_plans;
  std::vector<MigAssignment> assignments;                     // in workload order
  std::vector<std::string> too_big;                           // workloads no profile fits (they need a whole GPU)
  std::map<std::string, std::map<std::string, int>> configs;  // config name -> profile -> count
};

// All valid layouts of `gpu` without "+me" profiles, each as profile -> count; the empty
// layout left out; under kSingle only layouts of one profile.
std::vector<std::map<const MigProfile*, int>> MigLayouts(const MigGpu& gpu, MigStrategy strategy = MigStrategy::kMixed);

// One GPU model, no limit. Errors: kFailedPrecondition if the solver finds no plan;
// kInvalidArgument for gpus_per_node < 1, or > 1 under the mixed strategy.
Result<MigPlan> PlanMigLayouts(const MigGpu& gpu, const std::vector<MigWorkload>& workloads,
                               const MigPlanOptions& options = {});

// A pool of MIG-capable models: the same program with x_L over every model's layouts,
// the objective the GPU count or the cost, and each model's GPU limit.
// Errors: kInvalidArgument for an empty pool; kFailedPrecondition when the limits leave
// no plan.
Result<MigPlan> PlanMigPool(const std::vector<MigPoolGpu>& pool, const std::vector<MigWorkload>& workloads,
                            const MigPlanOptions& options = {});

// The mig-parted config file (github.com/NVIDIA/mig-parted, `version: v1`) with one named
// config per distinct layout of the plan, `devices: all`: a node whose GPUs share a layout
// gets the label nvidia.com/mig.config=<name>.
std::string MigPartedConfig(const MigPlan& plan);

// Replicas apart (mig_apart.cpp): `set_of[w]` is workload w's replica set (-1: none). Each
// replica on a GPU that holds another of its set moves to an instance of its profile on another
// GPU of `gpu` (spare, or swapped with a workload that does not conflict there); one that cannot
// goes to a GPU added for that (config "gpufit-apart-<k>"; replicas of other sets join it while
// its layout stays valid and holds none of theirs). Afterwards no GPU
// holds two replicas of one set. Returns the GPUs added (also counted in plan.gpus).
int SpreadMigReplicas(const MigGpu& gpu, MigPlan& plan, const std::vector<int>& set_of);

}  // namespace gpufit

// The Plan: what to change for a set of GPU pods, what it saves, and the replay that shows
// it is safe. BuildPlan runs, in order: profiles (analyze/profile.h), memory-based
// right-sizing per pod (optimize/rightsize.h), co-location onto the target GPU model
// (optimize/colocate.h), the lower bound (optimize/lower_bound.h) and the replay
// (plan/replay.h).
//
// The recommended plan is the mixed-fleet plan (plan/fleet_plan.h, Plan::fleet), which
// starts from the same-model co-location below and moves its groups to cheaper models.
//
// Before/after accounting of the same-model plan (all on-demand catalog prices, a 730-hour month):
//  * before: one `current_gpu` per pod (one pod, one GPU, as the telemetry was taken), or as
//    many as a multi-GPU pod of one series holds (optimize/multi_gpu.h); a pod on a MIG
//    instance whose profile is known (PodSeries::mig_profile, else its pod spec's:
//    PlanOptions::spec_mig_profiles) is priced as its compute slices'
//    share of the GPU (a 1g.10gb on an A100-80GB: 1/7; ../shared/reference/mig_profiles.yaml),
//    and so is a kept one after; gpus_before still counts it as a device;
//  * after: one `target_gpu` per co-location group, plus, for each pod too big for the
//    target, one GPU of its right-sized model (its current GPU when no catalog GPU fits),
//    plus one current GPU per CPU-starved pod (never shrunk: it needs CPU, not less GPU), plus
//    every device of a multi-GPU pod (kept whole, never packed: optimize/multi_gpu.h);
//  * GPU-hours over the window: before = sum of pod lifetimes; after = sum over GPUs of the
//    samples where at least one of its pods runs (too-big pods: their lifetime);
//  * mean duty cycle per GPU = mean over GPUs and window samples of min(100, summed duty).
// A GPU whose memory is partly used outside any pod has that much less for pods: groups go
// there only where they fit (plan/reserved_gpus.h).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/analyze/container_profile.h"
#include "gpufit/analyze/profile.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/optimize/colocate.h"
#include "gpufit/optimize/cpu_starvation.h"
#include "gpufit/optimize/lower_bound.h"
#include "gpufit/optimize/lp_bound.h"
#include "gpufit/optimize/memory_envelope.h"
#include "gpufit/optimize/mig_planner.h"
#include "gpufit/optimize/multi_gpu.h"
#include "gpufit/optimize/rightsize.h"
#include "gpufit/plan/fleet_plan.h"
#include "gpufit/plan/preallocated.h"
#include "gpufit/plan/replay.h"
#include "gpufit/plan/reserved_gpus.h"
#include "gpufit/plan/workload_profiles.h"

namespace gpufit {

struct PlanOptions {
  std::string target_gpu;             // catalog id the pods are co-located on
  std::string current_gpu;            // catalog id the pods run on today; empty = target_gpu
  // Per telemetry pod: the catalog id it runs on today and where that came from
  // (plan/current_gpus.h); pods absent here run on current_gpu.
  std::map<std::string, std::string> current_gpu_of{}, current_gpu_source_of{};
  std::vector<std::string> current_gpu_warnings{};  // CurrentGpus::warnings, shown with the plan
  double headroom = 0.10;             // right-sizing: peak x (1 + headroom), in [0, 10]
  double max_collision_share = 0.01;  // in [0, 1]
  MiB reserve{0};                     // kept free on every co-located GPU, < target memory
  // Envelopes that hold on later data (optimize/memory_envelope.h): a learned memory margin
  // kept free on every shared GPU and added to right-sized pods, and collisions bounded as
  // if every pod were always active. false: the in-sample rule alone (the fitted data).
  bool robust = true;
  // The share of pooled peak surprises the margin may leave uncovered, in [0, 1): 0 covers
  // the largest surprise seen (the safe default); higher risks fewer GPUs.
  double memory_risk = 0;
  // Right-sizing never shrinks memory on a window shorter than this (hours, >= 0).
  double min_window_hours = 24;
  std::uint64_t seed = 1;
  std::int64_t search_budget = ColocateOptions{}.search_budget;
  unsigned threads = ColocateOptions{}.threads;
  // Wall-clock guard of the LP lower bound (optimize/lp_bound.h); 0 leaves the LP out (the
  // backtest's fits, whose bound nobody reads).
  double lp_bound_seconds = LpBoundOptions{}.max_seconds;
  // Also plan hardware isolation: one MIG instance per pod on the target (a MIG-capable
  // model), for tenants that must not share GPU memory (optimize/mig_planner.h).
  bool mig_isolation = false;
  // Sharing back ends that cap each pod's GPU memory (plan/manifests/sharing_backend.h:
  // HAMi, KAI-Scheduler, DRA with MPS). Each pod gets a cap: its right-sizing need, the
  // envelope max(peak x (1 + headroom), peak + learned margin), the largest over the
  // replicas of its workload (`workload_by_pod`, one pod template serves them all). A GPU's
  // pods are packed so that their caps add up to at most capacity_mib, as if each held its
  // cap for the whole window: a cap is reserved as long as its workload exists. The learned
  // margin is inside each cap, so no margin is kept free on top. Compute is still bounded
  // by the collision rule on the real duty cycles.
  bool memory_caps = false;
  // With memory_caps: a workload's pods go on one GPU together whenever their caps fit one
  // (dra-mps: a pod template names one shared ResourceClaim, so replicas on different GPUs
  // could not be expressed). Workloads too big for one GPU keep their pods as items of their own.
  bool whole_workloads = false;
  std::string sharing{};  // the back end the plan is for (plan/manifests/sharing_backend.h), as recorded
  // Telemetry pod name -> its workload (absent or "": the pod alone; plan/workload_keys.h
  // keys): the caps of memory_caps, and the replica sets kept apart.
  std::map<std::string, std::string> workload_by_pod{};
  // Replicas apart: no two pods of one controller-owned workload (a key of workload_by_pod
  // other than "pod/...") share a GPU, in the same-model and the mixed-fleet plans, so one
  // GPU failure takes down at most one replica of a service. Not with whole_workloads, whose
  // one ResourceClaim puts a workload's pods on one GPU by design.
  bool replicas_apart = true;
  // At most this many pods share one GPU (0: no limit): HAMi's registered deviceSplitCount
  // (ingest/kube/node_sharing.h), beyond which its scheduler leaves pods Pending.
  std::size_t max_pods_per_gpu = 0;
  // CPU starvation (optimize/cpu_starvation.h): starved pods keep their current GPU, alone;
  // their duty cycle shows the CPU's limit, not the GPU's need.
  StarvationOptions starvation{};
  // Telemetry pod name -> the GPUs and MIG devices its pod spec asks for (kubectl pods file,
  // KubePod::GpuDevices()); more than one keeps the pod whole (optimize/multi_gpu.h).
  std::map<std::string, int> spec_devices{};
  // Pod key ("ns/pod") -> the MIG profile its pod spec asks for (KubePod::MigProfile, kubectl
  // pods): the share a pod is priced at when its telemetry does not name the profile.
  std::map<std::string, std::string> spec_mig_profiles{};
  // The mixed-fleet plan (plan/fleet_plan.h): the models it may use (also right-sizing's)
  // and which pods are latency-bound.
  FleetOptions fleet{};
};

struct PlanTotals {
  std::size_t gpus_before = 0, gpus_after = 0, gpus_lower_bound = 0, gpus_first_fit_decreasing = 0;
  GpuLowerBound lower_bound;
  double gpu_hours_before = 0, gpu_hours_after = 0;
  double usd_per_month_before = 0, usd_per_month_after = 0;
  double mean_duty_pct_before = 0, mean_duty_pct_after = 0;
  std::size_t gap_to_lower_bound() const { return gpus_after - gpus_lower_bound; }
};

struct Plan {
  std::string source;  // telemetry path or "demo"
  std::size_t samples = 0;
  double step_s = 0, window_hours = 0;
  PlanOptions options;
  // current: the model most pods run on today (options.current_gpu); current_of: each pod's
  // own (options.current_gpu_of, else current), same order as pod_names.
  GpuModel current, target;
  std::vector<GpuModel> current_of;
  const GpuModel& current_gpu(std::size_t pod) const { return pod < current_of.size() ? current_of[pod] : current; }
  // Whether the pods run on more than one model today.
  bool mixed_current() const {
    return std::any_of(current_of.begin(), current_of.end(), [&](const GpuModel& m) { return m.id != current.id; });
  }
  double capacity_mib = 0;  // target memory - reserve: the line a GPU's memory must never cross
  // With options.robust: the learned margin (MiB), the pooled surprises it came from, and
  // the capacity the packer filled to (capacity_mib - memory_margin_mib).
  double memory_margin_mib = 0;
  std::size_t memory_surprises = 0;
  double packing_capacity_mib = 0;
  // With options.robust: a group of k pods keeps group_margin.For(k) free, so its line is
  // capacity_mib - group_margin.For(k) (optimize/memory_envelope.h); single_mib is
  // memory_margin_mib. Without: all zero.
  GroupMargin group_margin;
  double packing_line_mib(std::size_t pods) const { return capacity_mib - group_margin.For(pods); }
  // Per co-location group (replay.gpus): the most of its pods alive at one sample. Its sum
  // stays under packing_line_mib(pods alive) at every sample, so under
  // packing_line_mib(this) wherever this many run.
  std::vector<std::size_t> group_pods_at_once;
  // group_pods_at_once[g], or the group's size where it was not measured (a plan built by hand).
  std::size_t pods_at_once(std::size_t g) const {
    return g < group_pods_at_once.size() ? group_pods_at_once[g] : replay.gpus[g].pods.size();
  }
  std::int64_t collision_limit_samples = 0;
  std::vector<std::string> pod_names;
  std::vector<PodProfile> profiles;                  // per pod, same order as pod_names
  std::vector<RightSizing> right_sizing;             // per pod
  std::vector<std::optional<std::size_t>> group_of;  // per pod: index into replay.gpus, or none (too big)
  std::vector<std::size_t> too_big;                  // pods that need their own right-sized GPU
  bool container_data = false;                       // a GPU pod has container CPU: starvation was judged
  std::vector<CpuStarvation> cpu_starvation;         // starved pods (containers' CPU in the telemetry)
  std::vector<MultiGpuPod> multi_gpu;                // pods on several devices: kept whole
  // Inputs that are not what they seem (warned about in the summary and plan.json `warnings`):
  //  * unmeasured: pods at 0 MiB at every sample. A CUDA context alone holds hundreds of MiB,
  //    so such a pod was not measured rather than idle: it keeps its current GPU, alone, and
  //    is neither right-sized nor packed;
  //  * above_current: pods whose peak exceeds the current GPU's memory: the premise that they
  //    run on it today contradicts the data (name the right --current-gpu);
  //  * stopped_without_end: pods whose samples stop before the window's last sample with no
  //    recorded end (Telemetry::ended): they are taken as ended there, which may be wrong (a
  //    scrape that lost them); give kube_pod_completion_time or --pods to say.
  std::vector<std::size_t> unmeasured, above_current, stopped_without_end;
  // Servers that pre-allocate GPU memory, sized by their KV cache use (plan/preallocated.h);
  // set by the caller that sized them (their series in the plan's telemetry are the needs).
  Preallocation preallocated;
  Replay replay;                                     // one entry per co-location group, at packing_capacity_mib
  std::vector<double> collision_p_if_active;         // per group, with options.robust (memory_envelope.h)
  std::vector<double> memory_cap_mib;                // per pod, with options.memory_caps: whole MiB
  PlanTotals totals;
  std::vector<std::string> skipped;         // pods left out of the telemetry, with reasons
  std::vector<PodEnd> ended;                // pods whose samples after their end were dropped (Telemetry::ended)
  std::optional<TelemetryQueries> queries;  // how Prometheus was read (Telemetry::queries)
  // GPUs with memory used outside any pod, the capacity left for pods and the group placed
  // there (plan/reserved_gpus.h).
  std::vector<ReservedGpu> reserved_gpus;
  std::vector<ContainerProfile> containers;  // cAdvisor / kube-state-metrics, when the telemetry has them
  std::int64_t search_evaluations = 0;
  // With options.mig_isolation: the MIG plan for the same pods (their right-sizing need) but
  // the CPU-starved ones, its monthly cost (MIG GPUs plus one whole target GPU per pod too
  // big for any instance, plus one current GPU per starved pod) and the replay: pods whose
  // memory ever exceeds their instance's.
  std::optional<MigPlan> mig;
  double mig_usd_per_month = 0;
  int mig_pods_exceeding = 0;
  // With --pods (plan/workload_keys.h): each pod's workload key, same order as pod_names
  // (empty without), and the groups replayed with each workload's envelope at
  // packing_capacity_mib (whether the plan holds for any assignment of replicas to slots).
  std::vector<std::string> workload_of;
  std::optional<Replay> workload_replay;
  // Per pod (pod_names order): its replica set, kept apart from the others of the set
  // (PlanOptions::replicas_apart), or -1.
  std::vector<int> replica_set;
  std::size_t largest_replica_set = 0;  // the most packed replicas of one set: a lower bound on GPUs
  bool apart(const std::vector<std::size_t>& pods) const {
    for (std::size_t i = 0; i < pods.size(); ++i)
      for (std::size_t j = i + 1; j < pods.size(); ++j)
        if (pods[i] < replica_set.size() && pods[j] < replica_set.size() && replica_set[pods[i]] >= 0 &&
            replica_set[pods[i]] == replica_set[pods[j]])
          return false;
    return true;
  }
  // The recommended plan: every pod on the cheapest catalog model the rules allow
  // (plan/fleet_plan.h); the groups above are its same-model alternative.
  FleetPlan fleet;
  // Each workload's telemetry profile, for `gpufit serve --profiles` (plan/workload_profiles.h):
  // by workload_of's keys, or "pod/<namespace>/<name>" without --pods.
  WorkloadProfiles workload_profiles;

  // The multi-GPU pod a series (index into pod_names) belongs to, or null.
  const MultiGpuPod* multi_gpu_of(std::size_t pod) const {
    for (const MultiGpuPod& m : multi_gpu)
      if (std::find(m.series.begin(), m.series.end(), pod) != m.series.end()) return &m;
    return nullptr;
  }
  // Current GPUs a series stands for: 1, except that a multi-GPU pod's first series also
  // stands for its devices no series shows (devices - series), so its series add up to devices.
  std::size_t gpus_of(std::size_t pod) const {
    const MultiGpuPod* m = multi_gpu_of(pod);
    if (m == nullptr || m->series.empty() || m->series.front() != pod) return 1;
    const auto shown = static_cast<int>(m->series.size());
    return 1 + static_cast<std::size_t>(std::max(0, m->devices - shown));
  }
  // The pods (indices into pod_names) that keep their current GPU(s), alone: CPU-starved
  // pods, every series of a multi-GPU pod and unmeasured pods. Ascending.
  std::vector<std::size_t> kept_on_current_gpu() const {
    std::vector<std::size_t> pods;
    for (const CpuStarvation& s : cpu_starvation) pods.push_back(s.pod);
    for (const MultiGpuPod& m : multi_gpu) pods.insert(pods.end(), m.series.begin(), m.series.end());
    pods.insert(pods.end(), unmeasured.begin(), unmeasured.end());
    std::sort(pods.begin(), pods.end());
    pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
    return pods;
  }
  bool keeps_current_gpu(std::size_t pod) const {
    return multi_gpu_of(pod) != nullptr ||
           std::any_of(cpu_starvation.begin(), cpu_starvation.end(),
                       [&](const CpuStarvation& s) { return s.pod == pod; }) ||
           std::find(unmeasured.begin(), unmeasured.end(), pod) != unmeasured.end();
  }
  // The share of its current GPU each pod's device holds (BuildPlan, DeviceShare in plan.cpp:
  // a MIG instance of a known profile its compute slices over the GPU's, else 1), by pod;
  // what "before" and the kept pods are priced at.
  std::vector<double> device_share{};
  double share_of(std::size_t pod) const { return pod < device_share.size() ? device_share[pod] : 1.0; }
  // What a pod's device(s) cost per hour today: its own model's on-demand price x the GPUs it
  // stands for (gpus_of) x its device's share (share_of). The "before" of every total.
  double usd_per_hour_today(std::size_t pod) const {
    return current_gpu(pod).on_demand_per_gpu_hour.value * static_cast<double>(gpus_of(pod)) * share_of(pod);
  }
  // The current GPUs the kept pods hold (gpus_of each).
  std::size_t kept_gpus() const {
    std::size_t n = 0;
    for (std::size_t p : kept_on_current_gpu()) n += gpus_of(p);
    return n;
  }
};

// Errors: kNotFound for an unknown GPU id; kInvalidArgument for options out of range
// (each names the option); kFailedPrecondition for MIG isolation on a GPU without MIG;
// kInternal if the replay finds the packing unsafe (a bug).
Result<Plan> BuildPlan(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options,
                       const std::string& source);

}  // namespace gpufit

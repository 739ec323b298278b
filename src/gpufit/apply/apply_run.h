// `gpufit apply`: the changes of an emitted folder (change_set.h) put on a live cluster with
// guardrails, in waves, each watched for a soak period and reverted on a breach.
//
// Before anything (both modes):
//  * the plan must be of this cluster: each Deployment, StatefulSet and DaemonSet plan.json's
//    pods name (pods[].workload) and each object a patch targets must exist (kNotFound naming the
//    first missing one);
//  * only strategies whose backtest held (plan.json backtest.status.<strategy>.status == "held",
//    backtest/status.h) are applied: a change of another strategy refuses the whole run
//    (kFailedPrecondition naming the strategy, its verdict and its files);
//  * every change is sent with dryRun=All first: the server's answer against the live object
//    is the diff shown (object_diff.h), and a refusal there stops the run before any change.
// Without `yes` that is all (a dry run). With it:
//  * guardrails (guardrails.h): the kill switch and maintenance windows of the ConfigMap
//    gpufit-control, at most `max_runs_per_day` runs in 24 h (the history's ConfigMaps), at most
//    `max_changes` changes a run (the rest left for the next), the opt-out annotation, and a
//    workload whose PodDisruptionBudget allows no disruption now is left for the next run (a
//    rollout replaces its pods);
//  * waves: the canary wave holds the cluster objects the workloads need (ConfigMaps,
//    PriorityClasses, ...) and one workload per strategy (the first by file name) or the
//    workloads named in `canary`; the second wave holds the rest;
//  * each change by server-side apply (full objects: fieldManager=gpufit, force) or by the
//    patch the README names (strategic merge or merge, fieldManager=gpufit). GPU memory caps and
//    schedulers change the pod template: a rollout. (In-place resize, GA in Kubernetes 1.35,
//    covers cpu and memory only: none of the emitted changes qualifies.)
//  * after a wave with workloads, the soak: every `poll_s` for `soak_s`, the pods of the wave's
//    workloads (their spec.selector.matchLabels) are checked for OOMKilled containers,
//    restarts and pods stuck Pending, and, with env.gpu_memory_mib (Prometheus), for pods at
//    their GPU memory cap (soak.h). A breach reverts the wave (each change's undo,
//    last first) and stops the run: outcome kReverted;
//  * a refused change reverts its wave and stops the run: kFailedPrecondition (exit 2);
//  * the kill switch (and env.interrupted: SIGTERM, SIGINT) is read before every change and
//    every poll: the run stops at once, leaving what it applied (outcome kStopped; --revert RUN
//    undoes it);
//  * one run at a time per history namespace: a lock ConfigMap (gpufit-apply-lock), renewed at
//    every change and poll; a second run does nothing (kNothing, naming the run that holds it);
//    a lock not renewed for 3 minutes (a run killed outright) is taken over;
//  * history (history.h): the run's ConfigMap, written before the first change and after each;
//    an Event (reason GpufitApplied, GpufitReverted) on every object changed or reverted.
// The library reads no clock: `now`, `sleep` and `log` come from the caller.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/apply/change_set.h"
#include "gpufit/apply/guardrails.h"
#include "gpufit/apply/history.h"
#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kube_client.h"

namespace gpufit::apply {

struct ApplyOptions {
  std::string plan_path{};            // plan.json as given (errors, history)
  bool yes = false;                   // false: the dry-run diff only
  std::vector<std::string> canary{};  // workload keys "deployment/ns/name"; empty: one per strategy
  double soak_s = 600;                // watch after each wave, seconds
  double poll_s = 5;                  // between two looks at the pods
  double pending_s = 300;             // a pod Pending longer than this is a breach
  std::size_t max_changes = 20;       // per run
  std::size_t max_runs_per_day = 4;
  std::string history_namespace = "default";
  std::vector<MaintenanceWindow> windows{};  // added to the ConfigMap's
  std::string field_manager = "gpufit";
};

struct ApplyEnv {
  std::function<double()> now;                  // Unix seconds
  std::function<void(double)> sleep;            // seconds
  std::function<void(const std::string&)> log;  // one line of progress
  // Optional (empty: the soak reads the pods alone): GPU memory in use (MiB) per
  // "namespace/pod" of these namespaces, now; soak.h's MemoryAtCap compares it with the caps.
  std::function<Result<std::map<std::string, double>>(const std::vector<std::string>& namespaces)> gpu_memory_mib{};
  // Optional: "" to go on, or the signal that asks the run to stop ("SIGTERM"); read where the
  // kill switch is (before each change, at each poll): the run stops as the kill switch stops it.
  std::function<std::string()> interrupted{};
};

enum class ApplyOutcome {
  kDryRun,    // the diff was shown
  kApplied,   // every wave held its soak
  kNothing,   // a guardrail said not now (kill switch, window, runs per day, nothing to change)
  kReverted,  // a breach: the wave was reverted
  kStopped,   // the kill switch or a window stopped it between changes
};

struct ApplyResult {
  ApplyOutcome outcome = ApplyOutcome::kNothing;
  std::string run;                      // the run id ("" for a dry run)
  std::string summary;                  // one paragraph
  std::vector<std::string> diff;        // dry run: per change its header and diff lines
  std::vector<std::string> skipped;     // "FILE: why" of each change left alone (opt-out, PDB, caps, a Job's)
  double breach_s = 0, reverted_s = 0;  // kReverted: when the breach happened and when the revert ended
};

Result<ApplyResult> Apply(const kube_api::KubeClient& kube, const nlohmann::json& plan,
                          const std::vector<Change>& changes, const ApplyOptions& options, const ApplyEnv& env);

// Undoes every applied change of run `run` (its history ConfigMap), last first.
Result<ApplyResult> RevertRun(const kube_api::KubeClient& kube, const std::string& run, const ApplyOptions& options,
                              const ApplyEnv& env);

}  // namespace gpufit::apply

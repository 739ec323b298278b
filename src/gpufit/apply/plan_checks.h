// What `gpufit apply` checks before it changes anything (apply_run.h): that the plan is of
// this cluster, that its strategies held, and which workloads a disruption budget holds back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/apply/change_set.h"
#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kube_client.h"

namespace gpufit::apply {

// kFailedPrecondition naming the first strategy of `changes` (not counting kManual ones) whose
// plan.json verdict (backtest.status.<strategy>.status) is not "held", with its reason and files.
Result<void> CheckHeld(const nlohmann::json& plan, const std::vector<Change>& changes, const std::string& plan_path);

// kNotFound naming the first Deployment, StatefulSet or DaemonSet of plan.json's
// pods[].workload that the cluster does not have; other errors are the API server's.
Result<void> CheckWorkloads(const kube_api::KubeClient& kube, const nlohmann::json& plan, const std::string& plan_path);

// kInvalidArgument naming the first workload patch of the folder whose workload plan.json does
// not plan (pods[].workload: a folder of another plan, which the plan's backtest does not vouch
// for), or any workload patch when plan.json names no workload at all (planned from telemetry
// alone, it cannot show it is of this cluster).
Result<void> CheckFolderOfPlan(const nlohmann::json& plan, const std::vector<Change>& changes,
                               const std::string& plan_path);

// "" when no PodDisruptionBudget of the workload's namespace that selects its pods (by
// spec.selector.matchLabels against the live object's pod template labels) stands in the way;
// else why: "PodDisruptionBudget NAME allows no disruption now (...)" or "... has no status yet".
Result<std::string> BlockingPdb(const kube_api::KubeClient& kube, const ObjectRef& ref, const nlohmann::json& live);

}  // namespace gpufit::apply

// `gpufit replay`: re-checks a plan.json's groups against telemetry, sample by sample
// (plan/replay.h); exit 3 if unsafe.
//  * Without --pods, pods are matched by name and strictly: every plan pod must be in the
//    telemetry and every telemetry pod placed exactly once.
//  * With --pods PODS.json (kubectl get pods -A -o json of the replayed period), pods are
//    matched by workload (plan/workload_keys.h), so a plan made with `plan --pods` still
//    replays after a rollout renamed every pod. Each group's workload slots carry their
//    workload's envelope; workloads the plan does not know, and replicas beyond a workload's
//    planned slots, are listed as unplanned (they do not make the replay fail: the plan's
//    groups are judged on what they were planned to hold); planned workloads without a pod
//    now are listed as absent, their slots empty.
// Either way the limits come from the catalog and the plan's options, never from its
// derived fields: a plan cannot vouch for itself.
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

// Registers the command; its callback stores the exit code in `rc`.
void AddReplayCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli

// The history of `gpufit apply`: one ConfigMap per run, gpufit-apply-<RUN> in the history
// namespace, labelled app.kubernetes.io/managed-by=gpufit and gpufit.io/apply-run=<RUN>, whose
// data["run.json"] is the RunRecord below. It is written before the first change and after each
// one, so a run that dies half-way can still be undone with `gpufit apply --revert RUN`.
// (A ConfigMap holds at most 1 MiB: one per run keeps each far below it; the undo of a change is
// only the fields its patch touched, or the object it replaced.)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/apply/change_set.h"
#include "gpufit/core/result.h"

namespace gpufit::apply {

struct AppliedChange {
  std::string file;
  ObjectRef ref;
  std::string method;       // "patch" or "apply"
  std::string patch_type;   // "strategic", "merge" (patch) or "" (apply)
  int wave = 0;             // 0: the canary
  double applied_at_s = 0;  // Unix seconds; 0 until applied
  double reverted_at_s = 0;  // Unix seconds; 0 while it stands
  // How to undo it: "patch" -> `undo` is the inverse patch (object_diff.h); "replace" -> `undo`
  // is the object as it was (PUT back); "delete" -> the change created the object.
  std::string undo_kind;
  nlohmann::json undo;
  std::vector<std::string> diff;  // object_diff.h lines of the server's dry run
};

struct RunRecord {
  std::string run;  // "20261206t081500z": the start, UTC
  double started_s = 0;
  std::string plan;  // the plan.json it applied (path as given)
  // "applying", "applied", "reverted" (the soak saw a breach), "failed" (the API server refused
  // a change; its wave reverted), "stopped" (kill switch), "reverted by --revert".
  std::string state;
  std::string verdict;  // one sentence: what happened, with the figures
  std::vector<AppliedChange> changes;
  std::vector<std::string> skipped;  // "FILE: why" (opt-out, PDB, cap on changes, manual)
};

std::string RunConfigMapName(const std::string& run);
nlohmann::json RunConfigMap(const RunRecord& record, const std::string& ns);
// The record of a run's ConfigMap; kInvalidArgument naming `where` when it is not one.
Result<RunRecord> ReadRunConfigMap(const nlohmann::json& configmap, const std::string& where);

}  // namespace gpufit::apply

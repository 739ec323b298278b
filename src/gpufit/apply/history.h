// The history of `gpufit apply`: one ConfigMap per run, gpufit-apply-<RUN> in the history
// namespace, labelled app.kubernetes.io/managed-by=gpufit and gpufit.io/apply-run=<RUN>, whose
// data["run.json"] is the RunRecord below, sealed (history_seal.h). It is a journal: written
// before the first change, before each change (its intent) and after it (applied), so a run
// killed at any moment can still be undone with `gpufit apply --revert RUN`: a change intended
// but not marked applied is undone when the live object shows it took effect.
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
  std::string file{};
  ObjectRef ref{};
  std::string method{};      // "patch" or "apply"
  std::string patch_type{};  // "strategic", "merge" (patch) or "" (apply)
  int wave = 0;              // 0: the canary
  double intended_at_s = 0;  // Unix seconds: written just before the change is sent; 0 before
  double applied_at_s = 0;   // Unix seconds; 0 until applied
  double reverted_at_s = 0;  // Unix seconds; 0 while it stands
  // How to undo it: "patch" -> `undo` is the inverse patch (object_diff.h); "replace" -> `undo`
  // is the object as it was (PUT back); "delete" -> the change created the object.
  std::string undo_kind{};
  nlohmann::json undo{};
  // The change itself (the file's object): what --revert dry-runs to see whether an intended
  // change took effect.
  nlohmann::json body{};
  std::vector<std::string> diff{};  // object_diff.h lines of the server's dry run
};

struct RunRecord {
  std::string run;  // "20261206t081500z-k3f9a2": the start, UTC, and 6 random characters (history_seal.h)
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
// The run's ConfigMap, sealed with `key` (history_seal.h).
nlohmann::json RunConfigMap(const RunRecord& record, const std::string& ns, const std::string& key);
// The record of a run's ConfigMap. kInvalidArgument naming `where` when it is not one: no
// managed-by label, a seal that does not match under `key`, a name that is not its run's, or a
// change gpufit apply does not make (allow_list.h: CheckUndo).
Result<RunRecord> ReadRunConfigMap(const nlohmann::json& configmap, const std::string& where, const std::string& key);

}  // namespace gpufit::apply

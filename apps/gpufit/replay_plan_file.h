// The plan.json that `gpufit replay` checks a plan against: its fields read and checked.
//
// plan.json is untrusted input (it may be edited, or forged): it is parsed through
// core/json_input.h (nesting and size bounded). Every file that includes this header is
// built with JSON_DIAGNOSTICS=1 (apps/gpufit/CMakeLists.txt, fuzz/CMakeLists.txt; a mismatch
// fails to link, as the two json types differ), so a missing or mistyped field throws a
// json::exception whose text carries the field's JSON pointer; FieldError turns that into
// "groups[3].pods: type must be array, but is string". The readers below throw such
// exceptions (the caller catches them and names the file) or return errors naming
// `plan_path` and the field.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit::cli {

using nlohmann::json;

// What a replay checks against, from the catalog and the plan's options.
struct Limits {
  double capacity = 0;  // target memory - reserve, MiB
  double margin = 0;    // memory_envelope.margin_mib
  double share = 0;     // max_collision_share
};

Result<Limits> ReadLimits(const json& plan, const GpuCatalog& catalog, const std::string& plan_path);

// By name: every pod of the telemetry placed exactly once (groups, too_big_for_target,
// kept_on_current_gpu); the groups as telemetry pod indices.
Result<std::vector<std::vector<std::size_t>>> GroupsByName(const json& plan, const Telemetry& tel, const Limits& l,
                                                           const std::string& plan_path,
                                                           const std::string& telemetry_path);

// The plan's groups and own-GPU lists by workload (plans made with --pods).
Result<WorkloadPlan> ReadWorkloadPlan(const json& plan, const std::string& plan_path);

// A plan for a back end that caps memory (memory_envelope.memory_caps): each pod's cap, by
// pod name and by workload key (pods[].workload, with --pods). Throws json::exception.
struct Caps {
  std::map<std::string, double> by_pod, by_workload;
};
Result<std::optional<Caps>> ReadCaps(const json& plan, const std::string& plan_path);

// A json::exception's text with the field first, as above (at most 300 bytes, escaped).
std::string FieldError(const json::exception& e);

}  // namespace gpufit::cli

// The guardrails of `gpufit apply` that do not depend on the plan: the kill switch, maintenance
// windows, and the opt-out annotation.
//
// Kill switch and windows live in the ConfigMap `gpufit-control` of the history namespace
// (apply_run.h), which anyone with RBAC on that namespace can edit while a run is going:
//   data.stop: "true"                  -> every run stops before its next change, and a new run
//                                         does nothing (what was applied stays: undo it with
//                                         `gpufit apply --revert RUN`);
//   data.maintenance-windows: "Sat 02:00-06:00, * 12:00-12:30"
//                                      -> a run that starts inside a window does nothing, and a
//                                         run stops before a wave that would start inside one.
// Why a window stops gpufit rather than lets it act: during a node drain or an upgrade pods
// restart and go Pending for reasons of their own, which the soak would read as the change's
// fault (and revert), and a rollout would compete with the drain for the same disruptions.
// A window is "DAY HH:MM-HH:MM" in UTC, DAY one of Mon..Sun or * (every day); 24:00 ends a
// day; a window whose end is before its start runs past midnight.
// Opt-out: a workload (or its namespace) annotated gpufit.io/exclude is never changed, whatever
// the value but "false" (any case): a "True" or a typo fails safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::apply {

inline constexpr const char* kControlConfigMap = "gpufit-control";
inline constexpr const char* kExcludeAnnotation = "gpufit.io/exclude";

struct MaintenanceWindow {
  int weekday = -1;                // 0 = Sunday .. 6 = Saturday; -1 every day
  int start_min = 0, end_min = 0;  // minutes of the UTC day, end in (0, 1440]
  std::string text;                // as given
};

// kInvalidArgument naming the text when it is not "DAY HH:MM-HH:MM".
Result<MaintenanceWindow> ParseWindow(const std::string& text);
// Comma- or newline-separated windows.
Result<std::vector<MaintenanceWindow>> ParseWindows(const std::string& text);
// The first window that holds the instant `unix_s`, or null.
const MaintenanceWindow* WindowAt(const std::vector<MaintenanceWindow>& windows, double unix_s);

struct Control {
  bool stop = false;
  std::vector<MaintenanceWindow> windows;
};
// The ConfigMap's data (an absent ConfigMap is a default Control). `where` names it in errors.
Result<Control> ReadControl(const nlohmann::json& configmap, const std::string& where);

// Whether `object`'s metadata.annotations carry gpufit.io/exclude with a value other than "false".
bool Excluded(const nlohmann::json& object);

}  // namespace gpufit::apply

// The plan as one table for a terminal (gpufit plan and demo on a TTY, or -o table / -o wide):
// a line of the summary's strategies, then one row per pod of the plan, at most `width`
// display columns each, then the next commands to run.
//
// Source: the plan JSON of plan_writers.h (schema_version 1), read as follows:
//   WORKLOAD  pods[].workload, else pods[].pod
//   GPU       pods[].current_gpu.id (else current_gpu) → the model of the GPU that holds the
//             pod: the mixed fleet's fleet.shared_gpus[].model when fleet.recommended, else
//             groups[pods[].group].gpu_model
//   MEM CAP   pods[].right_sizing.required_mib (peak + learned margin), shown in GiB
//   SHARES    the other pods of that GPU (fleet.shared_gpus[].pods or groups[].pods)
//   $/MO SAVED  pods[].right_sizing.usd_per_month_current minus the pod's share of its GPU's
//             price per month: fleet.shared_gpus[].usd_per_month / its pods, or, on the
//             same-model plan, prices.target_gpu.usd_per_gpu_hour x 730 / the group's pods
//   VERDICT   summary.status.fleet.status (fleet) or summary.status.colocation.status; "keep"
//             for a pod in no GPU of the plan (too big for the target, kept on its GPU)
// Rows are sorted by $ saved, largest first (then by name), at most `max_rows` of them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::report {

struct TerminalTableOptions {
  std::size_t width = 120;        // display columns per line, at least 60
  bool colour = false;            // ANSI colours on the verdict and the header (never off a TTY)
  bool reasons = false;           // -v / -o wide: each row's right-sizing reason below it
  std::size_t max_rows = 25;      // rows shown; 0 = every pod
  std::vector<std::string> next;  // the next commands, one line each after the table
};

// One table row, as read from the plan JSON (see the header comment for the fields).
struct TerminalRow {
  std::string workload;
  std::string gpu_now, gpu_recommended;  // catalog ids; "" when the plan has none
  double cap_gib = -1;                   // < 0: unknown
  std::vector<std::string> shares_with;  // the other pods on its GPU
  double usd_saved_per_month = 0;
  bool priced = false;  // false: no price to compare ("-")
  std::string verdict;
  std::string reason;  // right_sizing.reason, for -v
};

// The rows of `plan_json`, sorted as shown. Errors: kInvalidArgument when the text is not a
// plan JSON object.
Result<std::vector<TerminalRow>> TerminalRows(const std::string& plan_json);

// The table (lines end in '\n'). Errors as TerminalRows.
Result<std::string> RenderTerminalTable(const std::string& plan_json, const TerminalTableOptions& o);

// Display columns of UTF-8 text: one per code point, ANSI colour escapes (ESC [ ... m) none.
std::size_t DisplayWidth(std::string_view utf8);

// `text` in at most `width` display columns: unchanged when it fits, else its start and its
// end around "…" (the end gets the odd column). width 0 gives "".
std::string ShortenMiddle(std::string_view text, std::size_t width);

}  // namespace gpufit::report

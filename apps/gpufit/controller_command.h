// `gpufit controller`: continuous mode (issue 42, docs/controller.md). Every --interval it
// makes the plan `gpufit plan` makes from the same flags (PlanInputsOf, RunPlanPipeline),
// writes it into --out atomically, compares the cluster with the previous plan
// (controller/drift.h), serves the plan, the drift and the runs on /metrics
// (controller/exposition.h, controller/metrics_endpoint.h) and POSTs a summary to --webhook
// (controller/webhook.h; a failed POST is logged, never fatal). --once: one run, no /metrics,
// then exit (a CronJob, a test).
// Exit codes: 0 (SIGTERM or SIGINT, or --once succeeded); 2 bad flags or a first run that
// failed on bad input (the error names it); 1 internal. Runs after the first that fail are
// logged, counted (gpufit_runs_total{outcome="failure"}) and retried at the next interval.
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

// Registers `controller`; its callback stores the exit code in `rc`.
void AddControllerCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli

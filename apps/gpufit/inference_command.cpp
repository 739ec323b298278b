#include "inference_command.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_app.h"
#include "cli_common.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/inference/walk_forward.h"
#include "gpufit/plan/inference_plan.h"

namespace gpufit::cli {

AutoscalerOptions AutoscalerFlags::Options() const {
  AutoscalerOptions o = options;
  o.kind = kind == "keda" ? AutoscalerKind::kKeda : AutoscalerKind::kHpa;
  return o;
}

void AddAutoscalerOptions(CLI::App* cmd, AutoscalerFlags& f) {
  cmd->add_option("--autoscaler", f.kind,
                  "the one autoscaler per service: hpa (HorizontalPodAutoscaler, default) or keda (KEDA ScaledObject "
                  "with gpufit's schedule as cron triggers)")
      ->check(CLI::IsMember({"hpa", "keda"}));
  cmd->add_option(
      "--keda-prometheus", f.options.keda_prometheus,
      "with --autoscaler keda: the Prometheus server KEDA queries (its prometheus trigger's serverAddress)");
  cmd->add_option("--keda-query", f.options.keda_query,
                  "with --autoscaler keda: PromQL for the service's requests per second; {namespace} and {deployment} "
                  "are replaced (default: " +
                      std::string(kDefaultKedaQuery) + ")");
}

ExtraOutput ManifestOutput(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  static constexpr const char* kList = ".gpufit-manifests";
  ExtraOutput out;
  std::string listing;
  std::vector<std::string> names;
  for (const auto& [name, text] : files) {
    out.files.emplace_back(std::filesystem::path(dir) / name, text);
    listing += name + "\n";
    names.push_back(name);
  }
  out.files.emplace_back(std::filesystem::path(dir) / kList, listing);
  // The previous run's listing is read once the folder is locked (Emit).
  out.removals_under_lock = [dir, names = std::move(names)] {
    std::vector<std::filesystem::path> removals;
    for (std::ifstream in(std::filesystem::path(dir) / kList); in;) {
      std::string name;
      if (std::getline(in, name) && !name.empty() && name.find('/') == std::string::npos &&
          std::find(names.begin(), names.end(), name) == names.end())
        removals.push_back(std::filesystem::path(dir) / name);
    }
    return removals;
  };
  return out;
}

namespace {

// gpufit inference backtest: the walk-forward backtest of gpufit's schedule and of a
// per-node model cache on a multi-day request log (inference/walk_forward.h).
void AddBacktestCommand(CLI::App* inference, int& rc) {
  struct Flags {
    std::string requests, gpu = "a100-80gb", slo_metric = "wait", catalog;
    WalkForwardOptions options;
    Output output;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = inference->add_subcommand(
      "backtest",
      "walk-forward backtest on a multi-day request log: fit gpufit's schedule on days 1..k, replay day k+1; "
      "static peak, clairvoyant and a per-node LRU model cache beside it");
  WalkForwardOptions& o = flags->options;
  cmd->add_option("--requests", flags->requests,
                  "request log: GenTD26 LoRA CSV (gmt_create, exec_time_seconds, checkpoint_model_version_id)")
      ->required();
  cmd->add_option("--gpu", flags->gpu, "GPU catalog id pricing the GPU-hours (default a100-80gb)");
  cmd->add_option("--catalog", flags->catalog, "GPU catalog YAML (default: the embedded data/gpu_catalog.yaml)");
  cmd->add_option("--slo-metric", flags->slo_metric, "what the SLO bounds: wait or latency (default wait)")
      ->check(CLI::IsMember({"wait", "latency"}));
  cmd->add_option("--slo-s", o.slo.seconds, "SLO bound, seconds (default 1)");
  cmd->add_option("--slo-target", o.slo.target, "share of each day's requests within the bound (default 0.99)");
  cmd->add_option("--window-s", o.window_s, "gpufit's decision window, seconds (default 600)");
  cmd->add_option("--cold-start-s", o.cold_start_s,
                  "replica start until it serves, seconds (default 22.718: GenTD26's median base-model load)");
  cmd->add_option("--first-fit-days", o.first_fit_days, "the first k: test days are k+1 .. the last (default 7)");
  cmd->add_option("--recent-days", o.recent_days, "fit days behind the schedule's base and growth (default 7)");
  cmd->add_option("--cache-models", o.cache_models,
                  "models per node in the LRU cache; 0 (default): the knee of the fit days' hit-rate curve");
  cmd->add_option("--model-load-s", o.model_load_s,
                  "seconds one model load takes, for the load time saved (default 22.718: GenTD26's median)");
  AddOutputOptions(cmd, flags->output);
  cmd->callback([flags, &rc] {
    flags->options.slo.metric = flags->slo_metric == "latency" ? SloMetric::kLatency : SloMetric::kWait;
    const Result<GpuCatalog> catalog = LoadCatalog(flags->catalog);
    if (!catalog) {
      rc = Fail(catalog.error());
      return;
    }
    const Result<GpuModel> gpu = catalog->Find(flags->gpu);
    if (!gpu) {
      rc = Fail(gpu.error());
      return;
    }
    flags->options.usd_per_gpu_hour = gpu->on_demand_per_gpu_hour.value;
    const Result<RequestLog> log = ReadLoraRequestTrace(flags->requests);
    if (!log) {
      rc = Fail(log.error());
      return;
    }
    const Result<WalkForwardResult> r = RunWalkForward(*log, flags->options);
    if (!r) {
      rc = Fail(r.error());
      return;
    }
    rc = Emit(flags->output, "backtest", WalkForwardToJson(*r), WalkForwardToMarkdown(*r));
    // A test day that missed the SLO is a schedule that did not hold: exit 3, as `backtest`.
    if (rc == 0 && !r->AllMet()) rc = 3;
  });
}

}  // namespace

void AddInferenceCommand(CLI::App& app, int& rc) {
  struct Flags {
    std::string services, manifests, catalog;
    AutoscalerFlags autoscaler;
    Output output;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("inference",
                         "replica schedules for inference services: static peak, HPA-like, gpufit and a clairvoyant "
                         "reference, replayed on each service's requests");
  cmd->add_option("--services", flags->services, "inference services YAML (see docs/inference.md)");
  AddDeprecatedAlias(cmd, "--manifests",
                     cmd->add_option("--emit-manifests", flags->manifests,
                                     "folder for each service's autoscaler YAML (see --autoscaler)"));
  AddAutoscalerOptions(cmd, flags->autoscaler);
  cmd->add_option("--catalog", flags->catalog, "GPU catalog YAML (default: the embedded data/gpu_catalog.yaml)");
  AddOutputOptions(cmd, flags->output, {"html"});
  AddBacktestCommand(cmd, rc);
  cmd->callback([flags, cmd, &rc] {
    if (!cmd->get_subcommands().empty()) return;  // `inference backtest` ran
    if (flags->services.empty()) {
      rc = Fail(InvalidArgument("inference: give --services FILE (or the subcommand backtest)"));
      return;
    }
    // Every output path is checked before anything is computed or written.
    if (Result<void> ok = CheckOutput(flags->output); !ok) {
      rc = Fail(ok.error());
      return;
    }
    if (!flags->manifests.empty())
      if (Result<void> ok = CheckOutputDir(flags->manifests, "--emit-manifests"); !ok) {
        rc = Fail(ok.error());
        return;
      }
    const Result<GpuCatalog> catalog = LoadCatalog(flags->catalog);
    if (!catalog) {
      rc = Fail(catalog.error());
      return;
    }
    const Result<InferenceSectionOutput> section =
        InferenceSection(flags->services, *catalog, flags->autoscaler.Options());
    if (!section) {
      rc = Fail(section.error());
      return;
    }
    ExtraOutput extra = flags->manifests.empty() ? ExtraOutput{} : ManifestOutput(flags->manifests, section->manifests);
    extra.report = ReportRequest{.command = "inference", .title = "gpufit inference", .source = flags->services};
    rc = Emit(flags->output, "inference", section->json, section->markdown, extra);
  });
}

}  // namespace gpufit::cli

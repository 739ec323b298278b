#include "controller_command.h"

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "apply_command.h"
#include "cli_common.h"
#include "gpufit/controller/drift.h"
#include "gpufit/controller/exposition.h"
#include "gpufit/controller/liveness.h"
#include "gpufit/controller/metrics_endpoint.h"
#include "gpufit/controller/plan_facts.h"
#include "gpufit/controller/webhook.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/ingest/kube/pod_ends.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/pipeline/plan_pipeline.h"
#include "inference_command.h"
#include "plan_command.h"
#include "telemetry_source.h"

namespace gpufit::cli {
namespace {

namespace fs = std::filesystem;
using controller::DriftReport;
using controller::PlanFacts;
using controller::RunRecord;

struct ControllerFlags {
  PlanFlags plan;
  std::string interval = "1h";
  std::string metrics_listen = "127.0.0.1:9464";
  controller::MetricsEndpointOptions metrics;  // host and port from metrics_listen
  std::string webhook;
  double webhook_timeout_s = 10;
  double peak_drift_tolerance = 0.2;
  bool once = false;
  bool apply = false;  // after each run, gpufit apply --yes of --emit-manifests (apply_command.h)
  double apply_soak_s = 600;
  std::string apply_history_namespace = "default";
};

void ControllerLog(const std::string& line) { std::fprintf(stderr, "gpufit controller: %s\n", line.c_str()); }

// "host:port" or "[v6]:port".
Result<void> ParseMetricsListen(const std::string& listen, controller::MetricsEndpointOptions& o) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return InvalidArgument("--metrics-listen {}: give ADDRESS:PORT, e.g. 127.0.0.1:9464 or 0.0.0.0:9464", listen);
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    std::size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535)
    return InvalidArgument("--metrics-listen {}: the port must be 0-65535, got {}", listen, listen.substr(colon + 1));
  o.host = host;
  o.port = port;
  return {};
}

// What the controller keeps between runs and /metrics reads.
struct ControllerState {
  std::mutex mu;
  std::optional<PlanFacts> plan;
  std::optional<DriftReport> drift;
  RunRecord runs;

  std::string Text() {
    const std::lock_guard lock(mu);
    return controller::MetricsText(plan ? &*plan : nullptr, drift ? &*drift : nullptr, runs);
  }
};

struct ControllerRun {
  PlanFacts facts;
  DriftReport drift;
  std::string source;
};

// One run: the plan from the flags as `plan` makes it, written into --out, and its drift
// from `previous` (the last plan; null: this plan itself, so the first run judges only the
// recent window against what it just planned).
Result<ControllerRun> RunControllerOnce(const ControllerFlags& flags, const PlanFacts* previous, double interval_s) {
  PlanFlags f = flags.plan;  // each run reads the cluster and the telemetry afresh
  if (f.model_gib_flag != nullptr && f.model_gib_flag->count() > 0) f.model_loading.model_gib = f.model_gib;
  const bool cluster = f.kube.given() || !f.nodes.empty() || !f.pods.empty();
  if (cluster)
    if (Result<void> ok = ReadClusterInputs(f); !ok) return ok.error();
  if (!f.telemetry.given() && f.kube.given())
    if (Result<void> ok = DiscoverPrometheus(f.telemetry, f.kube, NowSeconds()); !ok) return ok.error();
  std::optional<Telemetry> telemetry;
  std::string source = f.training_jobs.empty() ? f.inference : f.training_jobs;
  if (f.telemetry.given()) {
    if (f.kube_pods) f.telemetry.ends = PodEndsFromKubePods(*f.kube_pods);
    Result<Telemetry> tel = LoadTelemetry(f.telemetry, NowSeconds());
    if (!tel) return tel.error();
    telemetry = std::move(*tel);
    source = f.telemetry.name;
  }
  pipeline::PlanInputs in = PlanInputsOf(f, telemetry ? &*telemetry : nullptr, source);
  in.phase = nullptr;  // a long-running process: no progress lines
  in.want_csv = false;
  in.want_report_series = false;
  Result<pipeline::PlanDocument> doc = pipeline::RunPlanPipeline(std::move(in));
  if (!doc) return doc.error();
  Result<PlanFacts> facts = controller::ReadPlanFacts(doc->json, "the plan");
  if (!facts) return facts.error();
  if (!f.output.out_dir.empty() || !f.manifests.empty()) {
    ExtraOutput extra;
    if (!f.manifests.empty()) extra = ManifestOutput(f.manifests, doc->manifest_files);
    std::vector<std::pair<fs::path, std::string>> files = std::move(extra.files);
    if (!f.output.out_dir.empty()) {
      files.emplace_back(fs::path(f.output.out_dir) / "plan.json", doc->json);
      files.emplace_back(fs::path(f.output.out_dir) / "plan.md", doc->markdown);
    }
    for (const auto& [path, text] : files) {  // --out and --emit-manifests, made as plan makes them
      std::error_code ec;
      if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
      if (ec) return InvalidArgument("{}: cannot create the directory: {}", path.parent_path().string(), ec.message());
    }
    if (Result<void> ok = WriteFilesAtomically(files, extra.removals); !ok) return ok.error();
  }
  std::vector<std::string> observed;
  for (const controller::WorkloadFacts& w : facts->workloads) observed.push_back(w.workload);
  const std::map<std::string, double> recent =
      telemetry ? controller::RecentPeaks(*telemetry, interval_s) : std::map<std::string, double>{};
  DriftReport drift = controller::FindDrift(previous ? *previous : *facts, recent, observed,
                                            {.peak_drift_tolerance = flags.peak_drift_tolerance});
  return ControllerRun{.facts = std::move(*facts), .drift = std::move(drift), .source = source};
}

// The last plan an earlier controller or `plan --out` left in --out, if any and readable.
std::optional<PlanFacts> EarlierPlanFacts(const std::string& out_dir) {
  if (out_dir.empty()) return std::nullopt;
  const fs::path path = fs::path(out_dir) / "plan.json";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  Result<PlanFacts> facts = controller::ReadPlanFacts(text.str(), path.string());
  if (!facts) {
    ControllerLog("the earlier plan is not used: " + facts.error().message);
    return std::nullopt;
  }
  return std::move(*facts);
}

int RunController(ControllerFlags& flags, const CLI::App& cmd) {
  const Result<double> interval_s = ParsePrometheusDuration(flags.interval);
  if (!interval_s) return Fail(InvalidArgument("--interval {}: {}", flags.interval, interval_s.error().message));
  if (*interval_s < 1) return Fail(InvalidArgument("--interval {}: must be at least 1s", flags.interval));
  if (!(flags.peak_drift_tolerance >= 0))
    return Fail(InvalidArgument("--peak-drift-tolerance must be >= 0, got {}", flags.peak_drift_tolerance));
  if (!(flags.webhook_timeout_s > 0 && flags.webhook_timeout_s <= 60))
    return Fail(InvalidArgument("--webhook-timeout must be in (0, 60] seconds, got {}", flags.webhook_timeout_s));
  std::optional<controller::WebhookUrl> webhook;
  if (!flags.webhook.empty()) {
    Result<controller::WebhookUrl> url = controller::ParseWebhookUrl(flags.webhook);
    if (!url) return Fail(url.error());
    webhook = *url;
  }
  if (Result<void> ok = CheckPlanOutputs(flags.plan); !ok) return Fail(ok.error());
  if (flags.apply && (flags.plan.manifests.empty() || flags.plan.output.out_dir.empty() || !flags.plan.kube.given()))
    return Fail(InvalidArgument(
        "--apply needs --emit-manifests DIR and --out DIR (what it applies) and the cluster (--kubeconfig)"));
  if (const std::string flag = UnusedPrometheusFlag(cmd, flags.plan.telemetry);
      !flag.empty() && !flags.plan.kube.given())
    return Fail(InvalidArgument("{} requires --prometheus, or a kubeconfig to find the cluster's Prometheus", flag));
  if (!flags.plan.telemetry.given() && !flags.plan.kube.given() && flags.plan.training_jobs.empty() &&
      flags.plan.inference.empty() && flags.plan.pods.empty())
    return Fail(InvalidArgument(
        "controller: give what `plan` plans from: --telemetry or --prometheus, --kubeconfig, --training-jobs, "
        "--inference or --pods"));

  // SIGTERM and SIGINT are waited for below; blocked before any thread starts, so that none
  // of the endpoint's threads takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ControllerState state;
  std::unique_ptr<controller::MetricsEndpoint> endpoint;
  if (!flags.once) {
    if (Result<void> ok = ParseMetricsListen(flags.metrics_listen, flags.metrics); !ok) return Fail(ok.error());
    // /healthz fails when no run finished for longer than a loop may take (controller/liveness.h).
    const controller::LivenessBudget budget{.interval_s = *interval_s,
                                            .apply_soak_s = flags.apply ? flags.apply_soak_s : 0,
                                            .webhook_timeout_s = webhook ? flags.webhook_timeout_s : 0};
    const double started = NowSeconds();
    endpoint = std::make_unique<controller::MetricsEndpoint>(
        flags.metrics, [&state] { return state.Text(); },
        [&state, budget, started] {
          const std::lock_guard lock(state.mu);
          return controller::Unhealthy(NowSeconds(), std::max(started, state.runs.finished_unix_s), budget);
        });
    if (Result<void> ok = endpoint->Start(); !ok) return Fail(ok.error());
    ControllerLog(fmt::format("/metrics on {}://{}:{}", flags.metrics.tls_cert_file.empty() ? "http" : "https",
                              flags.metrics.host, endpoint->port()));
  }
  std::optional<PlanFacts> previous = EarlierPlanFacts(flags.plan.output.out_dir);
  for (int run = 1;; ++run) {
    const auto start = std::chrono::steady_clock::now();
    Result<ControllerRun> result = RunControllerOnce(flags, previous ? &*previous : nullptr, *interval_s);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RunRecord runs;
    {
      const std::lock_guard lock(state.mu);
      state.runs.success = result.has_value();
      state.runs.finished_unix_s = NowSeconds();
      state.runs.duration_s = took;
      state.runs.error = result ? "" : result.error().message;
      if (result) {
        ++state.runs.successes;
        state.runs.last_success_unix_s = state.runs.finished_unix_s;
        state.plan = result->facts;
        state.drift = result->drift;
      } else {
        ++state.runs.failures;
      }
      runs = state.runs;
    }
    if (result) {
      ControllerLog(
          fmt::format("run {}: {} -> {} GPUs, ${:.0f}/month saved, {} workloads; drift: {} pods over their envelope, "
                      "{} new workloads, {} peaks drifted; {:.1f} s",
                      run, result->facts.gpus_before, result->facts.gpus_after, result->facts.usd_per_month_saved,
                      result->facts.workloads.size(), result->drift.over_envelope.size(),
                      result->drift.new_workloads.size(), result->drift.drifted(), took));
    } else {
      ControllerLog(fmt::format("run {} failed: {}", run, result.error().message));
    }
    // --apply: the run's folder on the cluster, with apply's guardrails, waves and soak.
    int apply_code = 0;
    if (result && flags.apply) {
      ApplyRequest request{.plan = (fs::path(flags.plan.output.out_dir) / "plan.json").string(),
                           .manifests = flags.plan.manifests,
                           .kube = flags.plan.kube,
                           .log = [](const std::string& line) { ControllerLog("apply: " + line); }};
      request.options.yes = true;
      request.options.soak_s = flags.apply_soak_s;
      request.options.history_namespace = flags.apply_history_namespace;
      Result<apply::ApplyResult> applied = ApplyFolder(request);
      if (!applied) {
        ControllerLog("apply failed: " + applied.error().message);
        apply_code = ExitCodeFor(applied.error().code);
      } else {
        ControllerLog(
            fmt::format("apply: {}{}", applied->run.empty() ? "" : "run " + applied->run + ": ", applied->summary));
        apply_code = ApplyExitCode(*applied);
      }
      if (ApplyStoppedBySignal()) {  // the soak took SIGTERM or SIGINT: the controller stops too
        ControllerLog("stopping on a signal during apply");
        endpoint.reset();
        return apply_code;
      }
    }
    if (webhook) {
      const std::string payload =
          controller::WebhookPayload(result ? &result->facts : nullptr, result ? &result->drift : nullptr, runs,
                                     result ? result->source : flags.plan.telemetry.name);
      // Cut at once by SIGTERM or SIGINT (blocked, so pending): the wait below then takes it.
      if (Result<void> sent = controller::PostWebhook(*webhook, payload, flags.webhook_timeout_s, ApplyStoppedBySignal);
          !sent)
        ControllerLog("warning: the webhook was not delivered (the run goes on): " + sent.error().message);
    }
    // Bad input fails the first run (or the only one) at once; later failures may pass.
    if (!result && (run == 1 || flags.once)) return Fail(result.error());
    if (flags.once) return apply_code;
    if (result) previous = std::move(result->facts);
    const double wait_s = std::max(0.0, *interval_s - took);
    timespec tick{.tv_sec = static_cast<time_t>(wait_s),
                  .tv_nsec = static_cast<long>((wait_s - static_cast<double>(static_cast<time_t>(wait_s))) * 1e9)};
    const int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGTERM || sig == SIGINT) {
      ControllerLog(fmt::format("stopping on {}", sig == SIGTERM ? "SIGTERM" : "SIGINT"));
      endpoint.reset();
      return 0;
    }
  }
}

}  // namespace

void AddControllerCommand(CLI::App& app, int& rc) {
  auto flags = std::make_shared<ControllerFlags>();
  CLI::App* cmd = app.add_subcommand(
      "controller", "re-plan on a schedule, watch the cluster drift from the plan, export /metrics and a webhook");
  AddPlanOptions(cmd, flags->plan, true, {});
  flags->plan.output.command = "controller";
  cmd->add_option("--interval", flags->interval, "time between runs (Prometheus duration: 30m, 1h, 1d)")
      ->capture_default_str();
  cmd->add_option("--metrics-listen", flags->metrics_listen, "ADDRESS:PORT of /metrics and /healthz (port 0: any)")
      ->capture_default_str();
  cmd->add_option("--metrics-tls-cert-file", flags->metrics.tls_cert_file,
                  "/metrics over HTTPS: certificate chain, PEM");
  cmd->add_option("--metrics-tls-key-file", flags->metrics.tls_key_file, "its private key, PEM");
  cmd->add_option("--metrics-auth-token-file", flags->metrics.auth_token_file,
                  "file holding the bearer token /metrics requires (HTTPS only; re-read when it changes)");
  cmd->add_flag("--metrics-insecure-http", flags->metrics.insecure_http,
                "/metrics over plain HTTP without authentication, on a loopback address only");
  cmd->add_option("--webhook", flags->webhook,
                  "Slack-compatible incoming webhook URL: a summary is POSTed after each run (https; http to "
                  "loopback only); a failure is logged, never fatal");
  cmd->add_option("--webhook-timeout", flags->webhook_timeout_s, "seconds for the whole POST: connect, TLS, request and answer")
      ->capture_default_str();
  cmd->add_option("--peak-drift-tolerance", flags->peak_drift_tolerance,
                  "a workload's recent peak above its fitted peak x (1 + this) counts as drift")
      ->capture_default_str();
  cmd->add_flag("--once", flags->once, "one run, then exit (no /metrics): for a CronJob");
  cmd->add_flag("--apply", flags->apply,
                "after each run, apply its --emit-manifests folder to the cluster as gpufit apply --yes does (dry run, "
                "guardrails, canary, soak, revert on a breach; with --once its exit code)");
  cmd->add_option("--apply-soak", flags->apply_soak_s, "--apply: seconds to watch each wave's pods")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--apply-history-namespace", flags->apply_history_namespace,
                  "--apply: namespace of the run history and of the gpufit-control ConfigMap (kill switch, windows)")
      ->capture_default_str();
  cmd->callback([flags, cmd, &rc] { rc = RunController(*flags, *cmd); });
}

}  // namespace gpufit::cli

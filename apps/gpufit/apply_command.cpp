#include "apply_command.h"

#include <fmt/format.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_common.h"
#include "gpufit/apply/apply_run.h"
#include "gpufit/apply/change_set.h"
#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/kube_api/kube_client.h"
#include "gpufit/ingest/kube_api/kubeconfig.h"
#include "gpufit/ingest/prometheus/client.h"
#include "kube_source.h"
#include "telemetry_source.h"

namespace gpufit::cli {

namespace {

struct ApplyFlags {
  ApplyRequest request;
  std::string canary;
  std::vector<std::string> windows;
};

// SIGTERM or SIGINT, once one asked a run to stop (sigtimedwait in the soak's sleep took it).
std::atomic<int> stop_signal{0};

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

// "SIGTERM", "SIGINT" or "": a signal taken during a sleep, or one pending (blocked) now.
std::string PendingStopSignal() {
  int signal = stop_signal.load();
  if (signal == 0) {
    sigset_t pending;
    sigpending(&pending);
    signal = sigismember(&pending, SIGTERM) ? SIGTERM : sigismember(&pending, SIGINT) ? SIGINT : 0;
  }
  return signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "";
}

// Sleeps `s` seconds, or less when SIGTERM or SIGINT (blocked by the caller) arrives.
void SleepUnlessSignalled(double s) {
  const sigset_t set = StopSignals();
  timespec wait{.tv_sec = static_cast<time_t>(s),
                .tv_nsec = static_cast<long>((s - static_cast<double>(static_cast<time_t>(s))) * 1e9)};
  if (const int signal = sigtimedwait(&set, nullptr, &wait); signal > 0) stop_signal = signal;
}

// The largest GPU memory in use of each pod of `namespaces` over the last minute, from the
// Prometheus at `url`, as gpufit plan reads it (DCGM_FI_DEV_FB_USED, MiB, by dcgm-exporter's
// namespace and pod labels).
Result<std::map<std::string, double>> GpuMemoryInUse(const std::string& url,
                                                     const std::vector<std::string>& namespaces) {
  std::string matcher;
  for (const std::string& ns : namespaces) matcher += (matcher.empty() ? "" : "|") + ns;
  const double now = NowSeconds();
  PrometheusOptions prometheus;
  prometheus.url = url;
  prometheus.timeout_s = 10;
  prometheus.retries = 0;
  Result<std::vector<PromSeries>> series =
      QueryRange(prometheus,
                 {.query = fmt::format(
                      "max by (namespace, pod) (max_over_time(DCGM_FI_DEV_FB_USED{{namespace=~\"{}\"}}[1m]))", matcher),
                  .start_s = now,
                  .end_s = now,
                  .step_s = 15});
  if (!series) return series.error();
  std::map<std::string, double> used;
  for (const PromSeries& s : *series)
    if (!s.value.empty() && s.labels.contains("namespace") && s.labels.contains("pod"))
      used[s.labels.at("namespace") + "/" + s.labels.at("pod")] = s.value.back();
  return used;
}

int Run(ApplyFlags& f) {
  for (const std::string& w : f.windows) {
    Result<std::vector<apply::MaintenanceWindow>> parsed = apply::ParseWindows(w);
    if (!parsed) return Fail(InvalidArgument("--maintenance-window: {}", parsed.error().message));
    f.request.options.windows.insert(f.request.options.windows.end(), parsed->begin(), parsed->end());
  }
  std::stringstream canary(f.canary);
  for (std::string key; std::getline(canary, key, ',');)
    if (!key.empty()) f.request.options.canary.push_back(key);
  f.request.log = [](const std::string& line) {
    if (!Quiet()) std::fprintf(stderr, "%s: %s\n", ProgramName().c_str(), line.c_str());
  };
  // SIGTERM and SIGINT stop the run where the kill switch would (its state recorded, what was
  // applied left as it is), not in the middle of a change: blocked here, taken by the soak's
  // sleep or seen pending at each change and poll.
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  Result<apply::ApplyResult> result = ApplyFolder(f.request);
  if (!result) return Fail(result.error());
  for (const std::string& line : result->diff) std::printf("%s\n", line.c_str());
  for (const std::string& line : result->skipped) std::printf("skipped: %s\n", line.c_str());
  std::printf("%s%s\n", result->run.empty() ? "" : fmt::format("run {}: ", result->run).c_str(),
              result->summary.c_str());
  return ApplyExitCode(*result);
}

}  // namespace

Result<apply::ApplyResult> ApplyFolder(const ApplyRequest& r) {
  // The files first: a bad plan or folder is said before any cluster is reached.
  nlohmann::json plan;
  std::vector<apply::Change> changes;
  apply::ApplyOptions options = r.options;
  if (r.revert.empty()) {
    if (r.plan.empty() || r.manifests.empty())
      return InvalidArgument(
          "apply: give PLAN.json and --manifests DIR (the folder plan --emit-manifests wrote), or --revert RUN");
    std::ifstream in(r.plan);
    if (!in) return NotFound("{}: cannot read it", r.plan);
    try {
      plan = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgument("{}: not JSON: {}", r.plan, e.what());
    }
    if (Result<void> ok = apply::CheckPlanJson(plan, r.plan); !ok) return ok.error();
    Result<std::vector<apply::Change>> read = apply::ReadChanges(r.manifests, plan);
    if (!read) return read.error();
    changes = std::move(*read);
    options.plan_path = r.plan;
  } else if (!r.plan.empty() || !r.manifests.empty()) {
    return InvalidArgument("apply --revert RUN takes no plan nor --manifests: the run's history holds what to undo");
  }
  Result<kube_api::KubeConnection> conn = kube_api::ResolveKubeconfig(
      {.path = r.kube.kubeconfig, .context = r.kube.context}, kube_api::KubeEnvironment::FromProcess());
  if (!conn) return conn.error();
  Result<kube_api::KubeClient> kube = kube_api::KubeClient::Make(*conn);
  if (!kube) return kube.error();
  apply::ApplyEnv env{
      .now = NowSeconds, .sleep = SleepUnlessSignalled, .log = r.log ? r.log : [](const std::string&) {}};
  env.interrupted = PendingStopSignal;
  if (!r.prometheus.empty())
    env.gpu_memory_mib = [url = r.prometheus](const std::vector<std::string>& namespaces) {
      return GpuMemoryInUse(url, namespaces);
    };
  return r.revert.empty() ? apply::Apply(*kube, plan, changes, options, env)
                          : apply::RevertRun(*kube, r.revert, options, env);
}

bool ApplyStoppedBySignal() { return !PendingStopSignal().empty(); }

int ApplyExitCode(const apply::ApplyResult& result) {
  switch (result.outcome) {
    case apply::ApplyOutcome::kReverted:
      return 3;
    case apply::ApplyOutcome::kStopped:
      return 4;
    default:
      return 0;
  }
}

void AddApplyCommand(CLI::App& app, int& rc) {
  auto f = std::make_shared<ApplyFlags>();
  CLI::App* cmd = app.add_subcommand(
      "apply",
      "apply a plan's manifests to the live cluster: a dry-run diff, or with --yes canary and waves, each "
      "watched for a soak period and reverted on OOMKilled, restarts or Pending pods");
  cmd->add_option("plan", f->request.plan, "the plan.json the manifests came from (its backtest must have held)")
      ->type_name("PLAN.json");
  cmd->add_option("--manifests", f->request.manifests, "the folder gpufit plan --emit-manifests wrote")
      ->type_name("DIR");
  AddKubeApiOptions(cmd, f->request.kube);
  cmd->get_option("--kubeconfig")
      ->description(
          "the cluster to change ('in-cluster': the pod's service account; default: $KUBECONFIG, "
          "~/.kube/config, else the pod's service account)");
  cmd->add_flag("--yes", f->request.options.yes,
                "apply (without it: the server's dry-run diff of every object, nothing changed)");
  cmd->add_option("--canary", f->canary,
                  "workloads of the first wave, comma-separated kind/namespace/name (default: one per strategy)");
  cmd->add_option("--soak", f->request.options.soak_s, "seconds to watch each wave's pods before the next")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--poll", f->request.options.poll_s, "seconds between two looks at the pods during the soak")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  cmd->add_option("--pending-timeout", f->request.options.pending_s,
                  "seconds a pod may stay Pending before it is a breach")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--max-changes", f->request.options.max_changes, "changes per run; the rest wait for the next run")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--max-runs-per-day", f->request.options.max_runs_per_day,
                  "runs that apply in 24 h, from the history")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--history-namespace", f->request.options.history_namespace,
                  "namespace of the run history ConfigMaps and of the gpufit-control ConfigMap (kill switch, windows)")
      ->capture_default_str();
  cmd->add_option("--maintenance-window", f->windows,
                  "'DAY HH:MM-HH:MM' UTC (DAY Mon..Sun or *) when gpufit changes nothing; repeatable");
  cmd->add_option(
         "--prometheus", f->request.prometheus,
         "during the soak also read each pod's GPU memory in use (DCGM_FI_DEV_FB_USED) from this Prometheus: a "
         "pod at its nvidia.com/gpumem cap is a breach")
      ->type_name("URL");
  cmd->add_option("--revert", f->request.revert, "undo every change of the run RUN (its id is printed by apply)")
      ->type_name("RUN");
  cmd->footer(
      "EXAMPLES:\n"
      "  gpufit plan --emit-manifests k8s --out out          # plan.json in out/, manifests in k8s/\n"
      "  gpufit apply out/plan.json --manifests k8s           # the server's diff, nothing changed\n"
      "  gpufit apply out/plan.json --manifests k8s --yes     # canary, soak, then the rest\n"
      "  kubectl patch configmap gpufit-control -n default --type merge -p '{\"data\":{\"stop\":\"true\"}}'  # kill "
      "switch\n"
      "  gpufit apply --revert 20261206t081500z-k3f9a2        # undo a run");
  cmd->callback([f, &rc] { rc = Run(*f); });
}

}  // namespace gpufit::cli

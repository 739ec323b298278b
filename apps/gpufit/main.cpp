// gpufit: the command line. A thin shell: parse, call the library, print.
// Exit codes: 0 success, 2 bad input or usage, 1 internal error.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apply_command.h"
#include "cli_app.h"
#include "cli_common.h"
#include "controller_command.h"
#include "demo_cluster.h"
#include "gpufit/analyze/profile.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/ingest/kube_api/kubeconfig.h"
#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/plan/plan_writers.h"
#include "inference_command.h"
#include "mig_command.h"
#include "plan_command.h"
#include "progress.h"
#include "replay_command.h"
#include "serve_command.h"
#include "simulate_command.h"
#include "telemetry_source.h"
#include "training_command.h"

namespace {

using namespace gpufit;

using cli::AddOutputOptions;
using cli::AddPlanOptions;
using cli::CheckPlanOutputs;
using cli::Emit;
using cli::Fail;
using cli::Output;
using cli::PlanFlags;
using cli::RunBacktestCommand;
using cli::RunPlan;

}  // namespace

int main(int argc, char** argv) {
  // A server closing the connection mid-request must be an error, not a silent exit.
  std::signal(SIGPIPE, SIG_IGN);
  // A write past the file-size limit (ulimit -f) must fail with EFBIG, an error naming the
  // file (WriteFilesAtomically), not kill the run half-way.
  std::signal(SIGXFSZ, SIG_IGN);
  cli::SetProgramNameFromArgv0(argc > 0 ? argv[0] : nullptr);
  CLI::App app{"gpufit: right-size and co-locate GPU workloads from their real telemetry", cli::ProgramName()};
  app.require_subcommand(1);
  cli::GlobalFlags global;
  cli::AddGlobalOptions(app, global);  // before the commands: they inherit fallthrough

  cli::TelemetrySource analyze_telemetry;
  Output analyze_out;
  CLI::App* analyze = app.add_subcommand("analyze", "per-pod GPU memory and duty-cycle profiles, idle share and waste");
  cli::AddTelemetrySourceOptions(analyze, analyze_telemetry);
  AddOutputOptions(analyze, analyze_out);

  PlanFlags plan_flags;
  CLI::App* plan = app.add_subcommand("plan", "right-size and co-locate pods, verified by replay (the main job)");
  AddPlanOptions(plan, plan_flags, true, {"csv", "html", "table"});
  plan_flags.output.command = "plan";

  PlanFlags demo_flags;
  demo_flags.options.target_gpu = "h100-80gb";
  // Four days of synthetic telemetry: the backtest then fits on whole days and tests on the
  // next (day 1 -> 2, 1-2 -> 3, 1-3 -> 4), the path a new user's verdicts come from
  // (backtest/status.h: under two days every verdict is provisional).
  SyntheticOptions synthetic{.samples = 4 * 24 * 60};
  CLI::App* demo = app.add_subcommand("demo", "plan on a built-in synthetic cluster (no files, no network)");
  demo_flags.report_command = "demo";
  AddPlanOptions(demo, demo_flags, false, {"csv", "html", "table"});
  demo_flags.output.command = "demo";
  cli::AddDeprecatedAlias(
      demo, "--pods",
      demo->add_option("--pod-count", synthetic.pods, "pods in the synthetic cluster")->check(CLI::Range(1, 100000)));
  demo->add_option("--demo-seed", synthetic.seed, "seed of the synthetic cluster")->check(cli::SeedCheck());

  PlanFlags backtest_flags;
  std::vector<double> backtest_risks{0, 0.01, 0.05, 0.1, 0.25};
  CLI::App* backtest = app.add_subcommand(
      "backtest",
      "plan on earlier telemetry, replay later telemetry (walk-forward); exit 3 if a strategy did not hold, 4 if the "
      "co-location was not tested");
  cli::AddTelemetrySourceOptions(backtest, backtest_flags.telemetry);
  AddPlanOptions(backtest, backtest_flags, false, {});
  backtest->add_option("--risks", backtest_risks, "memory risks of the trade-off curve (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();

  cli::GroupPlanHelp(plan, cli::kPlanExamples);
  cli::GroupPlanHelp(demo, cli::kDemoExamples);
  cli::GroupPlanHelp(backtest, cli::kBacktestExamples);

  int rc = 0;
  cli::AddReplayCommand(app, rc);
  cli::AddSimulateCommand(app, rc);
  cli::AddMigCommand(app, rc);
  cli::AddServeCommand(app, rc);
  cli::AddControllerCommand(app, rc);
  cli::AddTrainingCommand(app, rc);
  cli::AddInferenceCommand(app, rc);
  cli::AddApplyCommand(app, rc);
  cli::AddCompletionCommand(app, rc);

  // Each command runs from its callback, during parse, once its options are read.
  analyze->callback([&] {
    if (!analyze_telemetry.given()) {
      rc = Fail(InvalidArgument("analyze: give --telemetry or --prometheus"));
      return;
    }
    const Result<Telemetry> tel = cli::LoadTelemetry(analyze_telemetry, cli::NowSeconds());
    if (!tel) {
      rc = Fail(tel.error());
      return;
    }
    const std::vector<PodProfile> profiles = ProfileAll(*tel);
    const std::vector<ContainerProfile> containers = ProfileContainers(*tel);
    rc = Emit(analyze_out, "analyze",
              ProfilesToJson(profiles, containers, tel->skipped, analyze_telemetry.name, tel->step_s),
              ProfilesToMarkdown(profiles, containers, tel->skipped, analyze_telemetry.name));
  });
  plan->callback([&] {
    const bool no_input = !plan_flags.telemetry.given() && plan_flags.training_jobs.empty() &&
                          plan_flags.inference.empty() && plan_flags.pods.empty();
    if (no_input && !plan_flags.kube.given() &&
        (!plan_flags.nodes.empty() || !cli::UseDefaultKubeconfig(plan_flags.kube))) {
      // What the kubeconfig's resolution tried ("no kubeconfig: tried ..."), in its own words.
      const Result<kube_api::KubeConnection> none =
          kube_api::ResolveKubeconfig({}, kube_api::KubeEnvironment::FromProcess());
      rc = Fail(InvalidArgument(
          "plan: give --telemetry or --prometheus, --training-jobs, --inference, --pods (or --kubeconfig: {}), or "
          "several",
          none ? "none found" : none.error().message));
      return;
    }
    // The nodes and pods (--nodes/--pods or the live cluster), after the outputs are checked.
    if (plan_flags.kube.given() || !plan_flags.nodes.empty() || !plan_flags.pods.empty()) {
      if (Result<void> ok = CheckPlanOutputs(plan_flags); !ok) {
        rc = Fail(ok.error());
        return;
      }
      if (Result<void> ok = cli::ReadClusterInputs(plan_flags); !ok) {
        rc = Fail(ok.error());
        return;
      }
    }
    // A first run with only a kubeconfig: the cluster's Prometheus (kube_source.h).
    if (no_input && plan_flags.kube.given())
      if (Result<void> ok = cli::DiscoverPrometheus(plan_flags.telemetry, plan_flags.kube, cli::NowSeconds()); !ok) {
        rc = Fail(ok.error());
        return;
      }
    if (const std::string flag = cli::UnusedPrometheusFlag(*plan, plan_flags.telemetry); !flag.empty()) {
      rc = Fail(InvalidArgument("{} requires --prometheus, or a kubeconfig to find the cluster's Prometheus", flag));
      return;
    }
    if (!plan_flags.telemetry.given()) {
      rc = RunPlan(plan_flags, nullptr, plan_flags.training_jobs);
      return;
    }
    if (Result<void> ok = CheckPlanOutputs(plan_flags); !ok) {
      rc = Fail(ok.error());
      return;
    }
    // Finished pods' ends cut their samples (dcgm-exporter keeps their labels a while).
    if (plan_flags.kube_pods) plan_flags.telemetry.ends = PodEndsFromKubePods(*plan_flags.kube_pods);
    const Result<Telemetry> tel = cli::LoadTelemetry(plan_flags.telemetry, cli::NowSeconds());
    rc = tel ? RunPlan(plan_flags, &*tel, plan_flags.telemetry.name) : Fail(tel.error());
  });
  backtest->callback([&] {
    rc = backtest_flags.telemetry.given() ? RunBacktestCommand(backtest_flags, backtest_risks)
                                          : Fail(InvalidArgument("backtest: give --telemetry or --prometheus"));
  });
  demo->callback([&] {
    // Every strategy on the embedded cluster: its jobs, its services, MIG beside time-slicing,
    // and the report (written to gpufit-demo.html unless --report says where, or -f asks for
    // another rendering on stdout).
    Result<TrainingWorkload> jobs = cli::DemoTrainingJobs();
    if (!jobs) {
      rc = Fail(jobs.error());
      return;
    }
    Result<std::vector<PreparedService>> services = cli::DemoServices(GpuCatalog::Embedded(), synthetic.seed);
    if (!services) {
      rc = Fail(services.error());
      return;
    }
    demo_flags.demo_training = std::move(*jobs);
    demo_flags.demo_services = std::move(*services);
    demo_flags.mig_alternative = true;
    // The default report only for a person reading the Markdown; -f json|yaml|csv|html is
    // for a pipe and writes nothing it did not ask for. With --out DIR it goes beside plan.json.
    if (demo_flags.output.report.empty() && demo_flags.output.format == "text")
      demo_flags.output.report = demo_flags.output.out_dir.empty()
                                     ? std::string("gpufit-demo.html")
                                     : (std::filesystem::path(demo_flags.output.out_dir) / "gpufit-demo.html").string();
    const Telemetry tel = GenerateSyntheticTelemetry(synthetic);
    rc = RunPlan(demo_flags, &tel, fmt::format("demo (synthetic, {} pods, seed {})", synthetic.pods, synthetic.seed));
  });
  return cli::ParseCommandLine(app, global, argc, argv, rc);
}

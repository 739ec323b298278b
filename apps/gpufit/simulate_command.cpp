#include "simulate_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli_app.h"
#include "cli_common.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/core/output_lock.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/placement/registry.h"
#include "gpufit/report/html_report.h"
#include "gpufit/sim/report.h"
#include "version.h"

namespace gpufit::cli {
namespace {

struct SimulateFlags {
  std::string nodes, pods, policies = "fgd", mode = "saturation", seeds = "42-51", format = "text", out_dir;
  Output report;  // --report FILE.html (only its `report` is used)
  double inflation = 1.3;
  unsigned threads = 0;
  bool check_invariants = false;
};

int Run(const SimulateFlags& f) {
  Result<std::vector<NodeSpec>> nodes = ReadOpenbNodes(f.nodes);
  if (!nodes) return Fail(nodes.error());
  OpenbPodColumns columns;
  Result<std::vector<PodSpec>> pods = ReadOpenbPods(f.pods, &columns);
  if (!pods) return Fail(pods.error());
  if (f.mode == "replay" && !columns.creation_time)
    return Fail(
        InvalidArgument("{}: --mode replay needs a creation_time column, which this pod list lacks "
                        "(--mode saturation does not use the times)",
                        f.pods));
  const std::vector<std::string> policies = SplitList(f.policies, ',');
  if (policies.empty()) return Fail(InvalidArgument("--policy: give at least one policy"));
  const std::vector<std::string> known = PolicyNames();
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (std::find(known.begin(), known.end(), policies[i]) == known.end())
      return Fail(NotFound("--policy: unknown policy '{}' (known: {})", policies[i], fmt::join(known, ", ")));
    if (std::find(policies.begin(), policies.begin() + static_cast<std::ptrdiff_t>(i), policies[i]) !=
        policies.begin() + static_cast<std::ptrdiff_t>(i))
      return Fail(InvalidArgument("--policy: '{}' appears twice", policies[i]));
  }
  Result<std::vector<std::uint64_t>> seeds = ParseSeeds(f.seeds);
  if (!seeds) return Fail(seeds.error());
  constexpr std::size_t kMaxRunsWithSteps = 500;  // each keeps about 1 MB of per-event metrics
  if (!f.out_dir.empty() && policies.size() * seeds->size() > kMaxRunsWithSteps)
    return Fail(InvalidArgument("--out writes one step file per run: at most {} runs (policies x seeds), got {}",
                                kMaxRunsWithSteps, policies.size() * seeds->size()));
  if (!f.out_dir.empty())  // fail before hours of simulation, not after; nothing written yet
    if (Result<void> ok = CheckOutputDir(f.out_dir, "--out"); !ok) return Fail(ok.error());
  if (Result<void> ok = CheckOutput(f.report); !ok) return Fail(ok.error());
  SimOptions options;
  options.mode = f.mode == "replay" ? SimMode::kReplay : SimMode::kSaturation;
  options.inflation = f.inflation;
  options.check_invariants = f.check_invariants;
  options.keep_steps = !f.out_dir.empty();
  if (!(f.inflation >= 1.0 && f.inflation <= 100.0))
    return Fail(InvalidArgument("--inflation must be between 1 and 100, got {}", f.inflation));
  Result<SimInput> input = PrepareSimulation(std::move(*nodes), std::move(*pods), options);
  if (!input)
    return Fail(Error{input.error().code, fmt::format("{} with {}: {}", f.pods, f.nodes, input.error().message)});
  if (!input->never_fit.empty())
    std::fprintf(stderr, "gpufit: warning: %zu pods of %s fit no node of %s even when it is empty, e.g. %s\n",
                 input->never_fit.size(), f.pods.c_str(), f.nodes.c_str(), input->never_fit.front().c_str());
  Result<std::vector<RunResult>> runs = RunBatch(*input, policies, *seeds, options, f.threads);
  if (!runs) return Fail(runs.error());
  const std::vector<PolicySummary> summaries = Summarize(*runs);
  const ReportContext context{f.nodes, f.pods, &*input, &options, *seeds};
  const std::string json = ComparisonJson(summaries, context);
  const std::string text = ComparisonText(summaries, context);
  std::vector<std::pair<std::filesystem::path, std::string>> report;
  if (!f.report.report.empty())
    report.emplace_back(f.report.report,
                        report::RenderHtmlReport("gpufit simulate",
                                                 report::ReportData("simulate", "gpufit simulate", f.pods + " on " + f.nodes,
                                                                    VersionText(), json)));
  if (f.out_dir.empty() && !report.empty())
    if (Result<void> w = WriteFilesAtomically(report, {}); !w) return Fail(w.error());
  if (!f.out_dir.empty()) {
    const std::filesystem::path dir(f.out_dir);
    std::vector<std::pair<std::filesystem::path, std::string>> files = {{dir / "simulate.json", json},
                                                                        {dir / "simulate.txt", text}};
    for (const RunResult& r : *runs)
      files.emplace_back(dir / fmt::format("steps-{}-seed{}.csv", r.policy, r.seed), StepsCsv(r));
    files.insert(files.end(), report.begin(), report.end());
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Fail(InvalidArgument("--out {}: cannot create the directory: {}", f.out_dir, ec.message()));
    // One run at a time into the folder, from the listing below to the end of the commit.
    const Result<OutputLock> lock = LockOutputFolders({{dir, "--out"}}, kOutputLockWaitS);
    if (!lock) return Fail(lock.error());
    // Step files of earlier runs into the same directory would now contradict simulate.json:
    // removed in the same commit.
    std::vector<std::filesystem::path> stale;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      const bool ours =
          std::any_of(files.begin(), files.end(), [&](const auto& file) { return file.first == entry.path(); });
      if (!ours && name.starts_with("steps-") && name.ends_with(".csv")) stale.push_back(entry.path());
    }
    if (Result<void> w = WriteFilesAtomically(files, stale); !w) return Fail(w.error());
  }
  std::cout << (f.format == "json" ? json : text);
  SayReportWritten(f.report.report);
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int& rc) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd = app.add_subcommand("simulate", "replay a cluster trace through placement policies and compare them");
  AddDeprecatedAlias(
      cmd, "--nodes",
      cmd->add_option("--openb-nodes", flags->nodes, "node list CSV (openb format: sn,cpu_milli,memory_mib,gpu,model)")
          ->required());
  AddDeprecatedAlias(cmd, "--pods",
                     cmd->add_option("--openb-pods", flags->pods, "pod list CSV (openb format)")->required());
  cmd->add_option("--policy", flags->policies,
                  "comma-separated policies: " + fmt::format("{}", fmt::join(PolicyNames(), ", ")))
      ->capture_default_str();
  cmd->add_option("--mode", flags->mode, "saturation (inflate and shuffle, nothing leaves) or replay (trace times)")
      ->check(CLI::IsMember({"saturation", "replay"}))
      ->capture_default_str();
  cmd->add_option("--inflation", flags->inflation, "saturation: submit until requested GPUs reach this x capacity")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--seeds", flags->seeds, "seeds: a range 42-51 or a list 1,2,3")->capture_default_str();
  cmd->add_option("-f,--format", flags->format, "what to print: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  AddShortOutputOption(
      cmd, {"text", "json"}, [flags](const std::string& v) { flags->format = v; }, flags->out_dir);
  cmd->add_option("--out", flags->out_dir,
                  "also write simulate.json, simulate.txt and per-run steps-POLICY-seedN.csv here (each atomically; "
                  "step files of earlier runs there are removed)")
      ->check(
          CLI::Validator([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                         "DIR", "non-empty"));
  AddReportOption(cmd, flags->report.report);
  cmd->add_option("--threads", flags->threads, "parallel runs (default 0: one per core)")->check(CLI::Range(0u, 256u));
  cmd->add_flag("--check-invariants", flags->check_invariants,
                "check capacities and constraints after every event (slow; for debugging)");
  cmd->callback([flags, &rc] { rc = Run(*flags); });
}

}  // namespace gpufit::cli

#include "training_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_app.h"
#include "cli_common.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/sim/spot_study.h"
#include "gpufit/training/checkpoint.h"
#include "gpufit/training/defrag.h"
#include "gpufit/training/drain_plan.h"
#include "gpufit/training/workload_file.h"

namespace gpufit::cli {
namespace {

constexpr double kH = 3600;

Result<GpuPrices> PricesFor(const TrainingWorkload& w, const std::string& model, const std::string& price_as) {
  if (const auto it = w.prices.find(model); it != w.prices.end()) return it->second;
  const Result<GpuModel> m = GpuCatalog::Embedded().Find(price_as.empty() ? model : price_as);
  if (!m) return NotFound("GPU model '{}' has no price: add it under prices:, or give --price-as", model);
  return GpuPrices{.on_demand_per_gpu_hour = m->on_demand_per_gpu_hour, .spot_per_gpu_hour = m->spot_per_gpu_hour};
}

// Where running jobs are, as the planners read them: the interval is Daly's for the
// capacity type of their node.
std::vector<std::optional<JobPlacement>> Placements(const TrainingWorkload& w) {
  std::vector<std::optional<JobPlacement>> out(w.jobs.size());
  for (std::size_t j = 0; j < w.jobs.size(); ++j) {
    if (!w.running[j]) continue;
    const std::vector<std::size_t> on = w.NodesOf(j);
    // A gang with a pod on spot capacity is interrupted by reclaims of its spot nodes.
    const bool spot =
        std::any_of(on.begin(), on.end(), [&](std::size_t n) { return w.nodes[n].capacity == CapacityType::kSpot; });
    const Seconds tau =
        Outlook(w.jobs[j], spot ? CapacityType::kSpot : CapacityType::kOnDemand, w.interruptions, GpuPrices{}).interval;
    out[j] = JobPlacement{
        .node = on.front(),
        .schedule = CheckpointSchedule::ForRun(w.jobs[j], w.running[j]->last_checkpoint, w.running[j]->work_done, tau),
        .other_pods = std::vector<std::size_t>(on.begin() + 1, on.end())};
  }
  return out;
}

// --- study ---------------------------------------------------------------------------

struct StudyFlags {
  std::string jobs, openb_pods, openb_nodes, bands = "<5%,5-10%,10-15%", mtbi_h, price_as = "a100-40gb",
                                             checkpointing = "application";
  double notice_s = kAwsSpotNotice.count(), deadline_factor = 1.5, gpu_mtbf_h = kDefaultGpuMtbfHours;
  std::uint64_t seed = 42;
  Output out;
};

int RunStudy(const StudyFlags& f) {
  TrainingWorkload w;
  std::string source;
  if (!f.jobs.empty()) {
    Result<TrainingWorkload> r = ReadTrainingWorkload(f.jobs);
    if (!r) return Fail(r.error());
    w = std::move(*r);
    if (w.nodes.empty()) return Fail(InvalidArgument("{}: a study needs nodes: in the workload file", f.jobs));
    for (const TrainingJob& j : w.jobs) {
      if (j.pods > 1) {
        return Fail(
            InvalidArgument("{}: job {}: the study simulates one-pod jobs; this is a gang of {} pods ({}): "
                            "plan it with `gpufit plan --training-jobs` or `gpufit training drain`",
                            f.jobs, j.name, j.pods, j.gang));
      }
    }
    source = f.jobs;
  } else {
    if (f.openb_pods.empty() || f.openb_nodes.empty()) {
      return Fail(InvalidArgument("give --jobs FILE, or --openb-pods and --openb-nodes"));
    }
    const Result<std::vector<PodSpec>> pods = ReadOpenbPods(f.openb_pods);
    if (!pods) return Fail(pods.error());
    const Result<std::vector<NodeSpec>> nodes = ReadOpenbNodes(f.openb_nodes);
    if (!nodes) return Fail(nodes.error());
    OpenbTrainingOptions o;
    o.deadline_factor = f.deadline_factor;
    o.checkpointing = *ParseCheckpointing(f.checkpointing, "--checkpointing");  // CLI11 checked the name
    w.jobs = TrainingJobsFromOpenb(*pods, o);
    if (w.jobs.empty()) return Fail(InvalidArgument("{}: no whole-GPU pods with a training lifetime", f.openb_pods));
    w.nodes = SpotAndOnDemandPools(*nodes);
    source = fmt::format("{} ({} training jobs, deadline {}x run, priced as {})", f.openb_pods, w.jobs.size(),
                         f.deadline_factor, f.price_as);
  }
  if (!f.price_as.empty()) {
    if (const Result<GpuModel> m = GpuCatalog::Embedded().Find(f.price_as); !m) {
      return Fail(Error{m.error().code, "--price-as: " + m.error().message});
    }
  }
  std::vector<GpuPrices> prices;
  for (const TrainingJob& j : w.jobs) {
    Result<GpuPrices> p = PricesFor(w, j.gpu_model, f.price_as);
    if (!p) return Fail(Error{p.error().code, fmt::format("job {}: {}", j.name, p.error().message)});
    prices.push_back(*p);
  }
  std::vector<std::pair<std::string, SpotMarket>> markets;
  for (const std::string& band : SplitList(f.bands, ',')) {
    Result<SpotMarket> m = SpotMarketFromBand(band, Seconds{f.notice_s});
    if (!m) return Fail(Error{m.error().code, "--bands: " + m.error().message});
    markets.emplace_back("band " + band, *m);
  }
  for (const std::string& s : SplitList(f.mtbi_h, ',')) {
    double h = -1;
    try {
      std::size_t used = 0;
      h = std::stod(s, &used);
      if (used != s.size()) h = -1;  // "12h" is not 12 hours: the whole item must be the number
    } catch (const std::exception&) {
      h = -1;
    }
    if (!(h >= kMinMtbfHours && h <= kMaxMtbfHours))
      return Fail(InvalidArgument("--mtbi-h: {} is not a number of hours in [{}, {}] ({})", QuoteForMessage(s),
                                  kMinMtbfHours, kMaxMtbfHours, kMtbfWhy));
    markets.emplace_back(fmt::format("MTBI {} h", s), SpotMarket{.interruptions_per_hour = 1 / h,
                                                                 .notice = Seconds{f.notice_s},
                                                                 .basis = fmt::format("MTBI {} h", s)});
  }
  if (markets.empty()) return Fail(InvalidArgument("give --bands or --mtbi-h"));
  if (!(f.gpu_mtbf_h >= kMinMtbfHours && f.gpu_mtbf_h <= kMaxMtbfHours))
    return Fail(InvalidArgument("--gpu-mtbf-h must be in [{}, {}] ({}), got {}", kMinMtbfHours, kMaxMtbfHours, kMtbfWhy,
                                f.gpu_mtbf_h));
  std::vector<SpotStudyRow> rows;
  for (const auto& [label, market] : markets) {
    InterruptionModel model = w.interruptions;
    model.spot = market;
    model.spot_by_gpu_model.clear();
    model.gpu_mtbf_hours = f.gpu_mtbf_h;
    TrainingSimOptions options;
    options.seed = f.seed;
    options.reclaims = w.preemptions;
    options.maintenance = w.maintenance;
    Result<SpotStudyRow> row = RunSpotStudy(w.nodes, w.jobs, prices, model, label, options);
    if (!row) return Fail(Error{row.error().code, fmt::format("{} ({}): {}", source, label, row.error().message)});
    rows.push_back(std::move(*row));
  }
  ExtraOutput extra;
  extra.report = ReportRequest{.command = "training study", .title = "gpufit training study", .source = source};
  return Emit(f.out, "training-study", SpotStudyToJson(rows, source), SpotStudyToMarkdown(rows, source), extra);
}

// --- drain ---------------------------------------------------------------------------

struct DrainFlags {
  std::string jobs, nodes;
  double now_h = 0, at_h = 0;
  Output out;
};

int RunDrain(const DrainFlags& f) {
  Result<TrainingWorkload> w = ReadTrainingWorkload(f.jobs);
  if (!w) return Fail(w.error());
  const std::vector<std::optional<JobPlacement>> running = Placements(*w);
  for (std::size_t j = 0; j < w->jobs.size(); ++j) {
    if (w->running[j] && w->running[j]->last_checkpoint > Seconds{f.now_h * kH}) {
      return Fail(InvalidArgument("{}: job {}: last_checkpoint_h {} is after --now-h {}", f.jobs, w->jobs[j].name,
                                  w->running[j]->last_checkpoint.count() / kH, f.now_h));
    }
  }
  std::vector<std::string> list;
  for (const std::string& n : SplitList(f.nodes, ',')) {
    if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
  }
  const std::set<std::string> drain(list.begin(), list.end());
  Result<DrainPlan> plan = PlanDrain(w->nodes, w->jobs, running, drain, Seconds{f.now_h * kH}, Seconds{f.at_h * kH});
  if (!plan) return Fail(Error{plan.error().code, f.jobs + ": " + plan.error().message});  // the nodes are the file's
  nlohmann::json steps = nlohmann::json::array();
  std::string md = fmt::format(
      "# Drain of {} at {} h (now {} h): {}\n\nLost work: {:.2f} GPU-hours; down time {:.2f} GPU-hours.\n\n"
      "| # | job | pods x GPUs | action | stop at h | back at h | restore on | lost work min | lost GPU-h | interval "
      "min "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|---|\n",
      fmt::join(list, ","), f.at_h, f.now_h, f.jobs, plan->lost_gpu_hours, plan->downtime_gpu_hours);
  for (const DrainStep& s : plan->steps) {
    const TrainingJob& job = w->jobs[s.job];
    std::vector<std::string> pod_nodes;
    for (const std::size_t n : s.pod_nodes) pod_nodes.push_back(w->nodes[n].name);
    const std::string target = fmt::format("{}", fmt::join(pod_nodes, ","));
    const double tau_min = running[s.job]->schedule.tau.count() / 60;
    const double lost_gpu_h = s.lost_work.count() / kH * job.TotalGpus();
    steps.push_back({{"order", s.order},
                     {"job", job.name},
                     {"gpus", job.gpu_count},
                     {"pods", job.pods},
                     {"gang", job.gang},
                     {"action", DrainActionName(s.action)},
                     {"stop_at_h", s.stop_at.count() / kH},
                     {"resume_at_h", s.resume_at.count() / kH},
                     {"target_node", s.target ? nlohmann::json(w->nodes[*s.target].name) : nlohmann::json(nullptr)},
                     {"pod_nodes", pod_nodes},
                     {"lost_work_s", s.lost_work.count()},
                     {"lost_gpu_hours", lost_gpu_h},
                     {"checkpoint_interval_s", tau_min * 60},
                     {"disruption_group", job.disruption_group},
                     {"max_unavailable", job.max_unavailable},
                     {"budget_blocks_eviction", s.budget_blocks_eviction}});
    md += fmt::format("| {} | {} | {} x {} | {}{} | {:.3f} | {} | {} | {:.1f} | {:.2f} | {:.1f} |\n", s.order, job.name,
                      job.pods, job.gpu_count, DrainActionName(s.action),
                      s.budget_blocks_eviction ? " (PDB 0: stop it yourself)" : "", s.stop_at.count() / kH,
                      !s.pod_nodes.empty() || s.action == DrainAction::kFinishesFirst
                          ? fmt::format("{:.3f}", s.resume_at.count() / kH)
                          : std::string("when room frees"),
                      target.empty() ? "(waits)" : target, s.lost_work.count() / 60, lost_gpu_h, tau_min);
  }
  for (const std::string& p : plan->problems) md += "\n- " + p;
  if (!plan->problems.empty()) md += "\n";
  const nlohmann::json j{{"source", f.jobs},
                         {"drain_nodes", list},
                         {"now_h", f.now_h},
                         {"drain_at_h", f.at_h},
                         {"steps", steps},
                         {"problems", plan->problems},
                         {"lost_gpu_hours", plan->lost_gpu_hours},
                         {"downtime_gpu_hours", plan->downtime_gpu_hours}};
  return Emit(f.out, "drain", j.dump(2) + "\n", md);
}

// --- defrag --------------------------------------------------------------------------

struct DefragFlags {
  std::string jobs, pending;
  int max_moves = 4;
  Output out;
};

int RunDefrag(const DefragFlags& f) {
  Result<TrainingWorkload> w = ReadTrainingWorkload(f.jobs);
  if (!w) return Fail(w.error());
  std::vector<TrainingJob> running;
  std::vector<std::size_t> placement;
  std::optional<TrainingJob> pending;
  int pinned_gangs = 0;
  for (std::size_t j = 0; j < w->jobs.size(); ++j) {
    if (w->jobs[j].name == f.pending) {
      if (w->running[j]) return Fail(InvalidArgument("--pending {}: that job is running", f.pending));
      pending = w->jobs[j];
    } else if (w->running[j] && w->jobs[j].pods > 1) {
      // Moving one pod of a gang stops every pod: its pods stay where they are.
      ++pinned_gangs;
      TrainingJob pod = w->jobs[j];
      pod.pods = 1;
      pod.checkpointing = Checkpointing::kNone;
      for (const std::size_t n : w->NodesOf(j)) {
        running.push_back(pod);
        placement.push_back(n);
      }
    } else if (w->running[j]) {
      running.push_back(w->jobs[j]);
      placement.push_back(w->NodesOf(j).front());
    }
  }
  if (!pending) return Fail(NotFound("--pending: no job named '{}' in {}", f.pending, f.jobs));
  if (pending->pods > 1) {
    return Fail(InvalidArgument("--pending {}: defrag makes room on one node; this is a gang of {} pods", f.pending,
                                pending->pods));
  }
  Result<DefragResult> r = PlanDefragmentation(w->nodes, running, placement, *pending, {.max_moves = f.max_moves});
  if (!r) return Fail(r.error());
  static constexpr const char* kOutcome[] = {"fits-now", "moves", "impossible", "none-within-limit",
                                             "budget-exhausted"};
  const char* outcome = kOutcome[static_cast<int>(r->outcome)];
  nlohmann::json moves = nlohmann::json::array();
  std::string md = fmt::format("# Room for {} ({} GPUs): {}\n\n", f.pending, pending->gpu_count, outcome);
  for (std::size_t i = 0; i < r->moves.size(); ++i) {
    const DefragMove& m = r->moves[i];
    moves.push_back({{"order", i + 1},
                     {"job", running[m.job].name},
                     {"gpus", running[m.job].gpu_count},
                     {"from", w->nodes[m.from].name},
                     {"to", w->nodes[m.to].name}});
    md += fmt::format("{}. checkpoint {} ({} GPUs) on {}, restore on {}\n", i + 1, running[m.job].name,
                      running[m.job].gpu_count, w->nodes[m.from].name, w->nodes[m.to].name);
  }
  if (r->target)
    md += fmt::format("\nThen {} runs on {}. Cost of the moves: {:.2f} GPU-hours.\n", f.pending,
                      w->nodes[*r->target].name, r->cost_gpu_hours);
  if (!r->reason.empty()) md += r->reason + "\n";
  if (pinned_gangs > 0)
    md += fmt::format("\n{} gang job(s) kept in place: moving one pod stops them all.\n", pinned_gangs);
  const nlohmann::json j{
      {"source", f.jobs},
      {"pending", f.pending},
      {"outcome", outcome},
      {"moves", moves},
      {"target_node", r->target ? nlohmann::json(w->nodes[*r->target].name) : nlohmann::json(nullptr)},
      {"cost_gpu_hours", r->cost_gpu_hours},
      {"states_expanded", r->expansions},
      {"reason", r->reason}};
  return Emit(f.out, "defrag", j.dump(2) + "\n", md);
}

}  // namespace

void AddTrainingCommand(CLI::App& app, int& rc) {
  CLI::App* cmd = app.add_subcommand("training", "training jobs on spot: study, drain plan, defragmentation");
  cmd->require_subcommand(1);

  auto study = std::make_shared<StudyFlags>();
  CLI::App* s =
      cmd->add_subcommand("study", "simulate jobs as recommended vs all on-demand at spot interruption rates");
  s->add_option("--jobs", study->jobs, "training workload YAML with nodes: and jobs:");
  s->add_option("--openb-pods", study->openb_pods, "or: openb pod list (whole-GPU pods become training jobs)");
  s->add_option("--openb-nodes", study->openb_nodes,
                "and the openb node list (each node offered as spot and on-demand)");
  s->add_option("--bands", study->bands, "AWS Spot Advisor bands, read at their upper bound")->capture_default_str();
  s->add_option("--mtbi-h", study->mtbi_h, "also: mean hours between reclaims per node, comma-separated");
  s->add_option("--notice-s", study->notice_s, "reclaim notice (AWS 120, GCP and Azure 30)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  s->add_option("--gpu-mtbf-h", study->gpu_mtbf_h, "hardware MTBF per GPU, hours")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  s->add_option("--price-as", study->price_as, "catalog id that prices GPU types the catalog lacks (openb's)")
      ->capture_default_str();
  s->add_option("--deadline-factor", study->deadline_factor, "openb: deadline = creation + factor x run (0 = none)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  s->add_option("--checkpointing", study->checkpointing, "openb: transparent, application or none")
      ->check(CLI::IsMember({"transparent", "application", "none"}))
      ->capture_default_str();
  s->add_option("--seed", study->seed, "seed of the reclaims and failures")->check(SeedCheck())->capture_default_str();
  AddOutputOptions(s, study->out, {"html"});
  s->callback([study, &rc] { rc = RunStudy(*study); });

  auto drain = std::make_shared<DrainFlags>();
  CLI::App* d = cmd->add_subcommand("drain", "plan checkpoints and restores for jobs on nodes going into maintenance");
  d->add_option("--jobs", drain->jobs, "training workload YAML with nodes: and running jobs")->required();
  AddDeprecatedAlias(d, "--nodes",
                     d->add_option("--drain-nodes", drain->nodes, "comma-separated nodes to drain")->required());
  d->add_option("--now-h", drain->now_h, "trace time now, hours")->required();
  d->add_option("--at-h", drain->at_h, "trace time the nodes go down, hours")->required();
  AddOutputOptions(d, drain->out);
  d->callback([drain, &rc] { rc = RunDrain(*drain); });

  auto defrag = std::make_shared<DefragFlags>();
  CLI::App* g = cmd->add_subcommand("defrag", "fewest migrations that make room for a pending job");
  g->add_option("--jobs", defrag->jobs, "training workload YAML with nodes: and running jobs")->required();
  g->add_option("--pending", defrag->pending, "name of the pending job (in the file, not running)")->required();
  g->add_option("--max-moves", defrag->max_moves, "deepest search")->check(CLI::Range(1, 8))->capture_default_str();
  AddOutputOptions(g, defrag->out);
  g->callback([defrag, &rc] { rc = RunDefrag(*defrag); });
}

}  // namespace gpufit::cli

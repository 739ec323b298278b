#include "gpufit/sim/training_sim.h"

#include <algorithm>
#include <array>
#include <limits>
#include <list>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "gpufit/core/rng.h"
#include "gpufit/model/cluster.h"

namespace gpufit {

JobRunPolicy PolicyFromDecision(const SpotDecision& d, const GpuPrices& prices) {
  return JobRunPolicy{.choice = d.choice,
                      .spot_interval = d.spot.interval,
                      .on_demand_interval = d.on_demand.interval,
                      .switch_margin = d.switch_margin,
                      .prices = prices};
}

JobRunPolicy ForcedPolicy(const TrainingJob& job, CapacityType capacity, const InterruptionModel& model,
                          const GpuPrices& prices) {
  return JobRunPolicy{.choice = capacity == CapacityType::kSpot ? SpotChoice::kSpot : SpotChoice::kOnDemand,
                      .spot_interval = Outlook(job, CapacityType::kSpot, model, prices).interval,
                      .on_demand_interval = Outlook(job, CapacityType::kOnDemand, model, prices).interval,
                      .switch_margin = Seconds{0},
                      .prices = prices};
}

namespace {

constexpr double kEps = 1e-6;
constexpr std::uint64_t kAlways = std::numeric_limits<std::uint64_t>::max();

enum class EventKind {
  kArrive,
  kFinish,
  kEvictSaved,  // an emergency checkpoint is written: leave with it
  kReclaimNotice,
  kReclaim,
  kGpuFailure,
  kGpuRepair,
  kNodeUp,
  kCordon,
  kMaintenanceNotice,
  kMaintenance,
  kMigrate,
  kReserve,
  kSwitchCheck,
  kSnapshot,
};

struct Event {
  double t;
  std::uint64_t seq;
  EventKind kind;
  std::size_t id;     // job or node (or index into a list)
  std::uint64_t gen;  // stale unless equal to the owner's generation (kAlways: never stale)
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

enum class JobState { kWaiting, kPending, kOnNode, kDone };

struct JobRun {
  JobState state = JobState::kWaiting;
  CapacityType capacity = CapacityType::kOnDemand;
  std::uint64_t gen = 0;
  Seconds committed{0};
  bool resumed = false;  // next run restores first
  std::size_t node = 0;
  Seconds placed{0};
  CheckpointSchedule schedule;
  Seconds saving{0};  // emergency checkpoint in flight: the work it saves
  bool saving_now = false;
  std::optional<std::size_t> reserved_on;  // planned migration target
  std::optional<std::size_t> planned_target;
};

struct NodeRun {
  int used = 0, broken = 0, reserved = 0;
  int down = 0, cordoned = 0;  // counts of reasons
  std::vector<std::size_t> jobs;
  std::uint64_t reclaim_gen = 0;
  Rng reclaim_rng{0}, failure_rng{0};
  int Free(int gpus) const { return gpus - used - broken - reserved; }
};

class Simulator {
 public:
  Simulator(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
            const std::vector<JobRunPolicy>& policies, const TrainingSimOptions& options)
      : nodes_(nodes), jobs_(jobs), policies_(policies), opt_(options), runs_(jobs.size()), node_runs_(nodes.size()) {
    result_.jobs.resize(jobs.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      node_runs_[n].reclaim_rng = Rng(options.seed * 0x9e3779b97f4a7c15ULL + 2 * n + 1);
      node_runs_[n].failure_rng = Rng(options.seed * 0xbf58476d1ce4e5b9ULL + 2 * n + 2);
      node_index_.emplace(nodes[n].name, n);
      group_of_.push_back(GroupOf(nodes[n]));
    }
    buckets_.resize(groups_.size());
    indexed_free_.assign(nodes.size(), -1);
    for (std::size_t n = 0; n < nodes.size(); ++n) Reindex(n);
  }

  Result<TrainingSimResult> Run();

 private:
  std::size_t GroupOf(const TrainingNode& node) {
    const auto key = std::make_pair(node.capacity, node.gpu_model);
    const auto [it, added] = group_index_.emplace(key, groups_.size());
    if (added) groups_.push_back(key);
    return it->second;
  }
  void Push(double t, EventKind kind, std::size_t id, std::uint64_t gen) {
    events_.push(Event{t, seq_++, kind, id, gen});
  }
  bool Available(std::size_t n) const { return node_runs_[n].down == 0 && node_runs_[n].cordoned == 0; }
  // Keeps buckets_[group][free] = the available nodes with that many free GPUs.
  void Reindex(std::size_t n) {
    auto& bucket = buckets_[group_of_[n]];
    if (indexed_free_[n] >= 0) bucket[static_cast<std::size_t>(indexed_free_[n])].erase(n);
    indexed_free_[n] = -1;
    if (!Available(n)) return;
    const int free = std::max(0, node_runs_[n].Free(nodes_[n].gpu_count));
    bucket[static_cast<std::size_t>(free)].insert(n);
    indexed_free_[n] = free;
  }
  std::optional<std::size_t> BestFit(const TrainingJob& job, CapacityType capacity) const {
    std::optional<std::size_t> best;
    int best_free = kMaxGpusPerNode + 1;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].first != capacity) continue;
      if (!job.gpu_model.empty() && groups_[g].second != job.gpu_model) continue;
      for (int f = job.gpu_count; f < best_free && f <= kMaxGpusPerNode; ++f) {
        const auto& b = buckets_[g][static_cast<std::size_t>(f)];
        if (!b.empty()) {
          best = *b.begin();
          best_free = f;
          break;
        }
      }
    }
    return best;
  }

  // The most free GPUs on any available node of a capacity type.
  int MaxFree(CapacityType capacity) const {
    int most = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].first != capacity) continue;
      for (int f = kMaxGpusPerNode; f > most; --f) {
        if (!buckets_[g][static_cast<std::size_t>(f)].empty()) {
          most = f;
          break;
        }
      }
    }
    return most;
  }
  Seconds Interval(std::size_t j, CapacityType c) const {
    return c == CapacityType::kSpot ? policies_[j].spot_interval : policies_[j].on_demand_interval;
  }
  void Place(std::size_t j, std::size_t n, double t);
  void Leave(std::size_t j, double t, Seconds committed, bool interrupted);
  void Interrupt(std::size_t j, double t);               // loses the uncommitted work
  void Notice(std::size_t j, double t, Seconds notice);  // emergency write if it fits
  void SaveAndLeave(std::size_t j, double t);            // emergency write now, then leave
  void TryPlacePending(double t);
  void Enqueue(std::size_t j, bool front);
  void ScheduleReclaim(std::size_t n, double t);
  void ScheduleFailure(std::size_t n, double t);
  void NodeDown(std::size_t n, double t, double until);

  const std::vector<TrainingNode>& nodes_;
  const std::vector<TrainingJob>& jobs_;
  const std::vector<JobRunPolicy>& policies_;
  const TrainingSimOptions& opt_;
  std::vector<JobRun> runs_;
  std::vector<NodeRun> node_runs_;
  std::unordered_map<std::string, std::size_t> node_index_;
  std::map<std::pair<CapacityType, std::string>, std::size_t> group_index_;
  std::vector<std::pair<CapacityType, std::string>> groups_;
  std::vector<std::size_t> group_of_;
  std::vector<std::array<std::set<std::size_t>, kMaxGpusPerNode + 1>> buckets_;
  std::vector<int> indexed_free_;
  std::array<std::list<std::size_t>, 2> pending_;  // by capacity type
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0;
  TrainingSimResult result_;
};

void Simulator::Enqueue(std::size_t j, bool front) {
  auto& q = pending_[runs_[j].capacity == CapacityType::kSpot ? 1 : 0];
  runs_[j].state = JobState::kPending;
  if (front) {
    q.push_front(j);
  } else {
    q.push_back(j);
  }
}

void Simulator::Place(std::size_t j, std::size_t n, double t) {
  JobRun& r = runs_[j];
  const TrainingJob& job = jobs_[j];
  NodeRun& node = node_runs_[n];
  if (r.reserved_on) {  // placed: its reservation (here or elsewhere) is no longer needed
    node_runs_[*r.reserved_on].reserved -= job.gpu_count;
    Reindex(*r.reserved_on);
    r.reserved_on.reset();
  }
  node.used += job.gpu_count;
  node.jobs.push_back(j);
  Reindex(n);
  r.state = JobState::kOnNode;
  r.node = n;
  r.placed = Seconds{t};
  r.saving_now = false;
  ++r.gen;
  const Seconds restore = r.resumed ? job.restore : Seconds{0};
  r.schedule = CheckpointSchedule::ForRun(job, Seconds{t} + restore, r.committed, Interval(j, r.capacity));
  JobOutcome& out = result_.jobs[j];
  if (!out.start) out.start = Seconds{t};
  out.restoring += restore;
  Push(r.schedule.Finish().count(), EventKind::kFinish, j, r.gen);
}

// The job leaves its node at t with `committed` work saved.
void Simulator::Leave(std::size_t j, double t, Seconds committed, bool interrupted) {
  JobRun& r = runs_[j];
  const TrainingJob& job = jobs_[j];
  NodeRun& node = node_runs_[r.node];
  node.used -= job.gpu_count;
  node.jobs.erase(std::find(node.jobs.begin(), node.jobs.end(), j));
  Reindex(r.node);
  ++r.gen;
  JobOutcome& out = result_.jobs[j];
  const double held_h = (t - r.placed.count()) / 3600 * job.gpu_count;
  const bool spot = nodes_[r.node].capacity == CapacityType::kSpot;
  (spot ? out.spot_gpu_hours : out.on_demand_gpu_hours) += held_h;
  out.cost.value +=
      held_h * (spot ? policies_[j].prices.spot_per_gpu_hour : policies_[j].prices.on_demand_per_gpu_hour).value;
  // Time on the node that was neither restoring nor computing kept or lost work: writing.
  const Seconds end{t};
  // An emergency write stopped the compute when it began.
  const Seconds computed = r.saving_now ? r.saving : r.schedule.ComputedAt(end);
  const Seconds computing = computed - r.schedule.committed;
  const Seconds restoring_cut = std::max(Seconds{0}, r.schedule.compute_start - end);  // restore not finished
  out.restoring -= restoring_cut;
  out.writing += std::max(Seconds{0}, end - r.schedule.compute_start) - computing;
  if (interrupted) {
    const Seconds lost = computed - committed;
    out.lost_work += std::max(Seconds{0}, lost);
    out.max_lost_work = std::max(out.max_lost_work, lost);
    ++out.interruptions;
  }
  r.committed = committed;
  r.resumed = true;
  r.saving_now = false;
}

void Simulator::Interrupt(std::size_t j, double t) {
  const JobRun& r = runs_[j];
  Leave(j, t, std::max(r.schedule.CommittedAt(Seconds{t}), r.committed), true);
  Enqueue(j, true);
  // Less may be saved than the last switch check assumed: check again now.
  if (policies_[j].choice == SpotChoice::kSpotWithFallback && r.capacity == CapacityType::kSpot) {
    Push(t, EventKind::kSwitchCheck, j, kAlways);
  }
}

void Simulator::Notice(std::size_t j, double t, Seconds notice) {
  JobRun& r = runs_[j];
  const TrainingJob& job = jobs_[j];
  if (r.saving_now || r.schedule.Finish().count() <= t + notice.count()) return;  // finishes anyway
  if (job.checkpointing != Checkpointing::kTransparent) return;
  if (job.checkpoint_write + opt_.interruptions.emergency_margin > notice) return;
  if (Seconds{t} < r.schedule.compute_start) return;  // restoring: nothing new to save
  SaveAndLeave(j, t);
}

void Simulator::SaveAndLeave(std::size_t j, double t) {
  JobRun& r = runs_[j];
  r.saving = r.schedule.ComputedAt(Seconds{t});
  r.saving_now = true;
  ++r.gen;  // cancels the finish
  Push(t + jobs_[j].checkpoint_write.count(), EventKind::kEvictSaved, j, r.gen);
}

void Simulator::TryPlacePending(double t) {
  for (const CapacityType c : {CapacityType::kOnDemand, CapacityType::kSpot}) {
    auto& q = pending_[c == CapacityType::kSpot ? 1 : 0];
    int max_free = MaxFree(c);
    for (auto it = q.begin(); it != q.end();) {
      const std::size_t j = *it;
      if (max_free == 0 && opt_.migrations.empty()) break;
      if (jobs_[j].gpu_count > max_free && !runs_[j].reserved_on) {
        ++it;
        continue;
      }
      if (runs_[j].state != JobState::kPending || runs_[j].capacity != c) {
        it = q.erase(it);  // stale: placed or switched queues
        continue;
      }
      std::optional<std::size_t> n;
      if (runs_[j].reserved_on) {
        n = runs_[j].reserved_on;  // its reserved target (room is held for it)
        if (!Available(*n) && node_runs_[*n].down > 0) n = BestFit(jobs_[j], c);
      } else {
        n = BestFit(jobs_[j], c);
      }
      if (!n) {
        ++it;
        continue;
      }
      it = q.erase(it);
      Place(j, *n, t);
      max_free = MaxFree(c);
    }
  }
}

void Simulator::ScheduleReclaim(std::size_t n, double t) {
  if (!opt_.poisson_reclaims || nodes_[n].capacity != CapacityType::kSpot) return;
  const SpotMarket& m = opt_.interruptions.SpotFor(nodes_[n].gpu_model);
  if (m.interruptions_per_hour <= 0) return;
  const double gap = node_runs_[n].reclaim_rng.Exponential(m.interruptions_per_hour / 3600);
  Push(t + gap, EventKind::kReclaimNotice, n, node_runs_[n].reclaim_gen);
}

void Simulator::ScheduleFailure(std::size_t n, double t) {
  if (!opt_.hardware_failures) return;
  const double rate = nodes_[n].gpu_count / (opt_.interruptions.gpu_mtbf_hours * 3600);
  Push(t + node_runs_[n].failure_rng.Exponential(rate), EventKind::kGpuFailure, n, kAlways);
}

void Simulator::NodeDown(std::size_t n, double t, double until) {
  NodeRun& node = node_runs_[n];
  const std::vector<std::size_t> victims = node.jobs;
  for (const std::size_t j : victims) Interrupt(j, t);
  ++node.down;
  ++node.reclaim_gen;
  Reindex(n);
  Push(until, EventKind::kNodeUp, n, kAlways);
}

Result<TrainingSimResult> Simulator::Run() {
  if (policies_.size() != jobs_.size()) {
    return InvalidArgument("{} run policies for {} jobs", policies_.size(), jobs_.size());
  }
  std::unordered_map<std::string, std::size_t> job_index;
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    const TrainingJob& job = jobs_[j];
    job_index.emplace(job.name, j);
    if (job.work <= Seconds{0}) return InvalidArgument("job {}: work must be > 0", job.name);
    runs_[j].capacity = policies_[j].choice == SpotChoice::kOnDemand ? CapacityType::kOnDemand : CapacityType::kSpot;
    for (const CapacityType c : {CapacityType::kOnDemand, CapacityType::kSpot}) {
      const bool needed = c == runs_[j].capacity || policies_[j].choice == SpotChoice::kSpotWithFallback;
      if (needed && job.checkpointing != Checkpointing::kNone && Interval(j, c) <= Seconds{0}) {
        return InvalidArgument("job {}: checkpoint interval must be > 0", job.name);
      }
      if (needed && !AnyCanHost(nodes_, job, c)) {
        return InvalidArgument("job {}: no {} node has {} {} GPUs", job.name,
                               c == CapacityType::kSpot ? "spot" : "on-demand", job.gpu_count,
                               job.gpu_model.empty() ? std::string("free") : job.gpu_model);
      }
    }
    Push(job.submit.count(), EventKind::kArrive, j, kAlways);
    if (policies_[j].choice == SpotChoice::kSpotWithFallback) {
      if (const auto sw = LatestSwitch(job, Seconds{0}, policies_[j].on_demand_interval, policies_[j].switch_margin)) {
        Push(std::max(sw->count(), job.submit.count()), EventKind::kSwitchCheck, j, kAlways);
      }
    }
  }
  const auto node_of = [&](const std::string& name, const char* what) -> Result<std::size_t> {
    const auto it = node_index_.find(name);
    if (it == node_index_.end()) return InvalidArgument("{}: unknown node '{}'", what, name);
    return it->second;
  };
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    ScheduleReclaim(n, 0);
    ScheduleFailure(n, 0);
  }
  for (std::size_t i = 0; i < opt_.reclaims.size(); ++i) {
    const Result<std::size_t> n = node_of(opt_.reclaims[i].node, "spot reclaim");
    if (!n) return n.error();
    const Seconds notice = opt_.interruptions.SpotFor(nodes_[*n].gpu_model).notice;
    Push(std::max(0.0, (opt_.reclaims[i].at - notice).count()), EventKind::kReclaimNotice, *n, kAlways);
  }
  for (std::size_t i = 0; i < opt_.maintenance.size(); ++i) {
    const MaintenanceWindow& w = opt_.maintenance[i];
    const Result<std::size_t> n = node_of(w.node, "maintenance window");
    if (!n) return n.error();
    const Seconds cordon = w.cordon_at.value_or(w.start - opt_.drain_grace);
    Push(std::max(0.0, cordon.count()), EventKind::kCordon, *n, kAlways);
    Push(std::max(0.0, (w.start - opt_.drain_grace).count()), EventKind::kMaintenanceNotice, *n, kAlways);
    Push(w.start.count(), EventKind::kMaintenance, i, kAlways);
  }
  for (std::size_t i = 0; i < opt_.migrations.size(); ++i) {
    const PlannedMigration& m = opt_.migrations[i];
    const auto it = job_index.find(m.job);
    if (it == job_index.end()) return InvalidArgument("planned migration: unknown job '{}'", m.job);
    if (!m.target_node.empty()) {
      const Result<std::size_t> n = node_of(m.target_node, "planned migration target");
      if (!n) return n.error();
      runs_[it->second].planned_target = *n;
    }
    Push(m.stop_at.count(), EventKind::kMigrate, i, kAlways);
  }
  if (!opt_.migrations.empty()) Push(opt_.reserve_at.count(), EventKind::kReserve, 0, kAlways);
  if (opt_.snapshot_at) Push(opt_.snapshot_at->count(), EventKind::kSnapshot, 0, kAlways);

  const double horizon = opt_.horizon ? opt_.horizon->count() : std::numeric_limits<double>::infinity();
  std::size_t done = 0;
  double now = 0;
  std::int64_t events = 0;
  while (!events_.empty() && done < jobs_.size()) {
    const Event e = events_.top();
    if (e.t > horizon) break;
    if (++events > opt_.max_events) {
      return FailedPrecondition(
          "the simulation passed {} events at {:.1f} h with {} of {} jobs done: interruptions are too frequent for "
          "the jobs to finish ({} reclaims, {} hardware failures so far)",
          opt_.max_events, now / 3600, done, jobs_.size(), result_.spot_reclaims, result_.hardware_failures);
    }
    events_.pop();
    now = e.t;
    bool freed = false;
    switch (e.kind) {
      case EventKind::kArrive:
        Enqueue(e.id, false);
        freed = true;
        break;
      case EventKind::kFinish: {
        if (e.gen != runs_[e.id].gen) break;
        JobRun& r = runs_[e.id];
        Leave(e.id, now, jobs_[e.id].work, false);
        r.state = JobState::kDone;
        JobOutcome& out = result_.jobs[e.id];
        out.finish = Seconds{now};
        const TrainingJob& job = jobs_[e.id];
        if (job.deadline && now > job.deadline->count() + kEps) out.missed_deadline = true;
        ++done;
        freed = true;
        break;
      }
      case EventKind::kEvictSaved: {
        if (e.gen != runs_[e.id].gen) break;
        JobRun& r = runs_[e.id];
        Leave(e.id, now, r.saving, true);
        Enqueue(e.id, true);
        freed = true;
        break;
      }
      case EventKind::kReclaimNotice: {
        NodeRun& node = node_runs_[e.id];
        if (e.gen != kAlways && e.gen != node.reclaim_gen) break;
        if (node.down > 0) break;
        const Seconds notice = opt_.interruptions.SpotFor(nodes_[e.id].gpu_model).notice;
        ++node.cordoned;
        Reindex(e.id);
        for (const std::size_t j : std::vector<std::size_t>(node.jobs)) Notice(j, now, notice);
        Push(now + notice.count(), EventKind::kReclaim, e.id, kAlways);
        break;
      }
      case EventKind::kReclaim: {
        NodeRun& node = node_runs_[e.id];
        --node.cordoned;
        ++result_.spot_reclaims;
        NodeDown(e.id, now, now + opt_.spot_replacement.count());
        freed = true;
        break;
      }
      case EventKind::kNodeUp: {
        NodeRun& node = node_runs_[e.id];
        if (--node.down == 0) ScheduleReclaim(e.id, now);
        Reindex(e.id);
        freed = true;
        break;
      }
      case EventKind::kGpuFailure: {
        NodeRun& node = node_runs_[e.id];
        ScheduleFailure(e.id, now);
        if (node.down > 0 || node.broken >= nodes_[e.id].gpu_count) break;
        ++result_.hardware_failures;
        // GPUs 0..used-1 belong to the jobs in order; a draw past them hits an idle GPU.
        std::uint64_t gpu = node.failure_rng.Below(static_cast<std::uint64_t>(nodes_[e.id].gpu_count));
        for (const std::size_t j : node.jobs) {
          const auto k = static_cast<std::uint64_t>(jobs_[j].gpu_count);
          if (gpu < k) {
            Interrupt(j, now);
            break;
          }
          gpu -= k;
        }
        ++node.broken;
        Reindex(e.id);
        Push(now + opt_.gpu_repair.count(), EventKind::kGpuRepair, e.id, kAlways);
        freed = true;
        break;
      }
      case EventKind::kGpuRepair:
        --node_runs_[e.id].broken;
        Reindex(e.id);
        freed = true;
        break;
      case EventKind::kCordon:
        ++node_runs_[e.id].cordoned;
        Reindex(e.id);
        break;
      case EventKind::kMaintenanceNotice:
        for (const std::size_t j : std::vector<std::size_t>(node_runs_[e.id].jobs)) Notice(j, now, opt_.drain_grace);
        break;
      case EventKind::kMaintenance: {
        const MaintenanceWindow& w = opt_.maintenance[e.id];
        const std::size_t n = node_index_.at(w.node);
        --node_runs_[n].cordoned;
        ++result_.drains;
        NodeDown(n, now, now + w.duration.count());
        freed = true;
        break;
      }
      case EventKind::kReserve:
        for (const PlannedMigration& m : opt_.migrations) {
          const std::size_t j = job_index.at(m.job);
          JobRun& r = runs_[j];
          if (!r.planned_target || r.reserved_on) continue;
          NodeRun& target = node_runs_[*r.planned_target];
          if (target.Free(nodes_[*r.planned_target].gpu_count) < jobs_[j].gpu_count) continue;
          target.reserved += jobs_[j].gpu_count;
          r.reserved_on = r.planned_target;
          Reindex(*r.planned_target);
        }
        break;
      case EventKind::kMigrate: {
        const PlannedMigration& m = opt_.migrations[e.id];
        const std::size_t j = job_index.at(m.job);
        JobRun& r = runs_[j];
        if (r.state != JobState::kOnNode || r.saving_now) break;
        if (m.emergency_checkpoint && jobs_[j].checkpointing == Checkpointing::kTransparent &&
            Seconds{now} >= r.schedule.compute_start) {
          SaveAndLeave(j, now);
        } else {
          Interrupt(j, now);
          freed = true;
        }
        break;
      }
      case EventKind::kSwitchCheck: {
        const std::size_t j = e.id;
        JobRun& r = runs_[j];
        if (r.state == JobState::kDone || r.capacity == CapacityType::kOnDemand) break;
        const TrainingJob& job = jobs_[j];
        const bool can_save = r.state == JobState::kOnNode && job.checkpointing == Checkpointing::kTransparent &&
                              Seconds{now} >= r.schedule.compute_start;
        // The switch time follows what is committed: a failure without notice could strike
        // any moment. The switch itself saves what was computed when it can write.
        const Seconds committed = r.state != JobState::kOnNode ? r.committed : r.schedule.CommittedAt(Seconds{now});
        const Seconds latest =
            *LatestSwitch(job, committed, policies_[j].on_demand_interval, policies_[j].switch_margin);
        if (now + kEps < latest.count()) {
          Push(latest.count(), EventKind::kSwitchCheck, j, kAlways);
          break;
        }
        r.capacity = CapacityType::kOnDemand;
        result_.jobs[j].switched = true;
        if (r.state == JobState::kPending) {
          Enqueue(j, true);
        } else if (r.state == JobState::kOnNode && !r.saving_now) {
          if (can_save) {
            SaveAndLeave(j, now);
          } else {
            Interrupt(j, now);
          }
        }
        freed = true;
        break;
      }
      case EventKind::kSnapshot:
        for (std::size_t j = 0; j < jobs_.size(); ++j) {
          if (runs_[j].state == JobState::kOnNode) result_.snapshot.push_back({j, runs_[j].node, runs_[j].schedule});
        }
        break;
    }
    if (freed) TryPlacePending(now);
  }

  // Jobs still on nodes at the horizon: account for what they held.
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    if (runs_[j].state == JobState::kOnNode) Leave(j, std::min(now, horizon), runs_[j].committed, false);
  }
  double completion_h = 0, capacity_gpus = 0;
  for (const TrainingNode& n : nodes_) capacity_gpus += n.gpu_count;
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    const JobOutcome& out = result_.jobs[j];
    const TrainingJob& job = jobs_[j];
    result_.cost.value += out.cost.value;
    result_.held_gpu_hours += out.spot_gpu_hours + out.on_demand_gpu_hours;
    result_.lost_gpu_hours += (out.lost_work + out.restoring).count() / 3600 * job.gpu_count;
    result_.checkpoint_gpu_hours += out.writing.count() / 3600 * job.gpu_count;
    result_.switched += out.switched ? 1 : 0;
    result_.job_interruptions += out.interruptions;
    if (out.finish) {
      ++result_.completed;
      result_.useful_gpu_hours += job.work.count() / 3600 * job.gpu_count;
      completion_h += (*out.finish - job.submit).count() / 3600;
      result_.makespan = std::max(result_.makespan, *out.finish);
      if (out.missed_deadline) ++result_.deadline_misses;
    } else {
      ++result_.unfinished;
      if (job.deadline) ++result_.deadline_misses;
    }
  }
  if (result_.completed > 0) result_.mean_completion_h = completion_h / result_.completed;
  if (result_.makespan > Seconds{0} && capacity_gpus > 0) {
    result_.utilization = result_.held_gpu_hours / (capacity_gpus * result_.makespan.count() / 3600);
  }
  return std::move(result_);
}

}  // namespace

Result<TrainingSimResult> SimulateTraining(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                                           const std::vector<JobRunPolicy>& policies,
                                           const TrainingSimOptions& options) {
  for (const TrainingNode& n : nodes) {
    if (n.gpu_count < 1 || n.gpu_count > kMaxGpusPerNode) {
      return InvalidArgument("node {}: gpu_count must be 1..{}, got {}", n.name, kMaxGpusPerNode, n.gpu_count);
    }
  }
  Simulator sim(nodes, jobs, policies, options);
  return sim.Run();
}

}  // namespace gpufit

#include "gpufit/training/drain_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace gpufit {
namespace {

struct Candidate {
  DrainAction action;
  Seconds stop;
  Seconds lost;
};

struct Interval {
  Seconds from, to;
};

Seconds DownTime(const TrainingJob& job, DrainAction a) {
  return (a == DrainAction::kEmergencyCheckpoint ? job.checkpoint_write : Seconds{0}) + job.restore;
}

// Candidate stops for one job, given the times other jobs of its budget come back.
std::vector<Candidate> Candidates(const TrainingJob& job, const CheckpointSchedule& s, Seconds now, Seconds drain,
                                  const std::vector<Interval>& taken) {
  std::vector<Candidate> c;
  if (job.checkpointing != Checkpointing::kNone) {
    for (Seconds end = s.NextCheckpointEnd(now); end <= drain && end < s.Finish(); end += s.Period()) {
      c.push_back({DrainAction::kAfterCheckpoint, end, Seconds{0}});
    }
  }
  std::vector<Seconds> times{now};
  for (const Interval& i : taken) {
    if (i.to >= now && i.to <= drain) times.push_back(i.to);
  }
  for (const Seconds t : times) {
    if (job.checkpointing == Checkpointing::kTransparent && t + job.checkpoint_write <= drain && t >= s.compute_start) {
      c.push_back({DrainAction::kEmergencyCheckpoint, t, Seconds{0}});
    }
    c.push_back({DrainAction::kStopAndLose, t, s.LostAt(t)});
  }
  // Least waste (lost work, or the emergency write), then earliest.
  const auto waste = [&](const Candidate& x) {
    return x.lost + (x.action == DrainAction::kEmergencyCheckpoint ? job.checkpoint_write : Seconds{0});
  };
  std::sort(c.begin(), c.end(), [&](const Candidate& a, const Candidate& b) {
    if (waste(a) != waste(b)) return waste(a) < waste(b);
    if (a.stop != b.stop) return a.stop < b.stop;
    return a.action < b.action;  // a periodic checkpoint before an emergency one
  });
  return c;
}

bool Fits(const Interval& x, const std::vector<Interval>& taken, int max_unavailable) {
  int overlapping = 0;
  for (const Interval& i : taken) {
    if (x.from < i.to && i.from < x.to) ++overlapping;
  }
  return overlapping < max_unavailable;
}

}  // namespace

const char* DrainActionName(DrainAction a) {
  switch (a) {
    case DrainAction::kFinishesFirst:
      return "finishes-first";
    case DrainAction::kAfterCheckpoint:
      return "after-checkpoint";
    case DrainAction::kEmergencyCheckpoint:
      return "emergency-checkpoint";
    case DrainAction::kStopAndLose:
      return "stop-and-lose";
  }
  return "?";
}

Result<DrainPlan> PlanDrain(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                            const std::vector<std::optional<JobPlacement>>& running,
                            const std::set<std::string>& drain_nodes, Seconds now, Seconds drain_at) {
  if (!std::isfinite(now.count()) || !std::isfinite(drain_at.count()) || now < Seconds{0}) {
    return InvalidArgument("drain: now ({} s) and the drain time ({} s) must be finite and >= 0", now.count(),
                           drain_at.count());
  }
  if (drain_at < now) return InvalidArgument("the drain ({} s) is before now ({} s)", drain_at.count(), now.count());
  if (drain_nodes.empty()) return InvalidArgument("drain: no nodes to drain");
  if (running.size() != jobs.size()) return InvalidArgument("{} placements for {} jobs", running.size(), jobs.size());
  std::vector<bool> drained(nodes.size(), false);
  for (const std::string& name : drain_nodes) {
    const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const TrainingNode& n) { return n.name == name; });
    if (it == nodes.end()) return InvalidArgument("drain: unknown node '{}'", name);
    drained[static_cast<std::size_t>(it - nodes.begin())] = true;
  }
  std::vector<int> free(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) free[n] = nodes[n].gpu_count;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (!running[j]) continue;
    if (running[j]->node >= nodes.size()) return InvalidArgument("job {}: placed on an unknown node", jobs[j].name);
    free[running[j]->node] -= jobs[j].gpu_count;
  }

  DrainPlan plan{
      .now = now, .drain_at = drain_at, .steps = {}, .problems = {}, .lost_gpu_hours = 0, .downtime_gpu_hours = 0};
  std::vector<std::size_t> moving;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (running[j] && drained[running[j]->node]) moving.push_back(j);
  }
  // Biggest first for targets; the job order otherwise.
  std::stable_sort(moving.begin(), moving.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].gpu_count > jobs[b].gpu_count; });

  std::map<std::string, std::vector<Interval>> budgets;
  for (const std::size_t j : moving) {
    const TrainingJob& job = jobs[j];
    const JobPlacement& p = *running[j];
    DrainStep step{.job = j,
                   .action = DrainAction::kFinishesFirst,
                   .stop_at = p.schedule.Finish(),
                   .resume_at = p.schedule.Finish(),
                   .target = std::nullopt,
                   .lost_work = Seconds{0},
                   .order = 0};
    if (p.schedule.Finish() <= drain_at) {
      plan.steps.push_back(step);
      continue;
    }
    const std::string group = job.disruption_group.empty() ? "job/" + job.name : job.disruption_group;
    std::vector<Interval>& taken = budgets[group];
    const int max_unavailable = std::max(1, job.max_unavailable);
    std::optional<Candidate> chosen;
    for (const Candidate& c : Candidates(job, p.schedule, now, drain_at, taken)) {
      if (Fits({c.stop, c.stop + DownTime(job, c.action)}, taken, max_unavailable)) {
        chosen = c;
        break;
      }
    }
    if (!chosen) {
      plan.problems.push_back(fmt::format(
          "job {}: disruption budget '{}' (maxUnavailable {}) leaves no window before the drain; it stops at the drain",
          job.name, group, max_unavailable));
      chosen = Candidate{DrainAction::kStopAndLose, drain_at, p.schedule.LostAt(drain_at)};
    }
    step.action = chosen->action;
    step.stop_at = chosen->stop;
    step.lost_work = chosen->lost;
    step.resume_at = chosen->stop + DownTime(job, chosen->action);
    taken.push_back({step.stop_at, step.resume_at});

    // Target: same capacity type first, then the fewest free GPUs left.
    const CapacityType here = nodes[p.node].capacity;
    std::optional<std::size_t> best;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      if (drained[n] || free[n] < job.gpu_count || !CanHost(nodes[n], job)) continue;
      if (!best) {
        best = n;
        continue;
      }
      const auto key = [&](std::size_t m) { return std::make_pair(nodes[m].capacity != here, free[m]); };
      if (key(n) < key(*best)) best = n;
    }
    if (best) {
      free[*best] -= job.gpu_count;
      step.target = best;
    } else {
      plan.problems.push_back(
          fmt::format("job {}: no node has {} free GPUs now; it waits for capacity", job.name, job.gpu_count));
    }
    plan.lost_gpu_hours += step.lost_work.count() / 3600 * job.gpu_count;
    plan.downtime_gpu_hours += (step.resume_at - step.stop_at).count() / 3600 * job.gpu_count;
    plan.steps.push_back(step);
  }
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const DrainStep& a, const DrainStep& b) { return a.stop_at < b.stop_at; });
  for (std::size_t i = 0; i < plan.steps.size(); ++i) plan.steps[i].order = static_cast<int>(i) + 1;
  return plan;
}

}  // namespace gpufit

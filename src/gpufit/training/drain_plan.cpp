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
  int pods = 1;  // pods down during it
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

// Whether the eviction that starts x is allowed: fewer than max_unavailable pods of the
// budget down meanwhile (counting every interval that overlaps x: cautious).
bool Fits(const Interval& x, const std::vector<Interval>& taken, int max_unavailable) {
  int down = 0;
  for (const Interval& i : taken) {
    if (x.from < i.to && i.from < x.to) down += i.pods;
  }
  return down < max_unavailable;
}

std::vector<std::size_t> PodNodes(const JobPlacement& p) {
  std::vector<std::size_t> out{p.node};
  out.insert(out.end(), p.other_pods.begin(), p.other_pods.end());
  return out;
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
    const std::vector<std::size_t> on = PodNodes(*running[j]);
    if (on.size() != static_cast<std::size_t>(jobs[j].pods)) {
      return InvalidArgument("job {}: {} nodes placed for {} pods", jobs[j].name, on.size(), jobs[j].pods);
    }
    for (const std::size_t n : on) {
      if (n >= nodes.size()) return InvalidArgument("job {}: placed on an unknown node", jobs[j].name);
      free[n] -= jobs[j].gpu_count;
    }
  }

  DrainPlan plan{
      .now = now, .drain_at = drain_at, .steps = {}, .problems = {}, .lost_gpu_hours = 0, .downtime_gpu_hours = 0};
  std::vector<std::size_t> moving;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (!running[j]) continue;
    const std::vector<std::size_t> on = PodNodes(*running[j]);
    if (std::any_of(on.begin(), on.end(), [&](std::size_t n) { return drained[n]; })) moving.push_back(j);
  }
  // Biggest first for targets; the job order otherwise.
  std::stable_sort(moving.begin(), moving.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].TotalGpus() > jobs[b].TotalGpus(); });

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
                   .order = 0,
                   .pod_nodes = {},
                   .budget_blocks_eviction = false};
    if (p.schedule.Finish() <= drain_at) {
      plan.steps.push_back(step);
      continue;
    }
    const std::string group = job.disruption_group.empty() ? "job/" + job.name : job.disruption_group;
    std::vector<Interval>& taken = budgets[group];
    std::optional<Candidate> chosen;
    if (job.max_unavailable <= 0) {
      // No eviction is ever allowed: the least-waste stop, made by the job's owner.
      chosen = Candidates(job, p.schedule, now, drain_at, {}).front();
      step.budget_blocks_eviction = true;
    } else {
      for (const Candidate& c : Candidates(job, p.schedule, now, drain_at, taken)) {
        if (Fits({c.stop, c.stop + DownTime(job, c.action), job.pods}, taken, job.max_unavailable)) {
          chosen = c;
          break;
        }
      }
    }
    if (!chosen) {
      plan.problems.push_back(fmt::format(
          "job {}: disruption budget '{}' (maxUnavailable {}) leaves no window before the drain; it stops at the drain",
          job.name, group, job.max_unavailable));
      chosen = Candidate{DrainAction::kStopAndLose, drain_at, p.schedule.LostAt(drain_at)};
    }
    step.action = chosen->action;
    step.stop_at = chosen->stop;
    step.lost_work = chosen->lost;
    step.resume_at = chosen->stop + DownTime(job, chosen->action);
    taken.push_back({step.stop_at, step.resume_at, job.pods});
    if (step.budget_blocks_eviction) {
      const double at_h = step.stop_at.count() / 3600;
      const std::string first =
          step.action == DrainAction::kAfterCheckpoint
              ? fmt::format("let the periodic checkpoint end at {:.3f} h", at_h)
          : step.action == DrainAction::kEmergencyCheckpoint
              ? fmt::format("write a checkpoint at {:.3f} h", at_h)
              : fmt::format(
                    "no checkpoint ends before the drain: stop at {:.3f} h losing {:.1f} min (or wait for "
                    "its next checkpoint, delaying the drain)",
                    at_h, step.lost_work.count() / 60);
      const std::string budget =
          job.disruption_group.empty() ? std::string("its PodDisruptionBudget") : "PodDisruptionBudget '" + group + "'";
      plan.problems.push_back(fmt::format(
          "job {}: {} has maxUnavailable 0, so the drain cannot evict {} and waits. Plan: {}, then stop {} yourself "
          "(suspend or delete the job: not an eviction), or relax the budget to maxUnavailable >= 1 for the drain; "
          "otherwise the drain waits",
          job.name, budget, job.pods > 1 ? fmt::format("any of its {} pods", job.pods) : std::string("its pod"), first,
          job.pods > 1 ? fmt::format("all {} pods together", job.pods) : std::string("the job")));
    }

    // Targets for the pods on drained nodes: same capacity type first, then the fewest free
    // GPUs left. Pods on nodes not drained restart in place.
    std::vector<std::size_t> placed = PodNodes(p);
    std::vector<int> trial = free;
    int homeless = 0;
    for (std::size_t& at : placed) {
      if (!drained[at]) continue;
      const CapacityType here = nodes[at].capacity;
      std::optional<std::size_t> best;
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        if (drained[n] || trial[n] < job.gpu_count || !CanHost(nodes[n], job)) continue;
        const auto key = [&](std::size_t m) { return std::make_pair(nodes[m].capacity != here, trial[m]); };
        if (!best || key(n) < key(*best)) best = n;
      }
      if (!best) {
        ++homeless;
        continue;
      }
      trial[*best] -= job.gpu_count;
      if (!step.target) step.target = best;
      at = *best;
    }
    if (homeless == 0) {
      free = std::move(trial);
      step.pod_nodes = std::move(placed);
    } else {
      step.target.reset();
      plan.problems.push_back(
          job.pods > 1
              ? fmt::format("job {}: no room now for {} of its {} pods ({} GPUs each); the gang waits for "
                            "capacity",
                            job.name, homeless, job.pods, job.gpu_count)
              : fmt::format("job {}: no node has {} free GPUs now; it waits for capacity", job.name, job.gpu_count));
    }
    plan.lost_gpu_hours += step.lost_work.count() / 3600 * job.TotalGpus();
    plan.downtime_gpu_hours += (step.resume_at - step.stop_at).count() / 3600 * job.TotalGpus();
    plan.steps.push_back(step);
  }
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const DrainStep& a, const DrainStep& b) { return a.stop_at < b.stop_at; });
  for (std::size_t i = 0; i < plan.steps.size(); ++i) plan.steps[i].order = static_cast<int>(i) + 1;
  return plan;
}

}  // namespace gpufit

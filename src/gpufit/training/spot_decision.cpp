#include "gpufit/training/spot_decision.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>

#include "gpufit/training/checkpoint.h"

namespace gpufit {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double Hours(Seconds s) { return s.count() / 3600; }

// Failure-free run time with checkpoints every tau.
Seconds FailureFreeWall(const TrainingJob& job, Seconds tau) {
  if (job.checkpointing == Checkpointing::kNone) return job.work;
  return job.work + std::ceil(job.work / tau - 1e-9) * job.checkpoint_write;
}

// Most one interruption can cost: the rework, a partial write, the restart.
Seconds WorstInterruption(const TrainingJob& job, const RunOutlook& o) {
  const Seconds delta = job.checkpointing == Checkpointing::kNone ? Seconds{0} : job.checkpoint_write;
  return o.interval + delta + job.restore;
}

double InterruptionsPerSecond(const RunOutlook& o) {
  const double lost = std::isfinite(o.mtbf.count()) ? 1 / o.mtbf.count() : 0;
  return lost + o.noticed_per_hour / 3600;
}

// Bound on P(missing the deadline) when the run starts at `start` (see the header).
double MissRisk(const TrainingJob& job, const RunOutlook& o, Seconds start) {
  if (!job.deadline) return 0;
  const Seconds window = *job.deadline - start;
  const Seconds slack = window - FailureFreeWall(job, o.interval);
  if (slack < Seconds{0}) return 1;
  const double per_interruption = WorstInterruption(job, o).count();
  return PoissonTailAbove(InterruptionsPerSecond(o) * window.count(), slack.count() / per_interruption);
}

// Whether a run checkpointing every tau stays within `slack` when nothing interrupts it:
// its writes plus the one interval of unsaved work at risk.
bool WritesFit(const TrainingJob& job, Seconds tau, Seconds slack) {
  return tau > Seconds{0} && std::ceil(job.work / tau - 1e-9) * job.checkpoint_write + tau <= slack;
}

// Room kept after a switch: n worst-case interruptions, n the fewest whose excess has
// probability <= max_risk over the on-demand phase; returns {margin, that probability}.
std::pair<Seconds, double> SwitchMargin(const TrainingJob& job, const RunOutlook& od, double max_risk) {
  const Seconds phase = FailureFreeWall(job, od.interval) + job.checkpoint_write + job.restore;
  const double mean = InterruptionsPerSecond(od) * phase.count();
  for (int n = 0;; ++n) {
    const double risk = PoissonTailAbove(mean, n);
    if (risk <= max_risk || n >= 50) return {static_cast<double>(n) * WorstInterruption(job, od), risk};
  }
}

}  // namespace

const char* SpotChoiceName(SpotChoice c) {
  switch (c) {
    case SpotChoice::kOnDemand:
      return "on-demand";
    case SpotChoice::kSpot:
      return "spot";
    case SpotChoice::kSpotWithFallback:
      return "spot-with-fallback";
  }
  return "?";
}

double PoissonTailAbove(double mean, double x) {
  if (mean <= 0) return 0;
  // P(N <= floor(x)) by summing the pmf in log space; the tail is its complement.
  const double n_max = std::floor(x);
  if (n_max < 0) return 1;
  if (n_max > mean + 40 * std::sqrt(mean) + 40) return 0;
  double cdf = 0;
  for (double n = 0; n <= n_max; ++n) cdf += std::exp(n * std::log(mean) - mean - std::lgamma(n + 1));
  return std::max(0.0, 1 - cdf);
}

RunOutlook Outlook(const TrainingJob& job, CapacityType capacity, const InterruptionModel& model,
                   const GpuPrices& prices, std::optional<Seconds> interval) {
  RunOutlook o;
  o.capacity = capacity;
  // A gang stops when any of its GPUs fails or any of its pods' nodes is reclaimed: the
  // rates add up over all of them (one pod per node).
  const double hw_rate = job.TotalGpus() / (model.gpu_mtbf_hours * 3600);  // per second
  double spot_rate = 0;
  Seconds notice{0};
  if (capacity == CapacityType::kSpot) {
    const SpotMarket& market = model.SpotFor(job.gpu_model);
    spot_rate = job.pods * market.interruptions_per_hour / 3600;
    notice = market.notice;
  }
  const bool can_checkpoint = job.checkpointing != Checkpointing::kNone;
  o.uses_notice = spot_rate > 0 && job.checkpointing == Checkpointing::kTransparent &&
                  job.checkpoint_write + model.emergency_margin <= notice;
  const double losing_rate = hw_rate + (o.uses_notice ? 0 : spot_rate);
  o.noticed_per_hour = o.uses_notice ? spot_rate * 3600 : 0;
  o.mtbf = Seconds{losing_rate > 0 ? 1 / losing_rate : kInf};

  Seconds wall{0};
  if (!can_checkpoint) {
    o.interval = job.work;
    wall = DalyWallTime(job.work, job.work, Seconds{0}, job.restore, o.mtbf);
  } else {
    o.interval =
        std::isfinite(o.mtbf.count()) ? std::min(DalyInterval(job.checkpoint_write, o.mtbf), job.work) : job.work;
    if (interval) o.interval = std::min(*interval, job.work);
    if (std::isfinite(o.mtbf.count())) o.young_interval = YoungInterval(job.checkpoint_write, o.mtbf);
    wall = DalyWallTime(job.work, o.interval, job.checkpoint_write, job.restore, o.mtbf);
    if (o.uses_notice) {
      const double busy = spot_rate * (job.checkpoint_write + job.restore).count();
      wall = busy < 1 ? wall / (1 - busy) : Seconds{kInf};
    }
  }
  o.expected_wall = wall;
  o.expected_interruptions = wall.count() * (hw_rate + spot_rate);
  const double gpus = job.TotalGpus();  // every pod of a gang stops, redoes and is billed
  // Daly's model writes T_s / tau checkpoints (a fraction for a short last segment): the
  // failure-free run and the loss use the same count, so the loss is >= 0 by construction.
  const Seconds free_wall = can_checkpoint ? job.work + (job.work / o.interval) * job.checkpoint_write : job.work;
  o.checkpoint_gpu_hours = gpus * Hours(free_wall - job.work);
  o.expected_lost_gpu_hours = std::max(0.0, gpus * Hours(wall - free_wall));  // max: rounding only
  const Usd price = capacity == CapacityType::kSpot ? prices.spot_per_gpu_hour : prices.on_demand_per_gpu_hour;
  o.expected_cost = Usd{gpus * Hours(wall) * price.value};
  return o;
}

std::optional<Seconds> LatestSwitch(const TrainingJob& job, Seconds committed, Seconds on_demand_interval,
                                    Seconds margin) {
  if (!job.deadline) return std::nullopt;
  TrainingJob rest = job;
  rest.work = job.work - committed;
  const Seconds stop = job.checkpointing == Checkpointing::kTransparent ? job.checkpoint_write : Seconds{0};
  return *job.deadline - FailureFreeWall(rest, on_demand_interval) - stop - job.restore - margin;
}

SpotDecision DecideSpot(const TrainingJob& job, const InterruptionModel& model, const GpuPrices& prices,
                        const SpotDecisionOptions& options) {
  SpotDecision d;
  d.spot = Outlook(job, CapacityType::kSpot, model, prices);
  d.on_demand = Outlook(job, CapacityType::kOnDemand, model, prices);
  // A deadline job checkpoints at least every half of its slack on on-demand too, so one
  // failure cannot eat all of it.
  if (job.deadline && job.checkpointing != Checkpointing::kNone) {
    const Seconds slack = *job.deadline - job.submit - FailureFreeWall(job, d.on_demand.interval) - job.restore;
    if (slack > Seconds{0} && d.on_demand.interval > slack / 2 && WritesFit(job, slack / 2, slack)) {
      d.on_demand = Outlook(job, CapacityType::kOnDemand, model, prices, slack / 2);
    }
  }
  const double od_risk = MissRisk(job, d.on_demand, job.submit);
  const double spot_risk = MissRisk(job, d.spot, job.submit);
  const bool cheaper = d.spot.expected_cost < d.on_demand.expected_cost;
  const auto on_demand = [&](std::string why) {
    d.choice = SpotChoice::kOnDemand;
    d.miss_risk = od_risk;
    d.reason = std::move(why);
  };
  const auto [margin, fallback_risk] = SwitchMargin(job, d.on_demand, options.max_miss_risk);
  const std::optional<Seconds> latest = LatestSwitch(job, Seconds{0}, d.on_demand.interval, margin);
  if (!cheaper) {
    on_demand(fmt::format("spot is not cheaper: expected {:.2f} USD vs {:.2f} on-demand", d.spot.expected_cost.value,
                          d.on_demand.expected_cost.value));
  } else if (!job.deadline) {
    d.choice = SpotChoice::kSpot;
    d.reason = "no deadline; spot is cheaper";
  } else if (const Seconds slack = latest ? *latest - job.submit : Seconds{-1};
             slack >= Seconds{0} && (job.checkpointing == Checkpointing::kNone
                                         ? slack >= d.spot.expected_wall
                                         : WritesFit(job, std::min(d.spot.interval, slack / 2), slack))) {
    // With a deadline, a switch that is only made when needed costs nothing until then; it
    // is only worth it when the job can save work before the slack is gone.
    d.choice = SpotChoice::kSpotWithFallback;
    if (job.checkpointing != Checkpointing::kNone && d.spot.interval > slack / 2) {
      d.spot = Outlook(job, CapacityType::kSpot, model, prices, slack / 2);
    }
    d.switch_margin = margin;
    d.latest_switch = latest;
    d.miss_risk = fallback_risk;
    d.reason = fmt::format(
        "deadline: on spot, switching to on-demand when slack runs out (plain spot's miss risk bound {:.2g})",
        spot_risk);
  } else if (spot_risk <= options.max_miss_risk) {
    d.choice = SpotChoice::kSpot;
    d.miss_risk = spot_risk;
    d.reason = fmt::format("too little slack to switch; deadline-miss risk on spot at most {:.2g}", spot_risk);
  } else {
    on_demand(fmt::format("deadline too close for spot (risk bound {:.2g}) and for a switch", spot_risk));
  }
  if (d.choice != SpotChoice::kOnDemand) {
    d.expected_saving = Usd{d.on_demand.expected_cost.value - d.spot.expected_cost.value};
  }
  return d;
}

}  // namespace gpufit

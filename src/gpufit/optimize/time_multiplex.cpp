#include "gpufit/optimize/time_multiplex.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpufit/training/checkpoint.h"

namespace gpufit {
namespace {

constexpr double kDay = 86400;

double TimeOfDay(const Telemetry& t, std::size_t k) {
  const double s = std::fmod(t.start_s + static_cast<double>(k) * t.step_s, kDay);
  return s < 0 ? s + kDay : s;
}

bool Excluded(const std::vector<std::size_t>& excluded, std::size_t i) {
  return std::find(excluded.begin(), excluded.end(), i) != excluded.end();
}

int Alive(const Telemetry& t, std::size_t k, const std::vector<std::size_t>& excluded) {
  int n = 0;
  for (std::size_t i = 0; i < t.pods.size(); ++i)
    n += k >= t.pods[i].first && k <= t.pods[i].last && !Excluded(excluded, i);
  return n;
}

}  // namespace

std::string ClockTime(double seconds_of_day) {
  const auto s = static_cast<long>(std::fmod(std::fmod(seconds_of_day, kDay) + kDay, kDay));
  return fmt::format("{:02d}:{:02d}", s / 3600, (s % 3600) / 60);
}

int GpusNeededAt(const Telemetry& telemetry, std::size_t k, double target_utilization,
                 const std::vector<std::size_t>& excluded) {
  double duty = 0;
  bool alive = false;
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i) {
    const PodSeries& p = telemetry.pods[i];
    if (k < p.first || k > p.last || Excluded(excluded, i)) continue;
    alive = true;
    duty += p.gpu_util_pct[k];
  }
  if (!alive) return 0;
  return std::max(1, static_cast<int>(std::ceil(duty / (100.0 * target_utilization) - 1e-9)));
}

namespace {

// Per pod of `t`, an index shared by the pods of one workload (a pod alone: its own).
std::vector<std::size_t> WorkloadIndex(const Telemetry& t, const std::map<std::string, std::string>& by_pod) {
  std::map<std::string, std::size_t> ids;
  std::vector<std::size_t> out;
  for (const PodSeries& p : t.pods) {
    const auto it = by_pod.find(p.pod);
    const std::string key = it == by_pod.end() || it->second.empty() ? "pod:" + p.pod : "workload:" + it->second;
    out.push_back(ids.try_emplace(key, ids.size()).first->second);
  }
  return out;
}

// GPUs the alive workloads' kept replicas need for their memory at sample k.
int MemoryNeededAt(const Telemetry& t, std::size_t k, double gpu_memory_mib, const std::vector<std::size_t>& excluded,
                   const std::vector<std::size_t>& workload, std::vector<double>& scratch) {
  if (!(gpu_memory_mib > 0)) return 0;
  scratch.assign(t.pods.size(), 0.0);
  for (std::size_t i = 0; i < t.pods.size(); ++i) {
    const PodSeries& p = t.pods[i];
    if (k < p.first || k > p.last || Excluded(excluded, i) || !std::isfinite(p.fb_used_mib[k])) continue;
    scratch[workload[i]] = std::max(scratch[workload[i]], static_cast<double>(p.fb_used_mib[k]));
  }
  double sum = 0;
  for (double m : scratch) sum += m;
  return static_cast<int>(std::ceil(sum / gpu_memory_mib - 1e-9));
}

int NeededAt(const TimeMultiplexPlan& plan, const Telemetry& t, std::size_t k, const std::vector<std::size_t>& workload,
             std::vector<double>& scratch) {
  return std::max(GpusNeededAt(t, k, plan.target_utilization, plan.excluded_pods),
                  MemoryNeededAt(t, k, plan.gpu_memory_mib, plan.excluded_pods, workload, scratch));
}

}  // namespace

bool LendingAt(const TimeMultiplexPlan& plan, const Telemetry& telemetry, std::size_t k) {
  if (!plan.has_window || plan.lent_gpus <= 0) return false;
  const double since = std::fmod(TimeOfDay(telemetry, k) - plan.window_start_hour * 3600.0 + kDay, kDay);
  return since < plan.window_hours * 3600.0 - plan.lead_s;
}

Result<TimeMultiplexPlan> PlanTimeMultiplex(const Telemetry& telemetry, const std::vector<TrainingJob>& jobs,
                                            const TimeMultiplexOptions& options) {
  if (!(options.target_utilization > 0 && options.target_utilization <= 1))
    return InvalidArgument("target utilization must be in (0, 1], got {}", options.target_utilization);
  if (!(options.cold_start_s >= 0) || !std::isfinite(options.cold_start_s))
    return InvalidArgument("cold start must be >= 0 s, got {}", options.cold_start_s);
  if (options.min_window_hours < 1 || options.min_window_hours > 23)
    return InvalidArgument("minimum night window must be 1..23 hours, got {}", options.min_window_hours);
  if (telemetry.samples == 0 || telemetry.pods.empty()) return InvalidArgument("time-multiplexing: no telemetry");
  if (options.fleet_gpus < 0) return InvalidArgument("fleet must be >= 0 GPUs, got {}", options.fleet_gpus);
  TimeMultiplexPlan plan;
  plan.target_utilization = options.target_utilization;
  plan.excluded_pods = options.excluded_pods;
  plan.gpu_memory_mib = options.gpu_memory_mib;
  plan.workload_by_pod = options.workload_by_pod;
  const std::vector<std::size_t> workload = WorkloadIndex(telemetry, plan.workload_by_pod);
  std::vector<double> scratch;
  plan.needed_by_hour.fill(-1);
  std::array<std::size_t, 24> samples_in_hour{};
  for (std::size_t k = 0; k < telemetry.samples; ++k) {
    plan.fleet_gpus = std::max(plan.fleet_gpus, Alive(telemetry, k, options.excluded_pods));
    const auto hour = static_cast<std::size_t>(TimeOfDay(telemetry, k) / 3600.0) % 24;
    ++samples_in_hour[hour];
    plan.needed_by_hour[hour] = std::max(plan.needed_by_hour[hour], NeededAt(plan, telemetry, k, workload, scratch));
  }
  if (options.fleet_gpus > 0) plan.fleet_gpus = options.fleet_gpus;
  // Hours with fewer than half the median observed hour's samples are not observed.
  std::vector<std::size_t> counts;
  for (std::size_t n : samples_in_hour)
    if (n > 0) counts.push_back(n);
  std::sort(counts.begin(), counts.end());
  const std::size_t median = counts.empty() ? 0 : counts[counts.size() / 2];
  for (std::size_t h = 0; h < 24; ++h)
    if (2 * samples_in_hour[h] < median) plan.needed_by_hour[h] = -1;
  for (int n : plan.needed_by_hour) plan.peak_needed = std::max(plan.peak_needed, n);
  plan.free_all_day = std::max(0, plan.fleet_gpus - plan.peak_needed);

  // The window: every start hour and length, wrapping midnight, every hour observed.
  long best_value = 0;
  for (int start = 0; start < 24; ++start) {
    int worst = 0;
    for (int len = 1; len <= 23; ++len) {
      const int n = plan.needed_by_hour[static_cast<std::size_t>((start + len - 1) % 24)];
      if (n < 0) break;
      worst = std::max(worst, n);
      if (len < options.min_window_hours) continue;
      const long value = static_cast<long>(plan.fleet_gpus - worst - plan.free_all_day) * len;
      if (value > best_value || (value == best_value && value > 0 && len > plan.window_hours)) {
        best_value = value;
        plan.has_window = true;
        plan.window_start_hour = start;
        plan.window_hours = len;
        plan.lent_gpus = plan.fleet_gpus - worst;
      }
    }
  }
  if (!plan.has_window) {
    plan.evidence = fmt::format(
        "no night trough: over every window of >= {} observed hours the fleet needs its peak ({} of {} GPUs); {} GPUs "
        "are free all day",
        options.min_window_hours, plan.peak_needed, plan.fleet_gpus, plan.free_all_day);
    for (const TrainingJob& j : jobs) plan.not_lent.push_back(j.name + ": no night window");
    return plan;
  }
  for (int h = 0; h < plan.window_hours; ++h)
    plan.night_free_gpu_hours +=
        plan.fleet_gpus - plan.needed_by_hour[static_cast<std::size_t>((plan.window_start_hour + h) % 24)];

  // Jobs: most GPUs first, then by name.
  std::vector<std::size_t> order(jobs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (jobs[a].gpu_count != jobs[b].gpu_count) return jobs[a].gpu_count > jobs[b].gpu_count;
    return jobs[a].name < jobs[b].name;
  });
  int left = plan.lent_gpus;
  double longest_write = 0;
  const double window_s = plan.window_hours * 3600.0;
  for (std::size_t i : order) {
    const TrainingJob& j = jobs[i];
    if (j.checkpointing == Checkpointing::kNone) {
      plan.not_lent.push_back(j.name + ": cannot checkpoint, so it would lose its work every morning");
    } else if (!j.gpu_model.empty() && !options.gpu_id.empty() && j.gpu_model != options.gpu_id) {
      plan.not_lent.push_back(fmt::format("{}: needs {}, the fleet has {}", j.name, j.gpu_model, options.gpu_id));
    } else if (j.checkpoint_write.count() + j.restore.count() + options.cold_start_s >= window_s / 2) {
      plan.not_lent.push_back(fmt::format(
          "{}: checkpoint write {:.0f} s + restore {:.0f} s + inference cold start {:.0f} s take half of the {} h "
          "window or more",
          j.name, j.checkpoint_write.count(), j.restore.count(), options.cold_start_s, plan.window_hours));
    } else if (j.gpu_count > left) {
      plan.not_lent.push_back(
          fmt::format("{}: needs {} GPUs, {} of the {} lent are left", j.name, j.gpu_count, left, plan.lent_gpus));
    } else {
      left -= j.gpu_count;
      longest_write = std::max(longest_write, j.checkpoint_write.count());
      plan.jobs.push_back({.job = i,
                           .name = j.name,
                           .gpus = j.gpu_count,
                           .checkpoint_interval = Seconds{0},
                           .checkpoint_write = j.checkpoint_write,
                           .nights = 0});
    }
  }
  // GPUs go back a cold start before the window ends, to the minute; the queue drains the
  // longest checkpoint write before that, so every job saves before its GPUs go back.
  plan.lead_s = std::ceil(options.cold_start_s / 60.0) * 60.0;
  plan.drain_before_end_s = std::ceil(longest_write / 60.0) * 60.0;
  const double lend_s = std::max(0.0, window_s - plan.lead_s);
  plan.lent_gpu_hours_per_night = plan.lent_gpus * lend_s / 3600.0;
  for (LentJob& l : plan.jobs) {
    const TrainingJob& j = jobs[l.job];
    l.checkpoint_interval = DalyInterval(j.checkpoint_write, Seconds{lend_s});
    // Work done per night: from the restore to the drain, the compute between checkpoints;
    // a job that cannot save on notice (application checkpoints) also loses the work since
    // its last checkpoint, half an interval on average.
    const double tau = std::max(1.0, l.checkpoint_interval.count());
    const double run = lend_s - plan.drain_before_end_s - j.restore.count();
    const double lost = j.checkpointing == Checkpointing::kTransparent ? 0 : 0.5 * tau;
    const double per_night = std::max(0.0, run * tau / (tau + j.checkpoint_write.count()) - lost);
    l.nights = static_cast<int>(std::ceil(j.work.count() / std::max(per_night, 1.0)));
  }
  plan.evidence = fmt::format(
      "fleet {} GPUs; GPUs needed = ceil(sum of duty / {:.0f}%) per sample{}, the hour-of-day "
      "curve its maximum per hour; {:02d}:00-{:02d}:00 UTC needs at most {} GPUs, so {} are lendable for {} h less "
      "a {:.0f} s lead (the inference cold start)",
      plan.fleet_gpus, 100 * options.target_utilization,
      plan.gpu_memory_mib > 0
          ? fmt::format(", or more where the workloads' kept replicas need more GPUs of {:.0f} MiB for their memory",
                        plan.gpu_memory_mib)
          : std::string(),
      plan.window_start_hour, (plan.window_start_hour + plan.window_hours) % 24, plan.fleet_gpus - plan.lent_gpus,
      plan.lent_gpus, plan.window_hours, plan.lead_s);
  return plan;
}

TimeMultiplexReplay ReplayTimeMultiplex(const Telemetry& telemetry, const TimeMultiplexPlan& plan) {
  TimeMultiplexReplay r;
  r.samples = telemetry.samples;
  r.min_spare_gpus = plan.fleet_gpus;
  const std::vector<std::size_t> workload = WorkloadIndex(telemetry, plan.workload_by_pod);
  std::vector<double> scratch;
  for (std::size_t k = 0; k < telemetry.samples; ++k) {
    const bool lending = LendingAt(plan, telemetry, k);
    const int lent = lending ? plan.lent_gpus : 0;
    r.lent_samples += lending;
    r.lent_gpu_hours += lent * telemetry.step_s / 3600.0;
    const int spare = plan.fleet_gpus - NeededAt(plan, telemetry, k, workload, scratch) - lent;
    if (!lending) {
      r.short_without_lending += spare < 0;
      continue;
    }
    r.over_capacity += spare < 0;
    r.min_spare_gpus = std::min(r.min_spare_gpus, spare);
  }
  return r;
}

}  // namespace gpufit

#include "gpufit/optimize/time_multiplex.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/telemetry_readers.h"

namespace gpufit {
namespace {

// Two days at 10-minute steps from midnight UTC: 10 pods; by day (08:00-20:00) each runs at
// 63% duty, at night at 7%. Needed = ceil(10 x 63 / 70) = 9 by day, ceil(10 x 7 / 70) = 1
// at night.
Telemetry DayNight() {
  Telemetry t;
  t.start_s = 1'767'225'600;  // 2026-01-01T00:00:00Z
  t.step_s = 600;
  t.samples = 2 * 144;
  for (int i = 0; i < 10; ++i) {
    PodSeries p;
    p.pod = "inf/p" + std::to_string(i);
    p.first = 0;
    p.last = t.samples - 1;
    for (std::size_t k = 0; k < t.samples; ++k) {
      const double hour = std::fmod(static_cast<double>(k) * 600, 86400) / 3600;
      p.gpu_util_pct.push_back(hour >= 8 && hour < 20 ? 63.0f : 7.0f);
      p.fb_used_mib.push_back(10000);
    }
    t.pods.push_back(p);
  }
  return t;
}

TEST(TimeMultiplex, LendsTheNightTroughAndTheReplayHolds) {
  const Telemetry t = DayNight();
  const std::vector<TrainingJob> jobs = {
      {.name = "big", .gpu_count = 8, .work = Seconds{20 * 3600}, .checkpoint_write = Seconds{120}},
      {.name = "small", .gpu_count = 1, .work = Seconds{3600}, .checkpoint_write = Seconds{30}},
      {.name = "nosave",
       .gpu_count = 1,
       .work = Seconds{3600},
       .checkpoint_write = Seconds{30},
       .checkpointing = Checkpointing::kNone},
      {.name = "other-gpu", .gpu_count = 1, .gpu_model = "l4", .work = Seconds{3600}},
      // Saving and restoring take 7 h of a 12-hour window: not lent.
      {.name = "slow-save",
       .gpu_count = 1,
       .work = Seconds{3600},
       .checkpoint_write = Seconds{4 * 3600},
       .restore = Seconds{3 * 3600}}};
  const Result<TimeMultiplexPlan> p =
      PlanTimeMultiplex(t, jobs, {.cold_start_s = 45, .min_window_hours = 2, .gpu_id = "h100-80gb"});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->fleet_gpus, 10);
  for (int h = 0; h < 24; ++h) EXPECT_EQ(p->needed_by_hour[static_cast<std::size_t>(h)], h >= 8 && h < 20 ? 9 : 1) << h;
  EXPECT_EQ(p->free_all_day, 1);
  // The trough is 20:00-08:00 (12 h), 8 more GPUs than all day: 9 lent.
  ASSERT_TRUE(p->has_window);
  EXPECT_EQ(p->window_start_hour, 20);
  EXPECT_EQ(p->window_hours, 12);
  EXPECT_EQ(p->lent_gpus, 9);
  EXPECT_DOUBLE_EQ(p->night_free_gpu_hours, 12 * 9);
  // Lead: the cold start (45 s) to the minute; the drain: the longest write of the lent jobs
  // (120 s) before that.
  EXPECT_DOUBLE_EQ(p->lead_s, 60);
  EXPECT_DOUBLE_EQ(p->drain_before_end_s, 120);
  EXPECT_DOUBLE_EQ(p->lent_gpu_hours_per_night, 9 * (12 * 3600 - 60) / 3600.0);
  ASSERT_EQ(p->jobs.size(), 2u);
  EXPECT_EQ(p->jobs[0].name, "big");
  EXPECT_EQ(p->jobs[1].name, "small");
  ASSERT_EQ(p->not_lent.size(), 3u);
  EXPECT_EQ(std::count_if(p->not_lent.begin(), p->not_lent.end(),
                          [](const std::string& s) { return s.starts_with("slow-save: checkpoint write"); }),
            1);
  // Daly's interval for delta = 120 s and one interruption per lending window.
  const double m = 12 * 3600 - 60, d = 120;
  const double daly = std::sqrt(2 * d * m) * (1 + std::sqrt(d / (2 * m)) / 3 + d / (2 * m) / 9) - d;
  EXPECT_NEAR(p->jobs[0].checkpoint_interval.count(), daly, 1e-6);
  EXPECT_GE(p->jobs[0].nights, 2);  // 20 h of work in 12-hour nights

  const TimeMultiplexReplay r = ReplayTimeMultiplex(t, *p);
  EXPECT_EQ(r.over_capacity, 0u);
  EXPECT_EQ(r.min_spare_gpus, 0);
  // Lending from 20:00 to 07:59: samples at 20:00, 20:10, ..., 07:50 = 72 a night, two nights
  // (the first night is 00:00-07:50 of day one, 48 samples; then 20:00-07:50: 72; then 20:00-23:50: 24).
  EXPECT_EQ(r.lent_samples, 48u + 72u + 24u);
  // A plan that lends one GPU more overflows exactly at the day's samples inside the window:
  // none by construction; lending by day overflows every day sample.
  TimeMultiplexPlan greedy = *p;
  greedy.window_start_hour = 0;
  greedy.window_hours = 23;
  EXPECT_GT(ReplayTimeMultiplex(t, greedy).over_capacity, 0u);
}

TEST(TimeMultiplex, PlanFleetAndExcludedPods) {
  // The plan keeps 8 GPUs and pod 0 is CPU-starved (its own GPU): 9 pods remain. By day
  // ceil(9 x 63 / 70) = 9 > 8 (nothing free), at night ceil(9 x 7 / 70) = 1: 7 lent.
  const Telemetry t = DayNight();
  const Result<TimeMultiplexPlan> p = PlanTimeMultiplex(t, {}, {.fleet_gpus = 8, .excluded_pods = {0}});
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->fleet_gpus, 8);
  EXPECT_EQ(p->needed_by_hour[12], 9);
  EXPECT_EQ(p->needed_by_hour[2], 1);
  EXPECT_EQ(p->free_all_day, 0);
  EXPECT_EQ(p->lent_gpus, 7);
  // By day the 9 replicas' need exceeds the plan's 8 GPUs with nothing lent: the co-location
  // plan's business (its own replay), not the lending's. Lending never adds to it.
  const TimeMultiplexReplay r = ReplayTimeMultiplex(t, *p);
  EXPECT_EQ(r.over_capacity, 0u);
  EXPECT_EQ(r.short_without_lending, 144u);
  EXPECT_EQ(r.min_spare_gpus, 0);
}

TEST(TimeMultiplex, AnHourWithAStraySampleIsNotObserved) {
  // From 01:00 to 00:00 the next day at 10 minutes: hour 00 holds one sample, the others six.
  Telemetry t = DayNight();
  t.start_s += 3600;
  t.samples = 23 * 6 + 1;
  for (PodSeries& p : t.pods) {
    p.last = t.samples - 1;
    p.gpu_util_pct.resize(t.samples);
    p.fb_used_mib.resize(t.samples);
  }
  const Result<TimeMultiplexPlan> p = PlanTimeMultiplex(t, {});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->needed_by_hour[0], -1);
  EXPECT_EQ(p->needed_by_hour[1], 1);
  // The day pattern moved with the start (busy 09:00-21:00): the window cannot run through
  // the unobserved hour, so it is 01:00-09:00 (8 h), not 21:00-09:00.
  EXPECT_EQ(p->window_start_hour, 1);
  EXPECT_EQ(p->window_hours, 8);
}

TEST(TimeMultiplex, FlatDemandHasNoWindowAndBadOptionsAreErrors) {
  Telemetry t = DayNight();
  for (PodSeries& p : t.pods)
    for (float& u : p.gpu_util_pct) u = 50;
  const Result<TimeMultiplexPlan> p = PlanTimeMultiplex(t, {});
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->has_window);
  EXPECT_EQ(p->free_all_day, 10 - 8);  // ceil(500 / 70) = 8
  EXPECT_EQ(ReplayTimeMultiplex(t, *p).lent_samples, 0u);
  EXPECT_FALSE(PlanTimeMultiplex(t, {}, {.target_utilization = 0}));
  EXPECT_FALSE(PlanTimeMultiplex(t, {}, {.min_window_hours = 24}));
  EXPECT_FALSE(PlanTimeMultiplex(Telemetry{}, {}));
}

#if !defined(__SANITIZE_ADDRESS__)
TEST(TimeMultiplex, GenTd26NightIsLentAndNoInferenceSampleOverflows) {
  const std::filesystem::path dir = std::filesystem::path(testing::DataDir()) / "gentd26";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no GenTD26 data at " << dir;
  const Result<Telemetry> t = ReadTelemetry(dir.string());
  ASSERT_TRUE(t) << t.error().message;
  const Result<TimeMultiplexPlan> p = PlanTimeMultiplex(
      *t, {{.name = "ft", .gpu_count = 8, .work = Seconds{48 * 3600}, .checkpoint_write = Seconds{300}}});
  ASSERT_TRUE(p) << p.error().message;
  // The oracle: per sample, needed from the raw duty cycles; the fleet from pods alive.
  int fleet = 0;
  std::array<int, 24> curve;
  std::array<std::size_t, 24> count{};
  curve.fill(-1);
  for (std::size_t k = 0; k < t->samples; ++k) {
    double duty = 0;
    int alive = 0;
    for (const PodSeries& s : t->pods) {
      if (k < s.first || k > s.last) continue;
      ++alive;
      duty += s.gpu_util_pct[k];
    }
    fleet = std::max(fleet, alive);
    const int need = alive == 0 ? 0 : std::max(1, static_cast<int>(std::ceil(duty / 70.0 - 1e-9)));
    const auto h = static_cast<std::size_t>(std::fmod(t->start_s + static_cast<double>(k) * t->step_s, 86400) / 3600);
    curve[h] = std::max(curve[h], need);
    ++count[h];
  }
  // Hours with under half the median hour's samples do not count (GenTD26's 00h: one sample).
  std::vector<std::size_t> sorted(count.begin(), count.end());
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t h = 0; h < 24; ++h)
    if (2 * count[h] < sorted[12]) curve[h] = -1;
  EXPECT_EQ(curve[0], -1);
  EXPECT_EQ(p->fleet_gpus, fleet);
  EXPECT_EQ(p->needed_by_hour, curve);
  ASSERT_TRUE(p->has_window);
  double free = 0;
  int worst = 0;
  for (int h = 0; h < p->window_hours; ++h) {
    const int n = curve[static_cast<std::size_t>((p->window_start_hour + h) % 24)];
    free += fleet - n;
    worst = std::max(worst, n);
  }
  EXPECT_DOUBLE_EQ(p->night_free_gpu_hours, free);
  EXPECT_EQ(p->lent_gpus, fleet - worst);
  EXPECT_GT(p->night_free_gpu_hours, 0);
  ASSERT_EQ(p->jobs.size(), 1u);
  const TimeMultiplexReplay r = ReplayTimeMultiplex(*t, *p);
  EXPECT_EQ(r.over_capacity, 0u);  // the acceptance: no inference sample over capacity
  EXPECT_GT(r.lent_samples, 0u);
}
#endif

// Lending fits memory too: the same day/night duty, but each pod's model holds 30,000 MiB
// all day. By duty the night needs 1 GPU; by memory the ten kept replicas need
// ceil(10 x 30,000 / 81,920) = 4 GPUs, so 10 - 4 = 6 can be lent, not 9. With 60,000 MiB
// each they need ceil(600,000 / 81,920) = 8 at night (9 by day, by duty): 10 - 8 = 2 lent.
TEST(TimeMultiplex, LendingFitsTheKeptReplicasMemory) {
  Telemetry t = DayNight();
  for (PodSeries& p : t.pods) p.fb_used_mib.assign(t.samples, 30000);
  const Result<TimeMultiplexPlan> by_duty = PlanTimeMultiplex(t, {});
  ASSERT_TRUE(by_duty);
  EXPECT_EQ(by_duty->lent_gpus, 9);  // memory not judged
  const Result<TimeMultiplexPlan> p = PlanTimeMultiplex(t, {}, {.gpu_memory_mib = 81920});
  ASSERT_TRUE(p) << p.error().message;
  for (int h = 0; h < 24; ++h) EXPECT_EQ(p->needed_by_hour[static_cast<std::size_t>(h)], h >= 8 && h < 20 ? 9 : 4) << h;
  EXPECT_EQ(p->lent_gpus, 6);
  EXPECT_EQ(ReplayTimeMultiplex(t, *p).over_capacity, 0u);
  // The by-duty plan replayed under the memory rule: every lending sample is short.
  TimeMultiplexPlan judged = *by_duty;
  judged.gpu_memory_mib = 81920;
  const TimeMultiplexReplay r = ReplayTimeMultiplex(t, judged);
  EXPECT_GT(r.lent_samples, 0u);
  EXPECT_EQ(r.over_capacity, r.lent_samples);
  // Replicas of one workload count once (one kept replica): two workloads of five pods need
  // ceil(2 x 30,000 / 81,920) = 1 GPU by memory, so the duty rule decides again.
  std::map<std::string, std::string> workloads;
  for (const PodSeries& pod : t.pods) workloads[pod.pod] = pod.pod < "inf/p5" ? "a" : "b";
  const Result<TimeMultiplexPlan> grouped =
      PlanTimeMultiplex(t, {}, {.gpu_memory_mib = 81920, .workload_by_pod = workloads});
  ASSERT_TRUE(grouped);
  EXPECT_EQ(grouped->lent_gpus, 9);
  // Models too big to leave room: 60,000 MiB each need 8 GPUs at night, 9 by day (duty).
  for (PodSeries& pod : t.pods) pod.fb_used_mib.assign(t.samples, 60000);
  const Result<TimeMultiplexPlan> full = PlanTimeMultiplex(t, {}, {.gpu_memory_mib = 81920});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->needed_by_hour[2], 8);
  EXPECT_EQ(full->lent_gpus, 2);
}

}  // namespace
}  // namespace gpufit

// Walk-forward backtest of gpufit's replica schedule and of a per-node model cache on a
// request log of several days: fit on days 1..k, replay day k+1 (every real request, as
// logged), for every k from `first_fit_days` to the last day but one. The proof is about
// a day the schedule did not see.
//
// Days are UTC calendar days (midnight to midnight, from the first request's day to the
// last one's; days without requests count). Every policy is judged on the test day by
// the same replay (sim/request_replay.h), one request per replica at once, the SLO per
// day (a day meets it when its own share of requests within the bound reaches the target).
//
// The fitted schedule, per 5 s step of the day (a schedule that repeats daily, as KEDA's
// cron triggers run it):
//  1. each fit day gets gpufit's own schedule (policies.h: M/M/c per window, prewarm,
//     the hold, repair and trim by replay), fitted to that day alone;
//  2. the base is, per step, the highest of these over the last `recent_days` fit days
//     (the busiest recent day at that time of day: load moves by minutes between days,
//     and a week covers the weekly cycle);
//  3. the base is scaled by the observed growth g, ceil(g * base): g = exp(slope) of a
//     least-squares line through ln(requests per day) over the same recent days (days
//     without requests left out), at least 1 (a falling trend does not cut a schedule).
//     Scaling replicas by g serves g times the load at the same wait: g copies of the
//     fitted fleet, each fed one share of the traffic, wait as the original does, and
//     pooling them only shortens waits;
//  4. a warm floor (ScheduleRule): `live_floor` replicas in the steps where the base is
//     above 0, `idle_floor` (0 or 1) elsewhere; bursts land at minutes no fit day had them,
//     and with a wait bound below the cold start only a warm replica can take them. The
//     floor is chosen on the fit days by their own walk-forward: each of the last
//     `recent_days` fit days (with a day before it) is replayed on the schedule built, as
//     above, from the days before it; the rule meeting the SLO with a quarter of the
//     allowance in reserve (gpufit's planning margin) on the most of those days wins, the
//     fewest GPU-hours breaking ties. Floors tried: 0 up to the recent fit days' highest
//     static peak, scaled by g;
//  5. each level of the result is held for ReplicaHoldSeconds (policies.h: a dip shorter
//     than the hold is filled, a level reached is kept that long), since the highest of
//     several days' schedules, and the floors, can dip where none of them did.
// References on the test day: static peak = the constant count sized from the fit days
// (the highest of each fit day's fewest constant replicas meeting the SLO), replayed on the
// test day; clairvoyant = policies.h's reference computed on the test day itself (knows
// its arrivals, no cold starts). GPU-hours are the replica-hours each provisions over the
// test day's 24 h (the schedule's steps; static peak's count x 24 h; the clairvoyant's
// windows up to the day's last request).
//
// The model cache (model_cache.h): nodes are the replicas of the schedule in force (on a
// fit day the schedule fitted to it, on the test day the fitted schedule), caches start
// empty at each midnight. Its capacity is `cache_models`, or else chosen on the fit days:
// the knee (KneeCapacity, `cache_knee_share` of the hit rate with room for every model seen
// on the fit days). Load time saved on a test day = (loads with one model per node - loads
// with the cache) x `model_load_s`: against a node that keeps only the model on its GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/inference/demand.h"
#include "gpufit/inference/model_cache.h"
#include "gpufit/inference/policies.h"
#include "gpufit/ingest/files/lora_request_reader.h"

namespace gpufit {

// GenTD26's median base-model load, 22,718 ms over 7,531 loads
// (basemodel_update_latency_anon.csv; docs/inference.md): a replica's cold start and the
// time one model load takes, unless told otherwise.
inline constexpr double kGenTd26MedianModelLoadS = 22.718;

struct WalkForwardOptions {
  InferenceSlo slo{.metric = SloMetric::kWait, .seconds = 1, .target = 0.99};
  double cold_start_s = kGenTd26MedianModelLoadS;
  double window_s = 600;   // gpufit's decision window on each fit day
  int first_fit_days = 7;  // the first k (>= 1); test days are k + 1 .. the last day
  int recent_days = 7;     // days behind the base and the growth (>= 1)
  int cache_models = 0;    // > 0: this capacity on every day; 0: the knee of the fit days
  double cache_knee_share = 0.95;
  double model_load_s = kGenTd26MedianModelLoadS;
  double usd_per_gpu_hour = 0;  // 0: no USD figures
};

// One UTC day of a request log: arrivals in seconds since its midnight.
struct LogDay {
  std::int64_t day = 0;     // days since 1970-01-01
  std::string date;         // YYYY-MM-DD
  Demand demand;            // service times as logged, no prefill
  std::vector<int> models;  // per request: index into WalkForwardResult::models, -1 unknown
};

// Splits a log at UTC midnights into every day from the first request's to the last's.
// `models` receives each model name once, in order of first appearance.
std::vector<LogDay> SplitByUtcDay(const RequestLog& log, std::vector<std::string>* models);

// replicas(step) = max(floor, ceil(growth * base(step))), floor = live_floor where the base
// is above 0 (a recent day was served then), idle_floor elsewhere.
struct ScheduleRule {
  int live_floor = 0;
  int idle_floor = 0;
};

struct PolicyDay {
  double gpu_hours = 0;
  double slo_attainment = 1;
  bool slo_met = true;
  int max_replicas = 0;
};

struct TestDay {
  std::string date;
  int fit_days = 0;  // k: fitted on days 1..k, this is day k + 1
  std::size_t requests = 0;
  double growth = 1;                           // g applied to the base
  ScheduleRule rule;                           // chosen on the fit days
  int rule_days_met = 0, rule_days_tried = 0;  // its record on the fit days' own walk-forward
  std::vector<int> schedule;                   // replicas per 5 s step of the test day
  PolicyDay gpufit, static_peak, clairvoyant;
  int static_replicas = 0;
  int cold_starts = 0;  // gpufit's on the test day
  // The model cache.
  int cache_models = 0;       // capacity used (chosen on days 1..k unless given)
  double fit_hit_rate = 0;    // on the fit days, at that capacity
  CacheOutcome cache;         // on the test day, at that capacity
  CacheOutcome single_model;  // on the test day, one model per node
  double load_s_saved = 0;    // (single_model.misses - cache.misses) * model_load_s
};

struct WalkForwardResult {
  std::string source;
  WalkForwardOptions options;
  std::vector<std::string> dates;     // every day of the log
  std::vector<std::size_t> requests;  // per day
  std::vector<std::string> models;    // model names, by first appearance
  std::vector<TestDay> tests;         // one per k
  bool AllMet() const;                // gpufit met the SLO on every test day
};

// Errors: kInvalidArgument for options out of range (window_s < 60 or not a multiple of
// 5 s, first_fit_days < 1, recent_days < 1, cache_models < 0, SLO target not in (0, 1],
// seconds <= 0, cache_knee_share not in (0, 1], model_load_s < 0) or a log with fewer than
// first_fit_days + 1 days.
Result<WalkForwardResult> RunWalkForward(const RequestLog& log, const WalkForwardOptions& options);

std::string WalkForwardToJson(const WalkForwardResult& r);
std::string WalkForwardToMarkdown(const WalkForwardResult& r);

}  // namespace gpufit

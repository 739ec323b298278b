#include "gpufit/inference/walk_forward.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "gpufit/core/rfc3339.h"

namespace gpufit {
namespace {

constexpr double kDayS = 86400;
constexpr double kStepS = 5;  // the schedule's resolution: prewarm lead and cron minute both fit
constexpr auto kSteps = static_cast<std::size_t>(kDayS / kStepS);

// "YYYY-MM-DD" of a day number since 1970-01-01 (UTC).
std::string DateOf(std::int64_t day) { return FormatRfc3339(static_cast<double>(day) * kDayS).substr(0, 10); }

ReplicaPolicyInput InputFor(const LogDay& day, const WalkForwardOptions& o) {
  return {.demand = &day.demand,
          .concurrency = 1,
          .cold_start_s = o.cold_start_s,
          .slo = o.slo,
          .window_s = o.window_s,
          .step_s = kStepS,
          .max_replicas = 100000,
          .hold_s = -1};
}

ReplicaSchedule Steps(std::vector<int> counts) { return {.window_s = kStepS, .replicas = std::move(counts)}; }

double ProvisionedHours(const std::vector<int>& steps) {
  double sum = 0;
  for (const int c : steps) sum += c;
  return sum * kStepS / 3600;
}

// A fit day's own gpufit schedule on the 5 s grid of the day (0 after its last window),
// and its static peak count.
struct DayFit {
  std::vector<int> steps = std::vector<int>(kSteps, 0);
  int static_replicas = 0;
};

DayFit FitDay(const LogDay& day, const WalkForwardOptions& o) {
  DayFit fit;
  if (day.demand.trace.requests.empty()) return fit;
  const ReplicaPolicyInput in = InputFor(day, o);
  const PolicyOutcome g = GpufitSchedule(in);
  for (std::size_t s = 0; s < kSteps; ++s) {
    const auto at = static_cast<std::size_t>(static_cast<double>(s) * kStepS / g.schedule.window_s + 1e-9);
    fit.steps[s] = at < g.schedule.replicas.size() ? g.schedule.replicas[at] : 0;
  }
  fit.static_replicas = StaticPeak(in).schedule.replicas.front();
  return fit;
}

// exp(slope) of least squares through (day, ln requests), days with requests; at least 1.
double Growth(const std::vector<std::size_t>& per_day) {
  std::vector<std::pair<double, double>> xy;
  for (std::size_t d = 0; d < per_day.size(); ++d) {
    if (per_day[d] > 0) xy.emplace_back(static_cast<double>(d), std::log(static_cast<double>(per_day[d])));
  }
  if (xy.size() < 2) return 1;
  double mx = 0, my = 0;
  for (const auto& [x, y] : xy) {
    mx += x;
    my += y;
  }
  mx /= static_cast<double>(xy.size());
  my /= static_cast<double>(xy.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : xy) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  return std::max(1.0, std::exp(sxy / sxx));
}

// The base and growth for day j: from the last `recent` days before it.
struct Basis {
  std::vector<int> base = std::vector<int>(kSteps, 0);
  double growth = 1;
  int static_replicas = 0;  // the highest static peak of the recent days
};

Basis BasisFor(const std::vector<DayFit>& fits, const std::vector<std::size_t>& requests, std::size_t j, int recent) {
  Basis b;
  const std::size_t from = j > static_cast<std::size_t>(recent) ? j - static_cast<std::size_t>(recent) : 0;
  std::vector<std::size_t> counts;
  for (std::size_t d = from; d < j; ++d) {
    for (std::size_t s = 0; s < kSteps; ++s) b.base[s] = std::max(b.base[s], fits[d].steps[s]);
    counts.push_back(requests[d]);
    b.static_replicas = std::max(b.static_replicas, fits[d].static_replicas);
  }
  b.growth = Growth(counts);
  return b;
}

// The rules tried: warm floors in the live steps from 0 to the growth-scaled static peak
// of the recent fit days, and 0 or 1 replica elsewhere.
std::vector<ScheduleRule> CandidateRules(const Basis& b) {
  std::vector<ScheduleRule> rules;
  const int most = static_cast<int>(std::ceil(b.growth * b.static_replicas - 1e-9));
  for (int idle = 0; idle <= 1; ++idle)
    for (int live = idle; live <= std::max(idle, most); ++live)
      rules.push_back({.live_floor = live, .idle_floor = idle});
  return rules;
}

// The rule applied to the base, then each level held (policies.h, ReplicaHoldSeconds): the
// highest of several days' schedules, and the floors, dip where none of them did.
std::vector<int> Apply(const ScheduleRule& rule, const Basis& b, const WalkForwardOptions& o) {
  std::vector<int> steps(kSteps);
  for (std::size_t s = 0; s < kSteps; ++s) {
    const int floor = b.base[s] > 0 ? rule.live_floor : rule.idle_floor;
    steps[s] = std::max(floor, static_cast<int>(std::ceil(b.growth * b.base[s] - 1e-9)));
  }
  const LogDay none;
  const double hold_s = ReplicaHoldSeconds(InputFor(none, o));
  return ExpandSchedule(steps, 1, 0, static_cast<int>(std::ceil(hold_s / kStepS - 1e-9)));
}

std::vector<CacheRequest> CacheRequests(const LogDay& day) {
  std::vector<CacheRequest> out;
  out.reserve(day.models.size());
  for (std::size_t i = 0; i < day.models.size(); ++i)
    out.push_back({.arrival_s = day.demand.trace.requests[i].arrival_s,
                   .service_s = day.demand.times.service_s[i],
                   .model = day.models[i]});
  return out;
}

PolicyDay Judge(const LogDay& day, const WalkForwardOptions& o, const ReplicaSchedule& schedule, double gpu_hours,
                int* cold_starts = nullptr) {
  const ReplicaPolicyInput in = InputFor(day, o);
  const ReplayResult r =
      ReplayRequests(day.demand.trace, day.demand.times.service_s, {}, schedule, ReplayOptionsFor(in));
  if (cold_starts) *cold_starts = r.cold_starts;
  return {.gpu_hours = gpu_hours,
          .slo_attainment = r.slo_attainment,
          .slo_met = r.slo_attainment >= ReachableSloTarget(in),
          .max_replicas = r.max_replicas};
}

Result<void> Check(const WalkForwardOptions& o) {
  const double windows = o.window_s / kStepS;
  if (!(o.window_s >= 60) || windows != std::floor(windows) || o.window_s > kDayS)
    return InvalidArgument("window_s must be a multiple of 5 s from 60 s to a day, got {}", o.window_s);
  if (o.first_fit_days < 1) return InvalidArgument("first fit days must be >= 1, got {}", o.first_fit_days);
  if (o.recent_days < 1) return InvalidArgument("recent days must be >= 1, got {}", o.recent_days);
  if (o.cache_models < 0) return InvalidArgument("cache models must be >= 0, got {}", o.cache_models);
  if (!(o.slo.target > 0 && o.slo.target <= 1))
    return InvalidArgument("SLO target must be in (0, 1], got {}", o.slo.target);
  if (!(o.slo.seconds > 0)) return InvalidArgument("SLO seconds must be > 0, got {}", o.slo.seconds);
  if (!(o.cache_knee_share > 0 && o.cache_knee_share <= 1))
    return InvalidArgument("cache knee share must be in (0, 1], got {}", o.cache_knee_share);
  if (!(o.model_load_s >= 0) || !(o.cold_start_s >= 0) || !std::isfinite(o.model_load_s + o.cold_start_s))
    return InvalidArgument("model load and cold start seconds must be finite and >= 0");
  if (!(o.usd_per_gpu_hour >= 0)) return InvalidArgument("USD per GPU-hour must be >= 0");
  return {};
}

}  // namespace

std::vector<LogDay> SplitByUtcDay(const RequestLog& log, std::vector<std::string>* models) {
  std::vector<LogDay> days;
  if (log.requests.empty()) return days;
  const auto day_of = [](double t) { return static_cast<std::int64_t>(std::floor(t / kDayS)); };
  const std::int64_t first = day_of(log.requests.front().arrival_utc_s);
  const std::int64_t last = day_of(log.requests.back().arrival_utc_s);
  for (std::int64_t d = first; d <= last; ++d) {
    LogDay day{.day = d, .date = DateOf(d), .demand = {}, .models = {}};
    day.demand.trace.source = log.source + " " + day.date;
    day.demand.trace.origin_s = static_cast<double>(d) * kDayS;
    days.push_back(std::move(day));
  }
  std::map<std::string, int> index;
  for (const std::string& m : *models) index.emplace(m, static_cast<int>(index.size()));
  for (const LoggedRequest& r : log.requests) {
    LogDay& day = days[static_cast<std::size_t>(day_of(r.arrival_utc_s) - first)];
    day.demand.trace.requests.push_back(
        {.arrival_s = r.arrival_utc_s - day.demand.trace.origin_s, .input_tokens = 0, .output_tokens = 0});
    day.demand.times.service_s.push_back(r.service_s);
    int model = -1;
    if (!r.model.empty()) {
      const auto [it, added] = index.emplace(r.model, static_cast<int>(index.size()));
      if (added) models->push_back(r.model);
      model = it->second;
    }
    day.models.push_back(model);
  }
  return days;
}

bool WalkForwardResult::AllMet() const {
  return std::all_of(tests.begin(), tests.end(), [](const TestDay& t) { return t.gpufit.slo_met; });
}

Result<WalkForwardResult> RunWalkForward(const RequestLog& log, const WalkForwardOptions& o) {
  if (Result<void> ok = Check(o); !ok) return ok.error();
  WalkForwardResult out{.source = log.source, .options = o, .dates = {}, .requests = {}, .models = {}, .tests = {}};
  const std::vector<LogDay> days = SplitByUtcDay(log, &out.models);
  if (days.size() < static_cast<std::size_t>(o.first_fit_days) + 1) {
    return InvalidArgument("{}: {} UTC day(s) of requests; a walk-forward fitted on {} day(s) needs at least {}",
                           log.source, days.size(), o.first_fit_days, o.first_fit_days + 1);
  }
  for (const LogDay& d : days) {
    out.dates.push_back(d.date);
    out.requests.push_back(d.demand.trace.requests.size());
  }
  std::vector<DayFit> fits;
  for (const LogDay& d : days) fits.push_back(FitDay(d, o));
  // Hit-rate curves of each day under its own schedule, capacities 1 .. every model.
  const int most_models = std::max<int>(1, static_cast<int>(out.models.size()));
  std::vector<std::vector<CacheOutcome>> curve(days.size());
  std::vector<std::vector<int>> seen(days.size());  // models per day
  for (std::size_t d = 0; d < days.size(); ++d) {
    const std::vector<CacheRequest> requests = CacheRequests(days[d]);
    if (o.cache_models == 0)
      for (int c = 1; c <= most_models; ++c) curve[d].push_back(SimulateModelCache(requests, Steps(fits[d].steps), c));
    for (const int m : days[d].models)
      if (m >= 0) seen[d].push_back(m);
  }
  for (std::size_t k = static_cast<std::size_t>(o.first_fit_days); k < days.size(); ++k) {
    const LogDay& test = days[k];
    TestDay t;
    t.date = test.date;
    t.fit_days = static_cast<int>(k);
    t.requests = test.demand.trace.requests.size();
    // The rule, chosen on the fit days by its own walk-forward there: each of the last
    // recent_days fit days (with a day before it) replayed on the schedule built from the
    // days before it.
    // Judged on them with a quarter of the miss allowance in reserve, as gpufit plans.
    const double planning = 1 - (1 - o.slo.target) * 0.75;
    std::vector<std::size_t> inner;
    for (std::size_t j = k > static_cast<std::size_t>(o.recent_days) ? k - static_cast<std::size_t>(o.recent_days) : 1;
         j < k; ++j)
      inner.push_back(j);
    const Basis basis = BasisFor(fits, out.requests, k, o.recent_days);
    const std::vector<ScheduleRule> rules = CandidateRules(basis);
    std::vector<Basis> bases;
    for (const std::size_t j : inner) bases.push_back(BasisFor(fits, out.requests, j, o.recent_days));
    std::size_t best = rules.size() - 1;
    std::pair<std::size_t, double> best_score{0, INFINITY};  // (days met, GPU-hours)
    for (std::size_t r = 0; r < rules.size(); ++r) {
      std::pair<std::size_t, double> score{0, 0};
      for (std::size_t i = 0; i < inner.size(); ++i) {
        const std::vector<int> steps = Apply(rules[r], bases[i], o);
        const double hours = ProvisionedHours(steps);
        score.second += hours;
        score.first += Judge(days[inner[i]], o, Steps(steps), hours).slo_attainment >= planning ? 1 : 0;
      }
      if (score.first > best_score.first || (score.first == best_score.first && score.second < best_score.second)) {
        best = r;
        best_score = score;
      }
    }
    t.growth = basis.growth;
    t.rule = rules[best];
    t.rule_days_met = static_cast<int>(best_score.first);
    t.rule_days_tried = static_cast<int>(inner.size());
    const std::vector<int> steps = Apply(t.rule, basis, o);
    const ReplicaSchedule schedule = Steps(steps);
    for (std::size_t d = 0; d < k; ++d) t.static_replicas = std::max(t.static_replicas, fits[d].static_replicas);
    t.gpufit = Judge(test, o, schedule, ProvisionedHours(steps), &t.cold_starts);
    t.static_peak = Judge(test, o, {.window_s = kDayS, .replicas = {t.static_replicas}}, 24.0 * t.static_replicas);
    if (t.requests > 0) {
      const PolicyOutcome c = Clairvoyant(InputFor(test, o));
      t.clairvoyant = {.gpu_hours = c.replay.gpu_hours,
                       .slo_attainment = c.replay.slo_attainment,
                       .slo_met = true,
                       .max_replicas = c.replay.max_replicas};
    }
    // The cache: capacity from the fit days (the knee) unless given.
    t.cache_models = o.cache_models;
    if (t.cache_models == 0) {
      std::vector<int> fit_models;
      for (std::size_t d = 0; d < k; ++d) fit_models.insert(fit_models.end(), seen[d].begin(), seen[d].end());
      std::sort(fit_models.begin(), fit_models.end());
      const auto distinct =
          std::max<std::ptrdiff_t>(1, std::unique(fit_models.begin(), fit_models.end()) - fit_models.begin());
      std::vector<CacheOutcome> fit_curve(static_cast<std::size_t>(distinct));
      for (std::size_t d = 0; d < k; ++d)
        for (std::size_t c = 0; c < fit_curve.size(); ++c) fit_curve[c] += curve[d][c];
      t.cache_models = KneeCapacity(fit_curve, o.cache_knee_share);
      t.fit_hit_rate = fit_curve[static_cast<std::size_t>(t.cache_models) - 1].HitRate();
    } else {
      CacheOutcome fit;
      for (std::size_t d = 0; d < k; ++d)
        fit += SimulateModelCache(CacheRequests(days[d]), Steps(fits[d].steps), o.cache_models);
      t.fit_hit_rate = fit.HitRate();
    }
    const std::vector<CacheRequest> requests = CacheRequests(test);
    t.cache = SimulateModelCache(requests, schedule, t.cache_models);
    t.single_model = SimulateModelCache(requests, schedule, 1);
    t.load_s_saved = static_cast<double>(t.single_model.misses - t.cache.misses) * o.model_load_s;
    t.schedule = steps;
    out.tests.push_back(std::move(t));
  }
  return out;
}

namespace {

nlohmann::json PolicyJson(const PolicyDay& p, double usd) {
  nlohmann::json j = {{"gpu_hours", p.gpu_hours},
                      {"slo_attainment", p.slo_attainment},
                      {"slo_met", p.slo_met},
                      {"max_replicas", p.max_replicas}};
  if (usd > 0) j["usd"] = p.gpu_hours * usd;
  return j;
}

}  // namespace

std::string WalkForwardToJson(const WalkForwardResult& r) {
  const WalkForwardOptions& o = r.options;
  nlohmann::json days = nlohmann::json::array();
  for (std::size_t d = 0; d < r.dates.size(); ++d) days.push_back({{"date", r.dates[d]}, {"requests", r.requests[d]}});
  nlohmann::json tests = nlohmann::json::array();
  for (const TestDay& t : r.tests) {
    tests.push_back({{"date", t.date},
                     {"fit_days", t.fit_days},
                     {"requests", t.requests},
                     {"growth", t.growth},
                     {"rule",
                      {{"live_floor", t.rule.live_floor},
                       {"idle_floor", t.rule.idle_floor},
                       {"fit_days_met", t.rule_days_met},
                       {"fit_days_tried", t.rule_days_tried}}},
                     {"gpufit", PolicyJson(t.gpufit, o.usd_per_gpu_hour)},
                     {"static_peak", PolicyJson(t.static_peak, o.usd_per_gpu_hour)},
                     {"static_peak_replicas", t.static_replicas},
                     {"clairvoyant", PolicyJson(t.clairvoyant, o.usd_per_gpu_hour)},
                     {"gpufit_cold_starts", t.cold_starts},
                     {"cache",
                      {{"models_per_node", t.cache_models},
                       {"fit_hit_rate", t.fit_hit_rate},
                       {"requests", t.cache.requests},
                       {"hits", t.cache.hits},
                       {"loads", t.cache.misses},
                       {"hit_rate", t.cache.HitRate()},
                       {"loads_one_model_per_node", t.single_model.misses},
                       {"load_s_saved", t.load_s_saved}}}});
  }
  const nlohmann::json j = {
      {"source", r.source},
      {"slo", {{"metric", SloMetricName(o.slo.metric)}, {"seconds", o.slo.seconds}, {"target", o.slo.target}}},
      {"cold_start_s", o.cold_start_s},
      {"window_s", o.window_s},
      {"first_fit_days", o.first_fit_days},
      {"recent_days", o.recent_days},
      {"model_load_s", o.model_load_s},
      {"cache_knee_share", o.cache_knee_share},
      {"usd_per_gpu_hour", o.usd_per_gpu_hour},
      {"models", r.models.size()},
      {"all_met", r.AllMet()},
      {"days", days},
      {"tests", tests}};
  return j.dump(2) + "\n";
}

std::string WalkForwardToMarkdown(const WalkForwardResult& r) {
  const WalkForwardOptions& o = r.options;
  std::string md = fmt::format("# Walk-forward backtest: {}\n\n", r.source);
  md += fmt::format(
      "Fitted on UTC days 1..k, replayed on day k + 1 (every logged request), k = {}..{}. SLO: {} <= {} s for {:.2f}% "
      "of each test day's requests; one request per replica; cold start {:.1f} s; gpufit's windows {:.0f} s. The "
      "schedule: per 5 s of the day, the highest of gpufit's schedules fitted to each of the last {} fit days, times "
      "the growth (exp of the slope of ln requests per day over those days, at least 1), above a warm floor chosen "
      "by the fit days' own walk-forward. Static peak: the fit days' constant count. Clairvoyant: computed on the "
      "test day itself. The guarantee covers the test days below, each unseen by its schedule.\n\n",
      r.tests.empty() ? 0 : r.tests.front().fit_days, r.tests.empty() ? 0 : r.tests.back().fit_days,
      SloMetricName(o.slo.metric), o.slo.seconds, 100 * o.slo.target, o.cold_start_s, o.window_s, o.recent_days);
  md += r.AllMet() ? "**The fitted schedule met the SLO on every test day.**\n\n"
                   : "**The fitted schedule missed the SLO on at least one test day** (marked no).\n\n";
  md +=
      "| test day | fit days | requests | growth | floors (live/idle; fit days met) | gpufit SLO | met | gpufit GPU-h "
      "| "
      "static peak GPU-h (replicas, SLO) | clairvoyant GPU-h | gpufit x clairvoyant | % of static |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  double g = 0, s = 0, c = 0;
  std::size_t n = 0;
  for (const TestDay& t : r.tests) {
    g += t.gpufit.gpu_hours;
    s += t.static_peak.gpu_hours;
    c += t.clairvoyant.gpu_hours;
    n += t.requests;
    md += fmt::format(
        "| {} | {} | {} | {:.2f} | {}/{}; {} of {} | {:.2f}% | {} | {:.1f} | {:.0f} ({}, {:.2f}%) | {:.1f} | "
        "{:.2f} | {:.1f}% |\n",
        t.date, t.fit_days, t.requests, t.growth, t.rule.live_floor, t.rule.idle_floor, t.rule_days_met,
        t.rule_days_tried, 100 * t.gpufit.slo_attainment, t.gpufit.slo_met ? "yes" : "no", t.gpufit.gpu_hours,
        t.static_peak.gpu_hours, t.static_replicas, 100 * t.static_peak.slo_attainment, t.clairvoyant.gpu_hours,
        t.clairvoyant.gpu_hours > 0 ? t.gpufit.gpu_hours / t.clairvoyant.gpu_hours : 0,
        t.static_peak.gpu_hours > 0 ? 100 * t.gpufit.gpu_hours / t.static_peak.gpu_hours : 0);
  }
  md += fmt::format("| all | | {} | | | | | {:.1f} | {:.0f} | {:.1f} | {:.2f} | {:.1f}% |\n", n, g, s, c,
                    c > 0 ? g / c : 0, s > 0 ? 100 * g / s : 0);
  if (o.usd_per_gpu_hour > 0) {
    md += fmt::format("\nAt {} USD per GPU-hour: gpufit {:.0f} USD, static peak {:.0f} USD, clairvoyant {:.0f} USD.\n",
                      o.usd_per_gpu_hour, g * o.usd_per_gpu_hour, s * o.usd_per_gpu_hour, c * o.usd_per_gpu_hour);
  }
  md += fmt::format(
      "\n## Model cache per node (LRU)\n\nNodes: the replicas of the fitted schedule; routing: a free node holding the "
      "model, else the first free node, else the one that frees first; caches empty at midnight. Capacity: {}. Load "
      "time saved against one model per node, at {:.1f} s per load.\n\n",
      o.cache_models > 0 ? fmt::format("{} models per node, as given", o.cache_models)
                         : fmt::format("the knee of the fit days ({:.0f}% of the hit rate with room for every model)",
                                       100 * o.cache_knee_share),
      o.model_load_s);
  md +=
      "| test day | models per node | hit rate, fit days | hit rate, test day | loads | loads, one model per node | "
      "load time saved |\n|---|---|---|---|---|---|---|\n";
  double saved = 0;
  for (const TestDay& t : r.tests) {
    saved += t.load_s_saved;
    md += fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} | {} | {:.2f} h |\n", t.date, t.cache_models,
                      100 * t.fit_hit_rate, 100 * t.cache.HitRate(), t.cache.misses, t.single_model.misses,
                      t.load_s_saved / 3600);
  }
  md += fmt::format("| all | | | | | | {:.2f} h |\n", saved / 3600);
  return md;
}

}  // namespace gpufit

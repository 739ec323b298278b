#include "gpufit/inference/policies.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <numeric>
#include <queue>

#include "gpufit/optimize/queueing.h"

namespace gpufit {
namespace {

constexpr double kForever = 1e18;  // a window longer than any trace

ReplayResult Replay(const ReplicaPolicyInput& in, const ReplicaSchedule& schedule, double miss_bucket_s = 0) {
  ReplayOptions options = ReplayOptionsFor(in);
  options.miss_bucket_s = miss_bucket_s;
  return ReplayRequests(in.demand->trace, in.demand->times.service_s, in.demand->times.prefill_s, schedule, options);
}

ReplicaSchedule Constant(int replicas) { return {.window_s = kForever, .replicas = {replicas}}; }

// Requests per decision window: index ranges and mean service / prefill times.
struct Window {
  std::size_t first = 0, last = 0;  // requests [first, last)
  double start_s = 0, length_s = 0;
  double mean_service_s = 0, mean_prefill_s = 0;
  std::size_t Count() const { return last - first; }
};

std::vector<Window> Windows(const Demand& d, double window_s) {
  const auto& requests = d.trace.requests;
  const double duration = d.trace.Duration();
  const auto n = static_cast<std::size_t>(duration / window_s) + 1;
  std::vector<Window> windows(n);
  std::size_t i = 0;
  for (std::size_t w = 0; w < n; ++w) {
    Window& win = windows[w];
    win.start_s = static_cast<double>(w) * window_s;
    win.length_s = std::min(window_s, std::max(duration - win.start_s, 0.0));
    win.first = i;
    double service = 0, prefill = 0;
    while (i < requests.size() && (w + 1 == n || requests[i].arrival_s < win.start_s + window_s)) {
      service += d.times.service_s[i];
      prefill += d.times.prefill_s.empty() ? 0 : d.times.prefill_s[i];
      ++i;
    }
    win.last = i;
    if (win.Count() > 0) {
      win.mean_service_s = service / static_cast<double>(win.Count());
      win.mean_prefill_s = prefill / static_cast<double>(win.Count());
    }
  }
  return windows;
}

// The wait a request may spend queued and still meet the SLO, for a window's mean request.
double WaitBudget(const InferenceSlo& slo, const Window& w) {
  switch (slo.metric) {
    case SloMetric::kWait:
      return slo.seconds;
    case SloMetric::kTtft:
      return std::max(0.0, slo.seconds - w.mean_prefill_s);
    case SloMetric::kLatency:
      return std::max(0.0, slo.seconds - w.mean_service_s);
  }
  return slo.seconds;
}

std::size_t Unavoidable(const Demand& d, const InferenceSlo& slo, std::size_t first, std::size_t last) {
  std::size_t n = 0;
  for (std::size_t i = first; i < last; ++i) {
    const double alone = slo.metric == SloMetric::kWait   ? 0
                         : slo.metric == SloMetric::kTtft ? (d.times.prefill_s.empty() ? 0 : d.times.prefill_s[i])
                                                          : d.times.service_s[i];
    n += alone > slo.seconds ? 1 : 0;
  }
  return n;
}

// The SLO target, lowered to what any schedule can reach when some requests cannot meet it.
double ReachableTarget(const ReplicaPolicyInput& in, double target) {
  const std::size_t n = in.demand->trace.requests.size();
  if (n == 0) return target;
  const double best = 1 - static_cast<double>(Unavoidable(*in.demand, in.slo, 0, n)) / static_cast<double>(n);
  return std::min(target, best);
}

int MostReplicas(const ReplicaPolicyInput& in) {
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(in.max_replicas),
                                                std::max<std::size_t>(1, in.demand->trace.requests.size())));
}

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

}  // namespace

double ReachableSloTarget(const ReplicaPolicyInput& in) { return ReachableTarget(in, in.slo.target); }

std::size_t RequestsMissingAlone(const Demand& demand, const InferenceSlo& slo) {
  return Unavoidable(demand, slo, 0, demand.trace.requests.size());
}

ReplayOptions ReplayOptionsFor(const ReplicaPolicyInput& in) {
  return {.concurrency = in.concurrency,
          .cold_start_s = in.cold_start_s,
          .slo_s = in.slo.seconds,
          .slo_metric = in.slo.metric,
          .initial_ready = -1,
          .miss_bucket_s = 0};
}

PolicyOutcome StaticPeak(const ReplicaPolicyInput& in) {
  PolicyOutcome out{.policy = "static peak", .schedule = {}, .replay = {}, .target_rps_per_replica = 0, .replays = 0};
  const double target = ReachableTarget(in, in.slo.target);
  const auto meets = [&](int c, ReplayResult* r) {
    ++out.replays;
    *r = Replay(in, Constant(c));
    return r->slo_attainment >= target;
  };
  // Double until the SLO holds, then bisect (attainment grows with the count).
  ReplayResult r;
  int bad = 0, good = 1;
  const int most = MostReplicas(in);
  while (!meets(good, &r) && good < most) {
    bad = good;
    good = std::min(2 * good, most);
  }
  ReplayResult best = r;
  while (good - bad > 1) {
    const int mid = bad + (good - bad) / 2;
    if (meets(mid, &r)) {
      good = mid;
      best = r;
    } else {
      bad = mid;
    }
  }
  out.schedule = Constant(good);
  out.replay = best;
  return out;
}

PolicyOutcome HpaLike(const ReplicaPolicyInput& in, const HpaSettings& hpa) {
  const auto& requests = in.demand->trace.requests;
  const auto& service = in.demand->times.service_s;
  const double mean_service =
      service.empty() ? 1 : std::accumulate(service.begin(), service.end(), 0.0) / static_cast<double>(service.size());
  PolicyOutcome out{.policy = "hpa-like",
                    .schedule = {.window_s = hpa.sync_s, .replicas = {}},
                    .replay = {},
                    .target_rps_per_replica = hpa.target_utilization * in.concurrency / mean_service,
                    .replays = 1};
  const double target = out.target_rps_per_replica;
  // Requests in (t - metric window, t] per second; early on, over the time there is.
  const auto rate_at = [&](double t) {
    const auto by_time = [](const Request& r, double x) { return r.arrival_s <= x; };
    const auto hi = std::lower_bound(requests.begin(), requests.end(), t, by_time);
    const auto lo = std::lower_bound(requests.begin(), requests.end(), t - hpa.metric_window_s, by_time);
    return static_cast<double>(hi - lo) / std::min(hpa.metric_window_s, std::max(t, hpa.sync_s));
  };
  const auto clamp = [&](double desired) {
    return static_cast<int>(std::clamp<double>(desired, hpa.min_replicas, in.max_replicas));
  };
  // The deployment starts at what the first metric window asks for (as if running before).
  int current = clamp(std::ceil(rate_at(hpa.metric_window_s) / target));
  std::deque<std::pair<double, int>> recommendations{{0.0, current}};  // (time, desired), last window
  const double duration = in.demand->trace.Duration();
  for (double t = 0; t <= duration; t += hpa.sync_s) {
    if (t > 0) {
      const double rate = rate_at(t);
      const double ratio = current > 0 ? rate / current / target : INFINITY;
      int desired = std::abs(ratio - 1) <= hpa.tolerance ? current : clamp(std::ceil(rate / target));
      recommendations.emplace_back(t, desired);
      while (recommendations.front().first < t - hpa.stabilization_s) recommendations.pop_front();
      if (desired > current) {
        desired = std::min(desired, current + std::max(4, current));  // 100% or 4 pods per period
      } else if (desired < current) {
        int highest = desired;
        for (const auto& [when, d] : recommendations) highest = std::max(highest, d);
        desired = std::min(current, highest);
      }
      current = desired;
    }
    out.schedule.replicas.push_back(current);
  }
  out.replay = Replay(in, out.schedule);
  return out;
}

std::vector<int> ExpandSchedule(const std::vector<int>& per_window, int steps_per_window, int lead_steps,
                                int keep_steps) {
  const std::size_t n = per_window.size() * static_cast<std::size_t>(steps_per_window);
  const auto keep = static_cast<std::size_t>(std::max(0, keep_steps));
  std::vector<int> x(n), y(n);
  for (std::size_t s = 0; s < n; ++s) x[s] = per_window[s / static_cast<std::size_t>(steps_per_window)];
  // Prewarm: the count at s is the highest of the next lead_steps (a rise starts early).
  for (std::size_t s = 0; s < n; ++s) {
    y[s] = x[s];
    for (std::size_t k = 1; k <= static_cast<std::size_t>(lead_steps) && s + k < n; ++k)
      y[s] = std::max(y[s], x[s + k]);
  }
  // The hold, level by level from the top, so that each level's set of steps contains the
  // one above it: at a level, the steps at or above it (`high`) get every gap of at most
  // keep steps between two of them filled (the dip is not taken), then every run that ends
  // before the series does is lengthened to keep + 1 steps (the level, once reached, is held;
  // HPA's scale-down stabilization), then gaps the lengthening shortened are filled again.
  const int top = n ? *std::max_element(y.begin(), y.end()) : 0;
  std::vector<int> z = y;
  std::vector<char> high(n, 0);
  const auto fill_gaps = [&]() {
    std::size_t last_high = n;  // last high step before the current gap
    for (std::size_t s = 0; s < n; ++s) {
      if (!high[s]) continue;
      if (last_high != n && s - last_high - 1 <= keep)
        for (std::size_t g = last_high + 1; g < s; ++g) high[g] = 1;
      last_high = s;
    }
  };
  for (int level = top; level >= 1; --level) {
    for (std::size_t s = 0; s < n; ++s) high[s] = high[s] || y[s] >= level;
    fill_gaps();
    for (std::size_t s = 0; s < n;) {
      if (!high[s]) {
        ++s;
        continue;
      }
      std::size_t end = s;
      while (end < n && high[end]) ++end;
      if (end < n && end - s < keep + 1) {
        for (std::size_t g = end; g < std::min(n, s + keep + 1); ++g) high[g] = 1;
        while (end < n && high[end]) ++end;  // the run, merged with any it reached
      }
      s = end;
    }
    fill_gaps();
    for (std::size_t s = 0; s < n; ++s)
      if (high[s]) z[s] = std::max(z[s], level);
  }
  return z;
}

double ReplicaHoldSeconds(const ReplicaPolicyInput& in) { return std::max(0.0, in.cold_start_s) + in.window_s; }

PolicyOutcome GpufitSchedule(const ReplicaPolicyInput& in) {
  const double step = std::min(in.step_s, in.window_s);
  const std::vector<Window> windows = Windows(*in.demand, in.window_s);
  // Steps of `step` seconds, but at most 2 million in all (long traces, huge windows).
  constexpr double kMostSteps = 2e6;
  const int steps_per_window = static_cast<int>(std::clamp<double>(
      std::round(in.window_s / step), 1, std::max(1.0, std::floor(kMostSteps / static_cast<double>(windows.size())))));
  const auto lead = static_cast<int>(std::ceil(in.cold_start_s / (in.window_s / steps_per_window)));
  // The hold (ReplicaHoldSeconds): a level is kept through dips shorter than it and held at
  // least that long once reached.
  const double step_len = in.window_s / steps_per_window;
  const int keep = in.hold_s >= 0 ? static_cast<int>(std::ceil(in.hold_s / step_len - 1e-9))
                                  : static_cast<int>(std::ceil(ReplicaHoldSeconds(in) / step_len - 1e-9));
  // Plan with a quarter of the miss allowance in reserve: the schedule is fitted to one
  // sample of the service's traffic and must hold on the next.
  const double planning = ReachableTarget(in, 1 - (1 - in.slo.target) * 0.75);
  std::vector<int> count(windows.size(), 0), stable(windows.size(), 0);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const Window& win = windows[w];
    if (win.Count() == 0) continue;
    const double lambda = static_cast<double>(win.Count()) / in.window_s;
    const int servers = MinServersForWaitTail(lambda, 1 / win.mean_service_s, WaitBudget(in.slo, win), 1 - planning);
    count[w] = std::min(CeilDiv(servers, in.concurrency), in.max_replicas);
  }
  // Never below a stable queue for the window and its neighbours, with room for chance:
  // more slots than their offered load plus two standard deviations of it (a compound
  // Poisson: the work arriving in a span has variance sum(s^2)). A window's own arrivals
  // are a noisy sample of its rate; trimming to a lucky sample fails on the next hour.
  for (std::size_t w = 0; w < windows.size(); ++w) {
    if (windows[w].Count() == 0) continue;
    const std::size_t lo = w > 0 ? w - 1 : 0, hi = std::min(w + 2, windows.size());
    double work = 0, square = 0, span = 0;
    for (std::size_t v = lo; v < hi; ++v) span += windows[v].length_s > 0 ? windows[v].length_s : 0;
    for (std::size_t i = windows[lo].first; i < windows[hi - 1].last; ++i) {
      const double x = in.demand->times.service_s[i];
      work += x;
      square += x * x;
    }
    const double erlangs = (work + 2 * std::sqrt(square)) / std::max(span, in.window_s);
    stable[w] = static_cast<int>(std::min<double>(std::floor(erlangs / in.concurrency) + 1, in.max_replicas));
  }
  PolicyOutcome out{.policy = "gpufit", .schedule = {}, .replay = {}, .target_rps_per_replica = 0, .replays = 0};
  const auto judge = [&](const std::vector<int>& c) {
    ++out.replays;
    const ReplicaSchedule s{.window_s = in.window_s / steps_per_window,
                            .replicas = ExpandSchedule(c, steps_per_window, lead, keep)};
    return std::make_pair(s, Replay(in, s, in.window_s));
  };
  auto [schedule, result] = judge(count);
  // Repair: more replicas wherever a window misses more than its share, in proportion to
  // how far over it is (at least one), so even a count far too low is reached quickly.
  for (int round = 0; round < 400 && result.slo_attainment < planning; ++round) {
    bool raised = false;
    std::size_t worst = 0;
    const auto raise = [&](std::size_t w, double excess) {
      if (count[w] >= in.max_replicas) return false;
      const auto more = std::max(1.0, std::floor(count[w] * excess));
      count[w] = static_cast<int>(std::min<double>(in.max_replicas, count[w] + more));
      return true;
    };
    for (std::size_t w = 0; w < windows.size() && w < result.misses_per_bucket.size(); ++w) {
      const auto n = static_cast<double>(windows[w].Count());
      const double missed = static_cast<double>(result.misses_per_bucket[w]);
      if (missed > (1 - planning) * n) raised = raise(w, missed / n - (1 - planning)) || raised;
      if (result.misses_per_bucket[w] > result.misses_per_bucket[worst]) worst = w;
    }
    if (!raised && !raise(worst, 0)) break;
    std::tie(schedule, result) = judge(count);
  }
  // Trim: passes over the windows, largest counts first, until no replica can go; each
  // window gives back one replica, then twice as many after each success, halving after a
  // failure. A window that cannot give up one replica is not tried again.
  std::vector<bool> stuck(windows.size(), false);
  for (bool trimmed = result.slo_attainment >= planning; trimmed;) {
    trimmed = false;
    std::vector<std::size_t> order;
    for (std::size_t w = 0; w < windows.size(); ++w) {
      if (count[w] > stable[w] && !stuck[w]) order.push_back(w);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return count[a] > count[b]; });
    for (const std::size_t w : order) {
      for (int cut = 1; cut >= 1;) {
        cut = std::min(cut, count[w] - stable[w]);
        if (cut < 1) break;
        count[w] -= cut;
        auto [s, r] = judge(count);
        // Overall and within the window's own share: the allowance is not spent on one window.
        const double share = (1 - planning) * static_cast<double>(windows[w].Count());
        if (r.slo_attainment >= planning && static_cast<double>(r.misses_per_bucket[w]) <= share) {
          schedule = std::move(s);
          result = std::move(r);
          trimmed = true;
          cut *= 2;
        } else {
          count[w] += cut;
          if (cut == 1) stuck[w] = true;
          cut /= 2;
        }
      }
    }
  }
  out.schedule = std::move(schedule);
  out.replay = std::move(result);
  return out;
}

PolicyOutcome Clairvoyant(const ReplicaPolicyInput& in) {
  const Demand& d = *in.demand;
  const std::vector<Window> windows = Windows(d, in.window_s);
  const std::size_t total = d.trace.requests.size();
  const std::size_t unavoidable = Unavoidable(d, in.slo, 0, total);
  const std::size_t allowance =
      std::max(unavoidable, static_cast<std::size_t>(std::floor((1 - in.slo.target) * static_cast<double>(total))));
  PolicyOutcome out{.policy = "clairvoyant",
                    .schedule = {.window_s = in.window_s, .replicas = {}},
                    .replay = {},
                    .target_rps_per_replica = 0,
                    .replays = 0};
  ReplayOptions options = ReplayOptionsFor(in);
  options.cold_start_s = 0;
  const double lookback =
      std::min(in.window_s,
               d.times.service_s.empty() ? 0.0 : *std::max_element(d.times.service_s.begin(), d.times.service_s.end()));
  // misses[w][k]: misses of window w with zero_count[w] - k replicas (an empty window:
  // zero replicas, no misses).
  std::vector<std::vector<std::size_t>> misses(windows.size(), std::vector<std::size_t>{0});
  std::vector<int> zero_count(windows.size(), 0);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const Window& win = windows[w];
    if (win.Count() == 0) continue;
    // The window's requests, after the previous window's tail (requests arriving up to the
    // longest service time before it, still in service at its start): served on the same
    // count but not scored.
    std::size_t from = win.first;
    while (from > 0 && d.trace.requests[from - 1].arrival_s >= win.start_s - lookback) --from;
    Demand part;
    for (std::size_t i = from; i < win.last; ++i) {
      part.trace.requests.push_back(d.trace.requests[i]);
      part.times.service_s.push_back(d.times.service_s[i]);
      if (!d.times.prefill_s.empty()) part.times.prefill_s.push_back(d.times.prefill_s[i]);
    }
    const auto missed = [&](int c) {
      ++out.replays;
      ReplayOptions o = options;
      o.unscored_prefix = win.first - from;  // the tail
      return ReplayRequests(part.trace, part.times.service_s, part.times.prefill_s, Constant(c), o).slo_misses;
    };
    // The fewest replicas with no avoidable miss: double, then bisect.
    const std::size_t floor = Unavoidable(d, in.slo, win.first, win.last);
    const int most = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(in.max_replicas), win.Count()));
    int bad = 0, good = 1;
    while (missed(good) > floor && good < most) {
      bad = good;
      good = std::min(2 * good, most);
    }
    while (good - bad > 1) {
      const int mid = bad + (good - bad) / 2;
      (missed(mid) <= floor ? good : bad) = mid;
    }
    zero_count[w] = good;
    misses[w] = {floor};
    for (int c = good - 1; c >= 0; --c) {
      const std::size_t m = c == 0 ? win.Count() : missed(c);
      misses[w].push_back(m);
      if (m > allowance) break;
    }
  }
  // Spend the allowance exactly: a multiple-choice knapsack over windows, by dynamic
  // programming on the misses spent (cost[b] = fewest replica-seconds spending b).
  const std::size_t budget = allowance + 1;
  std::vector<double> cost(budget, INFINITY);
  cost[0] = 0;
  std::vector<std::vector<std::uint32_t>> choice(windows.size(), std::vector<std::uint32_t>(budget, 0));
  for (std::size_t w = 0; w < windows.size(); ++w) {
    std::vector<double> next(budget, INFINITY);
    const double length = windows[w].length_s;
    for (std::size_t b = 0; b < budget; ++b) {
      if (std::isinf(cost[b])) continue;
      for (std::size_t k = 0; k < misses[w].size(); ++k) {
        const std::size_t m = misses[w][k];
        if (b + m >= budget) continue;
        const double c = cost[b] + (zero_count[w] - static_cast<double>(k)) * length;
        if (c < next[b + m]) {
          next[b + m] = c;
          choice[w][b + m] = static_cast<std::uint32_t>(k);
        }
      }
    }
    cost = std::move(next);
  }
  std::size_t spent = static_cast<std::size_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
  std::vector<int> counts(windows.size(), 0);
  for (std::size_t w = windows.size(), b = spent; w-- > 0;) {
    const std::size_t k = choice[w][b];
    counts[w] = zero_count[w] - static_cast<int>(k);
    b -= misses[w][k];
  }
  for (std::size_t w = 0; w < windows.size(); ++w) {
    out.schedule.replicas.push_back(counts[w]);
    out.replay.gpu_hours += counts[w] * windows[w].length_s / 3600;
    out.replay.max_replicas = std::max(out.replay.max_replicas, counts[w]);
  }
  out.replay.requests = total;
  out.replay.slo_attainment = total ? 1 - static_cast<double>(spent) / static_cast<double>(total) : 1;
  return out;
}

}  // namespace gpufit

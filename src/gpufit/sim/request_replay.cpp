#include "gpufit/sim/request_replay.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <set>
#include <utility>
#include <vector>

namespace gpufit {
namespace {

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

struct Replica {
  double started = 0, ready = 0;
  int busy = 0;
  bool retiring = false, gone = false;
};

enum class Kind { kReady, kDone, kWindow };

struct Event {
  double t;
  int order;  // completions before readiness before windows at equal times
  Kind kind;
  std::size_t id;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : order > o.order; }
};

}  // namespace

ReplayResult ReplayRequests(const RequestTrace& trace, const std::vector<double>& service_s,
                            const std::vector<double>& prefill_s, const ReplicaSchedule& schedule,
                            const ReplayOptions& options) {
  assert(service_s.size() == trace.requests.size() && schedule.window_s > 0 && options.concurrency >= 1);
  assert(prefill_s.empty() || prefill_s.size() == trace.requests.size());
  ReplayResult result;
  result.requests = trace.requests.size();
  std::vector<Replica> replicas;
  std::vector<std::size_t> live;  // replicas neither gone nor retiring, in start order
  // Ready, live replicas with a free slot, busiest first, then lowest index.
  std::set<std::pair<int, std::size_t>> available;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::deque<std::size_t> waiting;
  std::vector<double> latency, ttft;
  latency.reserve(trace.requests.size());
  ttft.reserve(trace.requests.size());
  double wait_sum = 0;
  std::size_t served = 0, met = 0;
  double now = 0;
  if (options.miss_bucket_s > 0) {
    result.misses_per_bucket.assign(static_cast<std::size_t>(trace.Duration() / options.miss_bucket_s) + 1, 0);
  }
  const auto count_miss = [&](std::size_t i) {
    if (i < options.unscored_prefix) return;
    ++result.slo_misses;
    if (options.miss_bucket_s <= 0) return;
    auto b = static_cast<std::size_t>(trace.requests[i].arrival_s / options.miss_bucket_s);
    ++result.misses_per_bucket[std::min(b, result.misses_per_bucket.size() - 1)];
  };

  const auto target_at = [&](std::size_t w) {
    if (schedule.replicas.empty()) return 0;
    return schedule.replicas[std::min(w, schedule.replicas.size() - 1)];
  };
  const auto leave = [&](std::size_t k) {
    Replica& r = replicas[k];
    available.erase({-r.busy, k});
    r.gone = true;
    result.gpu_hours += (now - r.started) / 3600;
  };
  const auto start = [&](bool ready_now) {
    replicas.push_back(Replica{.started = now,
                               .ready = ready_now ? now : now + options.cold_start_s,
                               .busy = 0,
                               .retiring = false,
                               .gone = false});
    const std::size_t k = replicas.size() - 1;
    live.push_back(k);
    if (ready_now) {
      available.insert({0, k});
    } else {
      ++result.cold_starts;
      events.push({replicas[k].ready, 1, Kind::kReady, k});
    }
  };
  const auto dispatch = [&] {
    while (!waiting.empty() && !available.empty()) {
      const std::size_t k = available.begin()->second;
      available.erase(available.begin());
      Replica& r = replicas[k];
      if (++r.busy < options.concurrency) available.insert({-r.busy, k});
      const std::size_t i = waiting.front();
      waiting.pop_front();
      const double w = now - trace.requests[i].arrival_s;
      const double first_token = w + (prefill_s.empty() ? 0 : prefill_s[i]);
      wait_sum += w;
      ++served;
      latency.push_back(w + service_s[i]);
      ttft.push_back(first_token);
      if (options.slo_s > 0 && i >= options.unscored_prefix) {
        const double measured = options.slo_metric == SloMetric::kWait   ? w
                                : options.slo_metric == SloMetric::kTtft ? first_token
                                                                         : w + service_s[i];
        if (measured <= options.slo_s) {
          ++met;
        } else {
          count_miss(i);
        }
      }
      events.push({now + service_s[i], 0, Kind::kDone, k});
    }
  };
  const auto rescale = [&](int target) {
    auto n = static_cast<int>(live.size());
    if (n == target) return;
    // Scale down: idle starting replicas first, then idle ready ones, then retire busy ones
    // (newest first in each pass).
    for (int pass = 0; pass < 3 && n > target; ++pass) {
      for (std::size_t j = live.size(); j-- > 0 && n > target;) {
        const std::size_t k = live[j];
        Replica& r = replicas[k];
        const bool starting = r.ready > now;
        if ((pass == 0 && starting) || (pass == 1 && !starting && r.busy == 0) || pass == 2) {
          if (r.busy == 0) {
            leave(k);
          } else {
            available.erase({-r.busy, k});
            r.retiring = true;
          }
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
          --n;
        }
      }
    }
    while (n < target) {
      start(false);
      ++n;
    }
  };

  // t = 0: the first window's replicas (or initial_ready) are warm.
  const int first = target_at(0);
  const int warm = options.initial_ready >= 0 ? options.initial_ready : first;
  for (int k = 0; k < warm; ++k) start(true);
  rescale(first);
  const double end_of_trace = trace.Duration();
  for (std::size_t w = 1; static_cast<double>(w) * schedule.window_s <= end_of_trace; ++w) {
    events.push({static_cast<double>(w) * schedule.window_s, 2, Kind::kWindow, w});
  }
  std::size_t next = 0;
  while (true) {
    result.max_replicas = std::max(result.max_replicas, static_cast<int>(live.size()));
    const double t_arrival = next < trace.requests.size() ? trace.requests[next].arrival_s : INFINITY;
    const double t_event = events.empty() ? INFINITY : events.top().t;
    if (std::isinf(t_arrival) && std::isinf(t_event)) break;
    if (t_event <= t_arrival) {
      const Event e = events.top();
      events.pop();
      now = e.t;
      switch (e.kind) {
        case Kind::kDone: {
          Replica& r = replicas[e.id];
          if (r.retiring) {
            if (--r.busy == 0) leave(e.id);
          } else {
            available.erase({-r.busy, e.id});
            --r.busy;
            available.insert({-r.busy, e.id});
          }
          break;
        }
        case Kind::kReady: {
          const Replica& r = replicas[e.id];
          if (!r.gone && !r.retiring) available.insert({-r.busy, e.id});
          break;
        }
        case Kind::kWindow:
          rescale(target_at(e.id));
          break;
      }
    } else {
      now = t_arrival;
      waiting.push_back(next++);
    }
    dispatch();
  }
  for (const std::size_t k : live) leave(k);
  result.unserved = waiting.size();
  if (options.slo_s > 0) {
    for (const std::size_t i : waiting) count_miss(i);
  }
  std::sort(latency.begin(), latency.end());
  std::sort(ttft.begin(), ttft.end());
  if (served > 0) result.mean_wait_s = wait_sum / static_cast<double>(served);
  result.p50_latency_s = Percentile(latency, 50);
  result.p95_latency_s = Percentile(latency, 95);
  result.p99_latency_s = Percentile(latency, 99);
  result.p50_ttft_s = Percentile(ttft, 50);
  result.p95_ttft_s = Percentile(ttft, 95);
  result.p99_ttft_s = Percentile(ttft, 99);
  const std::size_t scored = result.requests - std::min(result.requests, options.unscored_prefix);
  if (options.slo_s > 0 && scored > 0) {
    result.slo_attainment = static_cast<double>(met) / static_cast<double>(scored);
  }
  return result;
}

}  // namespace gpufit

#include "gpufit/sim/request_replay.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
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
  ReplayResult result;
  result.requests = trace.requests.size();
  std::vector<Replica> replicas;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::deque<std::size_t> waiting;
  std::vector<double> latency, ttft, wait;
  latency.reserve(trace.requests.size());
  ttft.reserve(trace.requests.size());
  double now = 0;

  const auto target_at = [&](std::size_t w) {
    if (schedule.replicas.empty()) return 0;
    return schedule.replicas[std::min(w, schedule.replicas.size() - 1)];
  };
  const auto live = [&] {
    int n = 0;
    for (const Replica& r : replicas) n += (!r.gone && !r.retiring) ? 1 : 0;
    return n;
  };
  const auto leave = [&](Replica& r) {
    r.gone = true;
    result.gpu_hours += (now - r.started) / 3600;
  };
  const auto start = [&](bool ready_now) {
    Replica r{.started = now,
              .ready = ready_now ? now : now + options.cold_start_s,
              .busy = 0,
              .retiring = false,
              .gone = false};
    replicas.push_back(r);
    if (!ready_now) {
      ++result.cold_starts;
      events.push({r.ready, 1, Kind::kReady, replicas.size() - 1});
    }
  };
  const auto dispatch = [&] {
    while (!waiting.empty()) {
      // The ready replica with a free slot that is busiest (packs requests, frees others).
      std::size_t best = replicas.size();
      for (std::size_t k = 0; k < replicas.size(); ++k) {
        const Replica& r = replicas[k];
        if (r.gone || r.retiring || r.ready > now || r.busy >= options.concurrency) continue;
        if (best == replicas.size() || r.busy > replicas[best].busy) best = k;
      }
      if (best == replicas.size()) return;
      const std::size_t i = waiting.front();
      waiting.pop_front();
      ++replicas[best].busy;
      const Request& q = trace.requests[i];
      const double w = now - q.arrival_s;
      wait.push_back(w);
      latency.push_back(w + service_s[i]);
      ttft.push_back(w + (prefill_s.empty() ? 0 : prefill_s[i]));
      events.push({now + service_s[i], 0, Kind::kDone, best});
    }
  };
  const auto rescale = [&](int target) {
    int n = live();
    // Scale down: idle starting replicas first, then idle ready ones, then retire busy ones.
    for (int pass = 0; pass < 3 && n > target; ++pass) {
      for (std::size_t k = replicas.size(); k-- > 0 && n > target;) {
        Replica& r = replicas[k];
        if (r.gone || r.retiring) continue;
        const bool starting = r.ready > now;
        if ((pass == 0 && starting) || (pass == 1 && !starting && r.busy == 0)) {
          leave(r);
          --n;
        } else if (pass == 2) {
          r.retiring = true;
          if (r.busy == 0) leave(r);
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
  for (int max_now = live(); true;) {
    result.max_replicas = std::max(result.max_replicas, max_now);
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
          --r.busy;
          if (r.retiring && r.busy == 0 && !r.gone) leave(r);
          break;
        }
        case Kind::kReady:
          break;
        case Kind::kWindow:
          rescale(target_at(e.id));
          break;
      }
    } else {
      now = t_arrival;
      waiting.push_back(next++);
    }
    dispatch();
    max_now = live();
  }
  for (Replica& r : replicas) {
    if (!r.gone) leave(r);
  }
  result.unserved = waiting.size();
  std::sort(latency.begin(), latency.end());
  std::sort(ttft.begin(), ttft.end());
  double wait_sum = 0;
  for (const double x : wait) wait_sum += x;
  if (!wait.empty()) result.mean_wait_s = wait_sum / static_cast<double>(wait.size());
  result.p50_latency_s = Percentile(latency, 50);
  result.p95_latency_s = Percentile(latency, 95);
  result.p99_latency_s = Percentile(latency, 99);
  result.p50_ttft_s = Percentile(ttft, 50);
  result.p95_ttft_s = Percentile(ttft, 95);
  result.p99_ttft_s = Percentile(ttft, 99);
  if (options.slo_s > 0 && result.requests > 0) {
    const std::vector<double>& v = options.slo_on_ttft ? ttft : latency;
    const auto within = std::upper_bound(v.begin(), v.end(), options.slo_s) - v.begin();
    result.slo_attainment = static_cast<double>(within) / static_cast<double>(result.requests);
  }
  return result;
}

}  // namespace gpufit

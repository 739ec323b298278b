#include "gpufit/sim/arrivals.h"

#include <algorithm>
#include <numeric>

namespace gpufit {

std::vector<std::size_t> SaturationArrivals(const std::vector<PodSpec>& trace, GpuMilli capacity, double inflation,
                                            Rng& rng) {
  std::vector<std::size_t> by_name(trace.size());
  std::iota(by_name.begin(), by_name.end(), std::size_t{0});
  std::stable_sort(by_name.begin(), by_name.end(),
                   [&](std::size_t a, std::size_t b) { return trace[a].name < trace[b].name; });
  std::vector<std::size_t> order = by_name;
  rng.Shuffle(order);
  std::int64_t requested = 0;
  for (const PodSpec& p : trace) requested += p.TotalGpu().value;
  const double target = inflation * static_cast<double>(capacity.value);
  // Without a GPU pod to draw, copies could never reach the target.
  const bool any_gpu = std::any_of(trace.begin(), trace.end(), [](const PodSpec& p) { return p.gpu_count > 0; });
  if (by_name.empty() || !any_gpu) return order;
  if (static_cast<double>(requested) > target) {
    // The simulator's tuneDownPods: while the pods ask for more than the target, remove one
    // drawn uniformly from those left (a CPU-only pod too: it frees no GPU and the loop goes
    // on). The rest keep their shuffled order.
    std::vector<std::size_t> left(order.size());  // positions in `order` not yet removed
    std::iota(left.begin(), left.end(), std::size_t{0});
    std::vector<bool> removed(order.size(), false);
    while (static_cast<double>(requested) > target) {
      const std::size_t k = static_cast<std::size_t>(rng.Below(left.size()));
      removed[left[k]] = true;
      requested -= trace[order[left[k]]].TotalGpu().value;
      left[k] = left.back();
      left.pop_back();
    }
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (!removed[i]) kept.push_back(order[i]);
    }
    return kept;
  }
  while (true) {
    const std::size_t copy = by_name[rng.Below(by_name.size())];
    if (static_cast<double>(requested + trace[copy].gpu_per_gpu.value) > target) break;
    requested += trace[copy].TotalGpu().value;
    order.push_back(copy);
  }
  return order;
}

std::vector<TraceEvent> ReplayEvents(const std::vector<PodSpec>& trace) {
  std::vector<TraceEvent> events;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    events.push_back({trace[i].creation, i, true});
    if (trace[i].deletion) events.push_back({*trace[i].deletion, i, false});
  }
  // At one time: departures of pods that arrived earlier, then arrivals, then departures
  // of pods that arrive and leave at that same time (they arrive first).
  auto rank = [&](const TraceEvent& e) {
    if (e.arrival) return 1;
    return trace[e.pod].creation < e.time ? 0 : 2;
  };
  std::stable_sort(events.begin(), events.end(), [&](const TraceEvent& a, const TraceEvent& b) {
    if (a.time != b.time) return a.time < b.time;
    return rank(a) < rank(b);
  });
  return events;
}

}  // namespace gpufit

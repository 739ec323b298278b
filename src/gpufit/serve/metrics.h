// The extender's own metrics, written in the Prometheus text exposition format (version
// 0.0.4: https://prometheus.io/docs/instrumenting/exposition_formats/): counters of decisions
// and failures, a latency histogram per verb (cumulative `le` buckets, `_sum`, `_count`), and
// gauges set when scraped. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace gpufit::serve {

class ExtenderMetrics {
 public:
  // Latency bucket bounds, seconds: 50 us .. 1 s (the goal is 1 ms a pair).
  static constexpr std::array<double, 12> kBucketsS = {50e-6, 100e-6, 250e-6, 500e-6, 1e-3,   2.5e-3,
                                                       5e-3,  10e-3,  25e-3,  100e-3, 250e-3, 1.0};

  // One answered request of `verb` ("filter", "prioritize", "bind") that took `seconds`;
  // `outcome` is "ok" or the failure's reason ("bad_request", "too_large", "timeout",
  // "internal", "unauthenticated", "busy"; bind also "no_room", "unknown_node", "api_error", "not_enabled").
  void Observe(const std::string& verb, const std::string& outcome, double seconds);
  // Nodes the filter kept or refused, by answer ("kept", "failed", "unresolvable").
  void CountNodes(const std::string& answer, std::int64_t n);
  // A filter request's pod, by how its request was taken: "telemetry_profile" or "declared".
  void CountPodRequest(const std::string& from);
  // A connection the server closed, by reason (serve/internal/http_listener.h): "idle",
  // "head_timeout", "write_timeout", "too_many_connections", "too_many_from_peer"; each is
  // written, 0 until counted.
  void CountClosed(const std::string& reason);

  struct Gauges {
    double gpu_allocation_ratio = 0;  // allocated milli-GPU / capacity
    double gpu_fragmentation_milli = 0, gpu_fragmentation_ratio = 0;  // Extender::GpuFragmentation
    double gpu_memory_overcommit_ratio = 0;                           // Extender::GpuMemoryOvercommitRatio
    std::int64_t nodes = 0, snapshot_pods = 0, snapshot_pods_not_fitting = 0;
    std::int64_t snapshots = 0;          // snapshots taken in since the start (1 + reconciles)
    std::int64_t reservations_kept = 0;  // gpufit's binds the last snapshot did not show yet
  };
  // The exposition text, with `gauges` as of now.
  std::string Text(const Gauges& gauges) const;

 private:
  struct Histogram {
    std::array<std::uint64_t, kBucketsS.size()> buckets{};  // not cumulative; summed when written
    std::uint64_t count = 0;
    double sum_s = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> requests_;  // (verb, outcome)
  std::map<std::string, Histogram> latency_;                               // by verb
  std::map<std::string, std::uint64_t> nodes_;                             // by answer
  std::map<std::string, std::uint64_t> pod_requests_;                      // by from
  std::map<std::string, std::uint64_t> closed_;                            // by reason
};

}  // namespace gpufit::serve

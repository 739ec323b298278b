#include "gpufit/ingest/prometheus/containers.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "gpufit/ingest/prometheus/split.h"

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;
using Key = std::pair<std::string, std::string>;  // pod key, container

constexpr float kNoData = std::numeric_limits<float>::quiet_NaN();

std::string Get(const Labels& l, const char* name) {
  const auto it = l.find(name);
  return it == l.end() ? "" : it->second;
}

std::string PodKey(const Labels& l) { return PodKeyFromLabels(l); }

class Grid {
 public:
  explicit Grid(const Telemetry& t) : start_(t.start_s), step_(t.step_s), samples_(t.samples) {}
  // The nearest grid sample of time t, or -1 outside the grid.
  long long Index(double t) const {
    const double k = std::round((t - start_) / step_);
    return k < 0 || k >= static_cast<double>(samples_) ? -1 : static_cast<long long>(k);
  }
  std::vector<float> Empty() const { return std::vector<float>(samples_, kNoData); }

 private:
  double start_, step_;
  std::size_t samples_;
};

// Keeps the larger of the value there and v (NaN counts as nothing).
void Keep(std::vector<float>& series, long long k, double v) {
  if (k < 0 || !std::isfinite(v)) return;
  float& at = series[static_cast<std::size_t>(k)];
  if (std::isnan(at) || v > at) at = static_cast<float>(v);
}

// Increase from a to b of a counter that may have restarted from 0 (Prometheus's rule).
double Increase(double a, double b) { return b >= a ? b - a : b; }

}  // namespace

void AddContainerSeries(const std::vector<PromSeries>& cpu_usage, const std::vector<PromSeries>& cfs_periods,
                        const std::vector<PromSeries>& cfs_throttled, const std::vector<PromSeries>& working_set,
                        const std::vector<PromSeries>& requests, const std::vector<PromSeries>& limits,
                        Telemetry& telemetry) {
  const Grid grid(telemetry);
  std::map<Key, ContainerSeries> by_key;
  auto series_of = [&](const Labels& l) -> ContainerSeries& {
    const Key key{PodKey(l), Get(l, "container")};
    ContainerSeries& c = by_key[key];
    if (c.cpu_cores.empty()) {
      c.pod = key.first;
      c.container = key.second;
      c.cpu_cores = c.cpu_throttled_ratio = c.memory_working_set_mib = grid.Empty();
    }
    if (c.image.empty()) c.image = Get(l, "image");
    return c;
  };
  auto valid = [](const Labels& l) { return !PodKey(l).empty() && !Get(l, "container").empty(); };

  for (const PromSeries& s : cpu_usage) {
    if (!valid(s.labels)) continue;
    ContainerSeries& c = series_of(s.labels);
    for (std::size_t i = 1; i < s.time_s.size(); ++i) {
      const double dt = s.time_s[i] - s.time_s[i - 1];
      if (dt > 0) Keep(c.cpu_cores, grid.Index(s.time_s[i]), Increase(s.value[i - 1], s.value[i]) / dt);
    }
  }
  // Throttled periods pair with the periods series of the same labels, the metric name aside:
  // VictoriaMetrics keeps __name__ on max_over_time's output where Prometheus drops it
  // (rollupFuncsKeepMetricName, app/vmselect/promql/rollup.go).
  const auto unnamed = [](Labels l) {
    l.erase("__name__");
    return l;
  };
  std::map<Labels, const PromSeries*> periods;
  for (const PromSeries& s : cfs_periods) periods[unnamed(s.labels)] = &s;
  for (const PromSeries& s : cfs_throttled) {
    const auto p = periods.find(unnamed(s.labels));
    if (!valid(s.labels) || p == periods.end()) continue;
    ContainerSeries& c = series_of(s.labels);
    std::map<double, double> all;  // time -> periods counter
    for (std::size_t i = 0; i < p->second->time_s.size(); ++i) all[p->second->time_s[i]] = p->second->value[i];
    for (std::size_t i = 1; i < s.time_s.size(); ++i) {
      const auto a = all.find(s.time_s[i - 1]), b = all.find(s.time_s[i]);
      if (a == all.end() || b == all.end()) continue;
      const double total = Increase(a->second, b->second);
      if (total > 0)
        Keep(c.cpu_throttled_ratio, grid.Index(s.time_s[i]),
             std::min(1.0, Increase(s.value[i - 1], s.value[i]) / total));
    }
  }
  for (const PromSeries& s : working_set) {
    if (!valid(s.labels)) continue;
    ContainerSeries& c = series_of(s.labels);
    for (std::size_t i = 0; i < s.time_s.size(); ++i)
      Keep(c.memory_working_set_mib, grid.Index(s.time_s[i]), s.value[i] / static_cast<double>(kBytesPerMiB));
  }
  // kube-state-metrics: the last value in the range, for containers cAdvisor also saw.
  auto resources = [&](const std::vector<PromSeries>& answers, bool is_limit) {
    for (const PromSeries& s : answers) {
      const auto it = by_key.find({PodKey(s.labels), Get(s.labels, "container")});
      if (it == by_key.end() || s.value.empty() || !std::isfinite(s.value.back()) || s.value.back() < 0) continue;
      const double v = s.value.back();
      const std::string resource = Get(s.labels, "resource");
      if (resource == "cpu")
        (is_limit ? it->second.cpu_limit : it->second.cpu_request) =
            MilliCpu{static_cast<std::int64_t>(std::ceil(v * 1000 - 1e-9))};
      else if (resource == "memory")
        (is_limit ? it->second.memory_limit : it->second.memory_request) =
            MiB{static_cast<std::int64_t>(std::ceil(v / static_cast<double>(kBytesPerMiB) - 1e-9))};
    }
  };
  resources(requests, false);
  resources(limits, true);
  telemetry.containers.clear();
  for (auto& [key, c] : by_key) telemetry.containers.push_back(std::move(c));
}

Result<void> AddPrometheusContainers(const PrometheusOptions& options, const TelemetryGrid& grid, Telemetry& telemetry,
                                     PrometheusQueryStats& stats) {
  const std::string& window = grid.window;
  std::vector<std::vector<PromSeries>> answers;
  for (const char* selector : {R"(container_cpu_usage_seconds_total{container!="",container!="POD"})",
                               R"(container_cpu_cfs_periods_total{container!="",container!="POD"})",
                               R"(container_cpu_cfs_throttled_periods_total{container!="",container!="POD"})",
                               R"(container_memory_working_set_bytes{container!="",container!="POD"})",
                               R"(kube_pod_container_resource_requests{resource=~"cpu|memory"})",
                               R"(kube_pod_container_resource_limits{resource=~"cpu|memory"})"}) {
    Result<std::vector<PromSeries>> r =
        QueryRangeSplit(options,
                        {.function = "max_over_time",
                         .selector = selector,
                         .window = window,
                         .start_s = grid.grid.start_s,
                         .end_s = grid.grid.start_s + static_cast<double>(grid.grid.samples - 1) * grid.grid.step_s,
                         .step_s = grid.grid.step_s},
                        stats);
    if (!r) return r.error();
    answers.push_back(std::move(*r));
  }
  AddContainerSeries(answers[0], answers[1], answers[2], answers[3], answers[4], answers[5], telemetry);
  return {};
}

}  // namespace gpufit

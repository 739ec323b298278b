#include "gpufit/ingest/files/containers_csv.h"

#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "gpufit/ingest/internal/csv_table.h"

namespace gpufit {

using internal::CsvRow;
using internal::ForEachCsvRow;

Result<std::vector<ContainerSeries>> ReadContainersCsv(const std::string& path, const Telemetry& telemetry) {
  static constexpr std::array<const char*, 6> kColumns = {"timestamp_s", "pod",    "container",
                                                          "image",       "metric", "value"};
  enum Metric { kCpu, kThrottled, kMemory, kCpuRequest, kCpuLimit, kMemoryRequest, kMemoryLimit };
  static const std::map<std::string_view, Metric> kMetrics = {
      {"container_cpu_usage_cores", kCpu},
      {"container_cpu_cfs_throttled_ratio", kThrottled},
      {"container_memory_working_set_bytes", kMemory},
      {"kube_pod_container_resource_requests_cpu_cores", kCpuRequest},
      {"kube_pod_container_resource_limits_cpu_cores", kCpuLimit},
      {"kube_pod_container_resource_requests_memory_bytes", kMemoryRequest},
      {"kube_pod_container_resource_limits_memory_bytes", kMemoryLimit}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::map<std::pair<std::string, std::string>, ContainerSeries> by_key;
  std::size_t rows = 0, timed = 0, on_grid = 0;
  Result<void> ok = ForEachCsvRow<6>(path, kColumns, [&](const CsvRow<6>& row) -> Result<void> {
    ++rows;
    const Result<std::string_view> metric_name = row.Text(4);
    if (!metric_name) return metric_name.error();
    const auto metric = kMetrics.find(*metric_name);
    if (metric == kMetrics.end()) return {};
    const Result<double> t = row.NonNegative(0);
    if (!t) return t.error();
    const Result<std::string_view> pod = row.Text(1);
    if (!pod) return pod.error();
    const Result<std::string_view> container = row.Text(2);
    if (!container) return container.error();
    const Result<double> v = row.NonNegative(5);
    if (!v) return v.error();
    if (metric->second == kThrottled && *v > 1)
      return InvalidArgument("{}:{}: column 'value': a CFS throttling ratio is 0-1, got {}", path, row.line, *v);
    ContainerSeries& c = by_key[{std::string(*pod), std::string(*container)}];
    if (c.pod.empty()) {
      c.pod = std::string(*pod);
      c.container = std::string(*container);
      c.cpu_cores.assign(telemetry.samples, nan);
      c.cpu_throttled_ratio.assign(telemetry.samples, nan);
      c.memory_working_set_mib.assign(telemetry.samples, nan);
    }
    if (const char* image = row.cells[3]; image != nullptr && *image != '\0') c.image = image;
    switch (metric->second) {
      case kCpuRequest:
        c.cpu_request = MilliCpu{static_cast<std::int64_t>(std::llround(*v * 1000))};
        return {};
      case kCpuLimit:
        c.cpu_limit = MilliCpu{static_cast<std::int64_t>(std::llround(*v * 1000))};
        return {};
      case kMemoryRequest:
        c.memory_request = MiB{static_cast<std::int64_t>(std::ceil(*v / static_cast<double>(kBytesPerMiB)))};
        return {};
      case kMemoryLimit:
        c.memory_limit = MiB{static_cast<std::int64_t>(std::ceil(*v / static_cast<double>(kBytesPerMiB)))};
        return {};
      default:
        break;
    }
    ++timed;
    if (telemetry.samples == 0 || telemetry.step_s <= 0) return {};
    const double k = std::round((*t - telemetry.start_s) / telemetry.step_s);
    if (k < 0 || k >= static_cast<double>(telemetry.samples)) return {};
    const auto at = static_cast<std::size_t>(k);
    ++on_grid;
    std::vector<float>& series = metric->second == kCpu         ? c.cpu_cores
                                 : metric->second == kThrottled ? c.cpu_throttled_ratio
                                                                : c.memory_working_set_mib;
    const auto value = static_cast<float>(metric->second == kMemory ? *v / static_cast<double>(kBytesPerMiB) : *v);
    if (std::isnan(series[at]) || value > series[at]) series[at] = value;
    return {};
  });
  if (!ok) return ok.error();
  if (rows == 0) return InvalidArgument("{}: no data rows after the header", path);
  if (timed > 0 && on_grid == 0)
    return InvalidArgument("{}: none of its {} samples falls within the GPU telemetry's time span ({} to {} s)", path,
                           timed, telemetry.start_s,
                           telemetry.start_s + static_cast<double>(telemetry.samples) * telemetry.step_s);
  std::vector<ContainerSeries> out;
  for (auto& [key, c] : by_key) out.push_back(std::move(c));
  return out;
}

}  // namespace gpufit

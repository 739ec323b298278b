#include "gpufit/ingest/files/gentd26_serving_reader.h"

#include <array>
#include <map>
#include <set>

#include "gpufit/ingest/internal/csv_table.h"

namespace gpufit {

using internal::CsvRow;
using internal::ForEachCsvRow;

namespace {
// A load or a request's service time longer than a day is a broken record, not a measurement
// (GenTD26's longest model load is 79.4 s, its longest prediction 156 s); summing
// one such value (1e300 ms) would swamp every total.
constexpr double kLongestMs = 86'400'000;
constexpr std::string_view kLongestWhy = "one day, in ms: longer is a broken record, not a measured load or request";
}  // namespace

Result<RateSeries> ReadGenTd26Qps(const std::string& path, std::string_view request_type) {
  static constexpr std::array<const char*, 3> kColumns = {"timestamp_anon", "value", "request_type"};
  std::map<double, double> total;  // timestamp -> summed rate of the type
  std::set<double> stamps;         // every timestamp in the file
  std::set<std::string, std::less<>> types;
  Result<void> ok = ForEachCsvRow<3>(path, kColumns, [&](const CsvRow<3>& row) -> Result<void> {
    const Result<double> at = row.NonNegative(0);
    if (!at) return at.error();
    const Result<double> qps = row.NonNegative(1);
    if (!qps) return qps.error();
    const Result<std::string_view> type = row.Text(2);
    if (!type) return type.error();
    stamps.insert(*at);
    if (*type == request_type) {
      total[*at] += *qps;
    } else if (types.find(*type) == types.end()) {
      types.emplace(*type);
    }
    return {};
  });
  if (!ok) return ok.error();
  if (total.empty()) {
    std::string seen;
    for (const std::string& t : types) seen += (seen.empty() ? "'" : ", '") + t + "'";
    return InvalidArgument("{}: no rows with request_type '{}' (present: {})", path, request_type,
                           seen.empty() ? "none" : seen);
  }
  // The sample interval: the most frequent gap between consecutive timestamps of the file.
  std::map<double, int> gaps;
  for (auto a = stamps.begin(), b = std::next(a); b != stamps.end(); ++a, ++b) ++gaps[*b - *a];
  RateSeries series{.source = path, .t_s = {}, .per_s = {}, .sample_s = 60, .origin_s = total.begin()->first};
  int most = 0;
  for (const auto& [gap, count] : gaps) {
    if (count > most) {
      most = count;
      series.sample_s = gap;
    }
  }
  const double origin = total.begin()->first;
  for (const auto& [at, qps] : total) {
    series.t_s.push_back(at - origin);
    series.per_s.push_back(qps);
  }
  return series;
}

Result<std::vector<double>> ReadGenTd26LatencySeconds(const std::string& path) {
  static constexpr std::array<const char*, 1> kColumns = {"value"};
  std::vector<double> seconds;
  Result<void> ok = ForEachCsvRow<1>(path, kColumns, [&](const CsvRow<1>& row) -> Result<void> {
    const Result<double> ms = row.AtMost(0, kLongestMs, kLongestWhy);
    if (!ms) return ms.error();
    seconds.push_back(*ms / 1000);
    return {};
  });
  if (!ok) return ok.error();
  if (seconds.empty()) return InvalidArgument("{}: no samples", path);
  return seconds;
}

Result<std::vector<ModelLoad>> ReadGenTd26ModelLoads(const std::string& path) {
  static constexpr std::array<const char*, 3> kColumns = {"timestamp_anon", "value", "container_ip"};
  std::vector<ModelLoad> loads;
  Result<void> ok = ForEachCsvRow<3>(path, kColumns, [&](const CsvRow<3>& row) -> Result<void> {
    const Result<double> t = row.NonNegative(0);
    if (!t) return t.error();
    const Result<double> ms = row.AtMost(1, kLongestMs, kLongestWhy);
    if (!ms) return ms.error();
    const Result<std::string_view> pod = row.Text(2);
    if (!pod) return pod.error();
    loads.push_back({.pod = std::string(*pod), .time_s = *t, .seconds = *ms / 1000});
    return {};
  });
  if (!ok) return ok.error();
  if (loads.empty()) return InvalidArgument("{}: no samples", path);
  return loads;
}

}  // namespace gpufit

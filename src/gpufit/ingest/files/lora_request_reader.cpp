#include "gpufit/ingest/files/lora_request_reader.h"

#include <algorithm>

#include "gpufit/ingest/files/request_trace_reader.h"
#include "gpufit/ingest/internal/csv_table.h"

namespace gpufit {

using internal::CsvRow;
using internal::ForEachCsvRow;

Result<RequestLog> ReadLoraRequestTrace(const std::string& path) {
  static constexpr std::array<const char*, 3> kColumns = {"gmt_create", "exec_time_seconds",
                                                          "checkpoint_model_version_id"};
  RequestLog log{.source = path, .requests = {}};
  Result<void> ok = ForEachCsvRow<3>(path, kColumns, [&](const CsvRow<3>& row) -> Result<void> {
    const Result<std::string_view> text = row.Text(0);
    if (!text) return text.error();
    const Result<double> at = ParseUtcTimestamp(*text);
    if (!at) return InvalidArgument("{}:{}: column 'gmt_create': {}", path, row.line, at.error().message);
    const Result<double> exec = row.NonNegative(1);
    if (!exec) return exec.error();
    log.requests.push_back({.arrival_utc_s = *at, .service_s = *exec, .model = row.cells[2] ? row.cells[2] : ""});
    return {};
  });
  if (!ok) return ok.error();
  if (log.requests.empty()) return InvalidArgument("{}: no requests", path);
  std::stable_sort(log.requests.begin(), log.requests.end(),
                   [](const LoggedRequest& a, const LoggedRequest& b) { return a.arrival_utc_s < b.arrival_utc_s; });
  return log;
}

}  // namespace gpufit

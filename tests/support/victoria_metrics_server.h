// VictoriaMetrics (single node, Debian's `victoria-metrics`, tested with 1.79.5) on a free
// 127.0.0.1 port with a temporary -storageDataPath, for tests and benchmarks.
//
// Loading: OpenMetrics text (timestamps in seconds) becomes the Prometheus text exposition
// format with millisecond timestamps, which VictoriaMetrics' /api/v1/import/prometheus takes
// (docs.victoriametrics.com, "How to import data in Prometheus exposition format"); then
// /internal/force_flush makes the samples searchable at once (lib/storage's in-memory
// buffers are otherwise flushed about once a second), and Start() waits until
// /api/v1/series/count reports every series of the text.
//
// Flags, and why a real deployment has them too:
//  * -retentionPeriod=100y: the default keeps one month and drops older samples on import
//    (with a warning in its log); the fixtures are dated 2026-01-01. A fleet keeping 7+ days of history for
//    gpufit sets a retention of at least that (the default month is enough there).
// Nothing else differs from the defaults: gpufit's client sends nocache=1 itself, so the
// server keeps its start/end rounding and response cache for other clients
// (ingest/prometheus/client.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "gpufit/core/result.h"
#include "metrics_server.h"

namespace gpufit::testing {

// OpenMetrics text -> VictoriaMetrics' Prometheus import format: comment lines ("# TYPE",
// "# HELP", "# EOF") and blank lines go, each sample's timestamp (seconds, decimals allowed)
// becomes whole milliseconds. `series` counts the distinct name{labels} of the samples.
// Errors (kInvalidArgument) name the line: a sample without a timestamp, or a timestamp that
// is not a number.
struct PrometheusImportText {
  std::string text;
  std::size_t series = 0;
};
Result<PrometheusImportText> ToPrometheusImportText(std::string_view openmetrics);

class VictoriaMetricsServer final : public MetricsServer {
 public:
  // Starts the server under `dir` (which must exist), waits (up to 60 s) for /health, imports
  // `openmetrics` (may be empty) and waits until its series are searchable. Errors
  // (kFailedPrecondition) carry the server's log or answer.
  static Result<std::unique_ptr<VictoriaMetricsServer>> Start(const std::string& openmetrics, const std::string& dir);
  ~VictoriaMetricsServer() override;  // SIGTERM, then waits for the process
  VictoriaMetricsServer(const VictoriaMetricsServer&) = delete;
  VictoriaMetricsServer& operator=(const VictoriaMetricsServer&) = delete;

  const std::string& url() const override { return url_; }
  std::string_view Name() const override { return "victoria-metrics"; }

  // Imports `body` (one POST; a caller streaming a large load sends several) to `path`: by
  // default samples in the Prometheus text format with millisecond timestamps; or
  // "/api/v1/import", VictoriaMetrics' JSON lines (one series a line, labels once: the
  // compact form for large loads). Errors name the HTTP status and answer.
  Result<void> Import(std::string_view body, std::string_view path = "/api/v1/import/prometheus") const;
  // Makes every sample imported so far searchable (/internal/force_flush).
  Result<void> Flush() const;
  // The number of series the server holds (/api/v1/series/count).
  Result<std::size_t> SeriesCount() const;

 private:
  VictoriaMetricsServer() = default;
  int pid_ = -1;
  std::string url_;
  std::string log_;  // path of the server's log
};

}  // namespace gpufit::testing

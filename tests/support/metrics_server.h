// A metrics server that speaks the Prometheus query API, started on loopback by a test from
// OpenMetrics text and stopped when the object is destroyed. One file per server:
//  * "prometheus": Debian's `prometheus`, loaded through `promtool tsdb create-blocks-from
//    openmetrics` (prometheus_server.h);
//  * "victoria-metrics": Debian's `victoria-metrics` (single node), loaded through its
//    /api/v1/import/prometheus endpoint (victoria_metrics_server.h).
// Both hold exactly the samples of the text, so the same query must give the same answer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::testing {

class MetricsServer {
 public:
  virtual ~MetricsServer() = default;  // stops the server and waits for it
  // Base URL for gpufit's --prometheus ("http://127.0.0.1:<port>").
  virtual const std::string& url() const = 0;
  // The registry name ("prometheus", "victoria-metrics").
  virtual std::string_view Name() const = 0;
};

// The registered names, in a fixed order (for TEST_P's values).
std::vector<std::string> MetricsServerNames();

// Starts the server called `name`, loaded with `openmetrics` (OpenMetrics text, timestamps
// in seconds, "# EOF" last), using `dir` (which must exist) for its data and logs; waits
// until it answers and holds the data. Errors: kInvalidArgument for an unknown name,
// kFailedPrecondition (with the server's log) when it cannot be started or loaded.
Result<std::unique_ptr<MetricsServer>> StartMetricsServer(std::string_view name, const std::string& openmetrics,
                                                          const std::string& dir);

}  // namespace gpufit::testing

#include "metrics_server.h"

#include <functional>

#include "prometheus_server.h"
#include "victoria_metrics_server.h"

namespace gpufit::testing {
namespace {

using Factory = std::function<Result<std::unique_ptr<MetricsServer>>(const std::string&, const std::string&)>;

struct Entry {
  std::string_view name;
  Factory start;
};

template <class Server>
Factory Upcast() {
  return [](const std::string& openmetrics, const std::string& dir) -> Result<std::unique_ptr<MetricsServer>> {
    auto server = Server::Start(openmetrics, dir);
    if (!server) return server.error();
    return std::unique_ptr<MetricsServer>(std::move(*server));
  };
}

const std::vector<Entry>& Registry() {
  static const std::vector<Entry> kServers = {
      {"prometheus", Upcast<PrometheusServer>()},
      {"victoria-metrics", Upcast<VictoriaMetricsServer>()},
  };
  return kServers;
}

}  // namespace

std::vector<std::string> MetricsServerNames() {
  std::vector<std::string> names;
  for (const Entry& e : Registry()) names.emplace_back(e.name);
  return names;
}

Result<std::unique_ptr<MetricsServer>> StartMetricsServer(std::string_view name, const std::string& openmetrics,
                                                          const std::string& dir) {
  for (const Entry& e : Registry())
    if (e.name == name) return e.start(openmetrics, dir);
  return InvalidArgument("no test metrics server named '{}'", name);
}

}  // namespace gpufit::testing

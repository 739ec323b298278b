#include "gpufit/ingest/kube_api/metrics_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace gpufit::kube_api {

using Json = nlohmann::json;

std::vector<std::pair<std::string, std::string>> MetricsServiceSelectors() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* s :
       {"app=kube-prometheus-stack-prometheus", "app=prometheus,component=server", "app=prometheus-server",
        "app=prometheus-operator-prometheus", "app=rancher-monitoring-prometheus", "app=prometheus-prometheus",
        "app.kubernetes.io/name=prometheus,app.kubernetes.io/component=server", "app=stack-prometheus"})
    out.emplace_back("Prometheus", s);
  for (const char* s : {"app.kubernetes.io/component=query,app.kubernetes.io/name=thanos",
                        "app.kubernetes.io/name=thanos-query", "app=thanos-query", "app=thanos-querier"})
    out.emplace_back("Thanos Query", s);
  for (const char* s : {"app.kubernetes.io/name=vmsingle", "app.kubernetes.io/name=victoria-metrics-single",
                        "app.kubernetes.io/name=vmselect", "app.kubernetes.io/component=vmselect", "app=vmselect"})
    out.emplace_back("VictoriaMetrics", s);
  return out;
}

std::string MetricsService::Describe() const { return fmt::format("{} {}/{}:{} ({})", kind, ns, name, port, selector); }

namespace {

// Whether every label=value pair of `selector` is among `labels`.
bool SelectorMatches(const std::string& selector, const Json& labels) {
  if (!labels.is_object()) return false;
  std::size_t at = 0;
  while (at <= selector.size()) {
    std::size_t end = selector.find(',', at);
    if (end == std::string::npos) end = selector.size();
    const std::string pair = selector.substr(at, end - at);
    const std::size_t eq = pair.find('=');
    const auto it = labels.find(pair.substr(0, eq));
    if (it == labels.end() || !it->is_string() || it->get<std::string>() != pair.substr(eq + 1)) return false;
    at = end + 1;
  }
  return true;
}

}  // namespace

Result<std::vector<MetricsService>> FindMetricsServices(const KubeClient& client) {
  Result<Json> services = client.List("/api/v1/services");
  if (!services) return services.error();
  const auto selectors = MetricsServiceSelectors();
  std::vector<MetricsService> found;
  // Any field of any type: a Service not shaped as expected is not a candidate.
  const auto text = [](const Json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  for (const Json& svc : (*services)["items"]) {
    const Json& meta = svc["metadata"];  // an object with a name: List checks every item
    const auto spec = svc.find("spec");
    if (spec == svc.end() || !spec->is_object()) continue;
    const auto ports = spec->find("ports");
    if (ports == spec->end() || !ports->is_array() || ports->empty() || !(*ports)[0].is_object()) continue;
    const auto port = (*ports)[0].find("port");
    if (port == (*ports)[0].end() || !port->is_number_integer()) continue;
    const auto labels = meta.find("labels");
    if (labels == meta.end()) continue;
    for (std::size_t i = 0; i < selectors.size(); ++i) {
      if (!SelectorMatches(selectors[i].second, *labels)) continue;
      found.push_back(
          {.kind = selectors[i].first,
           .selector = selectors[i].second,
           .ns = text(meta, "namespace"),
           .name = text(meta, "name"),
           .port = port->get<int>(),
           .priority = static_cast<int>(i),
           .path = selectors[i].second.find("vmselect") != std::string::npos ? "/select/0/prometheus" : ""});
      break;
    }
  }
  std::sort(found.begin(), found.end(), [](const MetricsService& a, const MetricsService& b) {
    return std::tie(a.priority, a.ns, a.name) < std::tie(b.priority, b.ns, b.name);
  });
  return found;
}

std::string MetricsServiceUrl(const MetricsService& s, const std::string& server, bool in_cluster) {
  if (in_cluster) return fmt::format("http://{}.{}.svc:{}{}", s.name, s.ns, s.port, s.path);
  std::string base = server;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return fmt::format("{}/api/v1/namespaces/{}/services/http:{}:{}/proxy{}", base, s.ns, s.name, s.port, s.path);
}

}  // namespace gpufit::kube_api

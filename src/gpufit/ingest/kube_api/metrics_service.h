// The cluster's metrics service, found the way KRR finds it (robusta-dev/krr,
// robusta_krr/core/integrations/prometheus/metrics_service/{prometheus,thanos,victoria}_metrics_service.py
// and robusta_krr/utils/service_discovery.py, at d6baa74): the Services of every namespace whose
// labels match one of a list of selectors, the first selector that matches winning, and the
// service's first port.
//
// Priority (gpufit's, not KRR's: KRR tries VictoriaMetrics, then Thanos, then Mimir, then
// Prometheus; here Prometheus comes first because it is what dcgm-exporter's own docs set up):
//   Prometheus:      app=kube-prometheus-stack-prometheus; app=prometheus,component=server;
//                    app=prometheus-server; app=prometheus-operator-prometheus;
//                    app=rancher-monitoring-prometheus; app=prometheus-prometheus;
//                    app.kubernetes.io/name=prometheus,app.kubernetes.io/component=server;
//                    app=stack-prometheus
//   Thanos Query:    app.kubernetes.io/component=query,app.kubernetes.io/name=thanos;
//                    app.kubernetes.io/name=thanos-query; app=thanos-query; app=thanos-querier
//   VictoriaMetrics: app.kubernetes.io/name=vmsingle; app.kubernetes.io/name=victoria-metrics-single;
//                    app.kubernetes.io/name=vmselect; app.kubernetes.io/component=vmselect; app=vmselect
//                    (a cluster's vmselect serves the Prometheus API under /select/0/prometheus: tenant 0)
// A selector is label=value pairs joined by ',', all of which must be on the Service.
//
// How it is reached: from inside the cluster, http://NAME.NAMESPACE.svc:PORT; from outside,
// through the API server's service proxy,
// SERVER/api/v1/namespaces/NAMESPACE/services/http:NAME:PORT/proxy (needs get on services/proxy),
// with the kubeconfig's credentials.
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kube_client.h"

namespace gpufit::kube_api {

struct MetricsService {
  std::string kind;              // "Prometheus", "Thanos Query" or "VictoriaMetrics"
  std::string selector;          // the selector that matched, e.g. "app=kube-prometheus-stack-prometheus"
  std::string ns, name;          // the Service's namespace and name
  int port = 0;                  // its first port (spec.ports[0].port)
  int priority = 0;              // the selector's place in the list above, 0 first
  std::string path;              // the Prometheus API's prefix on the service: "" or "/select/0/prometheus"
  std::string Describe() const;  // "Prometheus monitoring/kps-prometheus:9090 (app=...)"
};

// Every selector of the list above, in priority order, as (kind, selector).
std::vector<std::pair<std::string, std::string>> MetricsServiceSelectors();

// The Services (one LIST of /api/v1/services) that match a selector, ordered by priority, then
// namespace and name; a Service with no ports is left out. Errors: the client's.
Result<std::vector<MetricsService>> FindMetricsServices(const KubeClient& client);

// The service's base URL: in-cluster http://NAME.NS.svc:PORT, else the API server's service proxy
// of `server` (the kubeconfig's server URL); then its `path`.
std::string MetricsServiceUrl(const MetricsService& service, const std::string& server, bool in_cluster);

}  // namespace gpufit::kube_api

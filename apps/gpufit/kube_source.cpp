#include "kube_source.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/kube_api/live_cluster.h"
#include "gpufit/ingest/kube_api/metrics_service.h"

namespace gpufit::cli {

void AddKubeApiOptions(CLI::App* cmd, KubeApiFlags& f) {
  // An empty value (`--kubeconfig "$UNSET"`) would otherwise read as "not given": the run would
  // go on without the cluster it was asked for.
  const auto non_empty = [](const std::string& v) { return v.empty() ? std::string("must not be empty") : ""; };
  cmd->add_option("--kubeconfig", f.kubeconfig,
                  "read the nodes and pods from the live cluster's API server with this kubeconfig (instead of "
                  "--nodes/--pods files); 'in-cluster' uses the pod's service account (default, with no other input: "
                  "$KUBECONFIG, ~/.kube/config, else the pod's service account)")
      ->check(non_empty);
  cmd->add_option("--context", f.context, "the kubeconfig context to use (default: its current-context)")
      ->check(non_empty);
}

Result<std::unique_ptr<ClusterSource>> MakeClusterSource(const KubeApiFlags& f, KubectlFilesOptions files,
                                                         const char* files_flags) {
  const bool files_given = !files.nodes.empty() || !files.pods.empty();
  if (f.given()) {
    if (files_given)
      return InvalidArgument(
          "--kubeconfig/--context read the nodes and pods from the live cluster: give them or {}, not both",
          files_flags);
    return kube_api::LiveClusterSource({.path = f.kubeconfig, .context = f.context},
                                       kube_api::KubeEnvironment::FromProcess());
  }
  if (!files_given) return std::unique_ptr<ClusterSource>();
  return KubectlFiles(std::move(files));
}

Result<ClusterObjects> ReadCluster(ClusterSource& source, const KubeApiFlags& f, bool quiet) {
  Result<ClusterObjects> read = source.Read();
  if (read && f.given() && !quiet)
    std::fprintf(stderr, "gpufit: read %s from %s\n", read->summary.c_str(), source.Name().c_str());
  return read;
}

bool UseDefaultKubeconfig(KubeApiFlags& f) {
  const kube_api::KubeEnvironment env = kube_api::KubeEnvironment::FromProcess();
  std::error_code ec;
  bool found = env.service_host.has_value() && env.service_port.has_value();
  if (env.kubeconfig && !env.kubeconfig->empty()) {  // an empty $KUBECONFIG is unset, as kubectl reads it
    const std::string& list = *env.kubeconfig;
    for (std::size_t at = 0; at <= list.size() && !found;) {
      std::size_t end = list.find(':', at);
      if (end == std::string::npos) end = list.size();
      found = end > at && std::filesystem::is_regular_file(list.substr(at, end - at), ec);
      at = end + 1;
    }
  } else if (env.home) {
    found = found || std::filesystem::is_regular_file(std::filesystem::path(*env.home) / ".kube" / "config", ec);
  }
  f.by_default = found;
  return found;
}

Result<void> DiscoverPrometheus(TelemetrySource& s, const KubeApiFlags& f, double now_s) {
  Result<kube_api::KubeConnection> conn = kube_api::ResolveKubeconfig({.path = f.kubeconfig, .context = f.context},
                                                                      kube_api::KubeEnvironment::FromProcess());
  if (!conn) return conn.error();
  Result<kube_api::KubeClient> client = kube_api::KubeClient::Make(*conn);
  if (!client) return client.error();
  Result<std::vector<kube_api::MetricsService>> found = kube_api::FindMetricsServices(*client);
  if (!found) return found.error();
  if (found->empty()) {
    std::map<std::string, std::string> searched;  // kind -> its selectors
    for (const auto& [kind, selector] : kube_api::MetricsServiceSelectors())
      searched[kind] += (searched[kind].empty() ? "" : "; ") + selector;
    std::string labels;
    for (const auto& [kind, selectors] : searched) labels += fmt::format(" {}: {}.", kind, selectors);
    return InvalidArgument(
        "no Prometheus found in the cluster {}: no Service of any namespace has the labels of a Prometheus, Thanos "
        "Query or VictoriaMetrics service.{} Give --prometheus URL (or --telemetry FILE)",
        conn->Describe(), labels);
  }
  const kube_api::MetricsService& svc = found->front();
  const bool in_cluster = conn->source == "in-cluster";
  s.prometheus = kube_api::MetricsServiceUrl(svc, conn->server, in_cluster);
  s.discovered = svc.Describe();
  if (!in_cluster) {  // the API server's service proxy: the kubeconfig's credentials
    s.bearer_token = conn->token;
    s.ca_pem = conn->ca_pem;
    s.client_cert_pem = conn->client_cert_pem;
    s.client_key_pem = conn->client_key_pem;
    s.insecure_skip_verify = s.insecure_skip_verify || conn->insecure_skip_tls_verify;
  }
  if (Result<void> ok = ResolvePrometheus(s, now_s); !ok) return ok.error();
  PrometheusOptions probe = s.server;
  probe.retries = 0;  // a 503 "no endpoints" is the answer, not a passing fault
  const Result<std::vector<PromSeries>> up = QueryRange(
      probe, {.query = "vector(1)", .start_s = s.range.until_s, .end_s = s.range.until_s, .step_s = s.range.step_s});
  const std::string how = in_cluster ? "from inside the cluster" : "through the API server's service proxy";
  if (!up)
    return Unavailable("the discovered {} does not answer as Prometheus at {} ({}): {}; give --prometheus URL",
                       svc.Describe(), s.prometheus, how, up.error().message);
  std::fprintf(stderr, "gpufit: discovered (each overridden by the flag in brackets):\n");
  std::fprintf(stderr, "  cluster     %s  [--kubeconfig, --context]\n", conn->Describe().c_str());
  std::fprintf(stderr, "  metrics     %s, %s: %s  [--prometheus URL]\n", svc.Describe().c_str(), how.c_str(),
               s.prometheus.c_str());
  for (std::size_t i = 1; i < found->size(); ++i)
    std::fprintf(stderr, "              also found, not used: %s\n", (*found)[i].Describe().c_str());
  std::fprintf(stderr, "  range       %s to %s, step %g s  [--since, --until, --step]\n",
               FormatRfc3339(s.range.since_s).c_str(), FormatRfc3339(s.range.until_s).c_str(), s.range.step_s);
  return {};
}

}  // namespace gpufit::cli

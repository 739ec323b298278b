// Where the GPU telemetry of `analyze` and `plan` comes from: a file (--telemetry) or a
// Prometheus server that scrapes dcgm-exporter (--prometheus, ingest/prometheus/telemetry.h).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/ingest/kube/pod_ends.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "gpufit/model/telemetry.h"

namespace gpufit::cli {

struct TelemetrySource {
  std::string path;           // --telemetry: GenTD26 directory or long CSV file
  std::string containers;     // --containers: container CPU/memory long CSV (with --telemetry)
  std::string prometheus;     // --prometheus: base URL
  std::string since = "7d";   // RFC 3339, Unix seconds, or a duration before --until
  std::string until = "now";  // RFC 3339, Unix seconds, "now", or a duration before now
  std::string step = "60s";   // Prometheus duration
  std::string bearer_token_file;
  std::string ca_file;
  bool insecure_skip_verify = false;
  double timeout_s = 30;
  int retries = 3;
  // --namespace NS[,NS...] and --selector 'label="v",...': parsed by ResolvePrometheus into
  // server.namespaces and server.selector (PrometheusOptions: the matchers every reader adds to
  // its pod-level selectors, ingest/prometheus/selector.h). Unset: no scope; given but empty
  // ('' or spaces): an error, not "every namespace".
  std::optional<std::string> namespaces;
  std::optional<std::string> selector;
  // --pod-label and --namespace-label: the labels of DCGM series that name the pod and its
  // namespace (PrometheusOptions::dcgm_labels; dcgm-exporter 1.x: pod_name, pod_namespace).
  std::string pod_label = "pod";
  std::string namespace_label = "namespace";

  // Pod ends known from elsewhere (kubectl's pods, ingest/kube/pod_ends.h): samples after them
  // are dropped, with kube-state-metrics' and the long CSV's own.
  PodEnds ends;

  // Discovered with the cluster (kube_source.h DiscoverPrometheus): the metrics service, and the
  // kubeconfig's credentials that its URL, the API server's service proxy, needs.
  std::string discovered;  // "Prometheus monitoring/kps:9090 (app=...)", "" when --prometheus was given
  std::string bearer_token, ca_pem, client_cert_pem, client_key_pem;

  bool given() const { return !path.empty() || !prometheus.empty(); }
  // What the telemetry is called in reports: the path, or the URL and range.
  std::string name;
  // With --prometheus, once LoadTelemetry or ResolvePrometheus ran: the server and the range,
  // for the other readers of the same server (serving metrics, training jobs, prices).
  PrometheusOptions server;
  TelemetryRange range;
};

void AddTelemetrySourceOptions(CLI::App* cmd, TelemetrySource& s);

// The first flag given on `cmd` that only a Prometheus reads (--namespace, --selector,
// --prometheus-timeout, --prometheus-retries, --pod-label, --namespace-label) when s.prometheus is empty (neither given
// nor discovered); "" when none: with --training-jobs or --inference alone such a flag would be ignored.
std::string UnusedPrometheusFlag(const CLI::App& cmd, const TelemetrySource& s);

// With --prometheus: checks the flags and fills s.server, s.range and s.name.
Result<void> ResolvePrometheus(TelemetrySource& s, double now_s);

// Reads the telemetry (and sets s.name; with --prometheus also s.server and s.range).
// `now_s` is the current Unix time.
Result<Telemetry> LoadTelemetry(TelemetrySource& s, double now_s);

// The current Unix time, seconds.
double NowSeconds();

}  // namespace gpufit::cli

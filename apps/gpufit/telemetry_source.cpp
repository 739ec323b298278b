#include "telemetry_source.h"

#include <fast_float/fast_float.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gpufit/core/rfc3339.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/files/containers_csv.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "gpufit/ingest/prometheus/kv_cache.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "progress.h"

namespace gpufit::cli {
namespace {

// "now", Unix seconds, RFC 3339, or a duration before `anchor_s`.
Result<double> ParseTime(const std::string& flag, const std::string& text, double now_s, double anchor_s) {
  if (text == "now") return now_s;
  double unix_s = 0;
  if (const auto r = fast_float::from_chars(text.data(), text.data() + text.size(), unix_s);
      r.ec == std::errc() && r.ptr == text.data() + text.size() && std::isfinite(unix_s) && unix_s >= 0) {
    return unix_s;
  }
  if (text.size() >= 20 && text[4] == '-') {
    const Result<double> t = ParseRfc3339(text);
    if (!t) return InvalidArgument("{}: {}", flag, t.error().message);
    return t;
  }
  const Result<double> ago = ParsePrometheusDuration(text);
  if (!ago)
    return InvalidArgument("{} '{}': expected now, Unix seconds, an RFC 3339 time or a duration (7d)", flag, text);
  return anchor_s - *ago;
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void AddTelemetrySourceOptions(CLI::App* cmd, TelemetrySource& s) {
  auto* file =
      cmd->add_option("--telemetry", s.path, "GenTD26 directory, or a long CSV file timestamp_s,pod,metric,value");
  auto* prom = cmd->add_option("--prometheus", s.prometheus,
                               "Prometheus base URL that scrapes dcgm-exporter (and kube-state-metrics), e.g. "
                               "http://prometheus.monitoring:9090 (default: the cluster's Prometheus, Thanos Query "
                               "or VictoriaMetrics service, found by its labels and read through the API server)");
  file->excludes(prom);
  cmd->add_option("--containers", s.containers,
                  "container CPU/memory long CSV timestamp_s,pod,container,image,metric,value (with --telemetry; "
                  "docs/telemetry-formats.md)")
      ->needs(file);
  // The range also serves a Prometheus discovered from --kubeconfig (kube_source.h): not with --telemetry.
  const auto not_file = [file](const std::string&) {
    return file->count() > 0
               ? std::string("requires --prometheus (given, or discovered with --kubeconfig), not --telemetry")
               : std::string();
  };
  // These and the scope and limits below need a Prometheus, given or discovered: with --telemetry
  // they would be silently ignored. plan also refuses the scope and limits when no Prometheus was
  // given or found (UnusedPrometheusFlag); the credentials are for a named --prometheus only.
  cmd->add_option("--since", s.since, "start: RFC 3339, Unix seconds, or a duration before --until (7d)")
      ->capture_default_str()
      ->check(not_file);
  cmd->add_option("--until", s.until, "end: RFC 3339, Unix seconds, now, or a duration before now")
      ->capture_default_str()
      ->check(not_file);
  cmd->add_option("--step", s.step,
                  "resolution: memory is each step's maximum, duty each step's mean; a window of more than 11,000 "
                  "steps is read at the smallest multiple under that")
      ->capture_default_str()
      ->check(not_file);
  cmd->add_option("--bearer-token-file", s.bearer_token_file, "file holding a bearer token for --prometheus")
      ->needs(prom);
  cmd->add_option("--ca-file", s.ca_file, "PEM CA bundle that signs the --prometheus server's certificate")
      ->needs(prom);
  cmd->add_flag("--insecure-skip-verify", s.insecure_skip_verify, "https without certificate verification")
      ->needs(prom);
  cmd->add_option("--prometheus-timeout", s.timeout_s, "seconds for each Prometheus answer, start to end")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str()
      ->check(not_file);
  cmd->add_option("--namespace", s.namespaces,
                  "read only these namespaces' pods (comma-separated); added to every query as a label matcher")
      ->check(not_file);
  cmd->add_option("--selector", s.selector,
                  "Prometheus label matchers added to every query, e.g. 'team=\"ml\",pod!~\"test-.*\"' "
                  "(= != =~ !~)")
      ->check(not_file);
  cmd->add_option("--pod-label", s.pod_label,
                  "the DCGM series' label that names the pod (dcgm-exporter 1.x: pod_name); exported_<label> wins "
                  "when a ServiceMonitor renamed it")
      ->capture_default_str()
      ->check(not_file);
  cmd->add_option("--namespace-label", s.namespace_label,
                  "the DCGM series' label that names the pod's namespace (dcgm-exporter 1.x: pod_namespace)")
      ->capture_default_str()
      ->check(not_file);
  cmd->add_option("--prometheus-retries", s.retries, "retries (back-off 1 s, doubling, at most 30 s) of a failed query")
      ->check(CLI::Range(0, 10))
      ->capture_default_str()
      ->check(not_file);
}

std::string UnusedPrometheusFlag(const CLI::App& cmd, const TelemetrySource& s) {
  if (!s.prometheus.empty()) return {};
  for (const char* flag : {"--prometheus-timeout", "--namespace", "--selector", "--pod-label", "--namespace-label",
                           "--prometheus-retries"})
    if (cmd.count(flag) > 0) return flag;
  return {};
}

Result<void> ResolvePrometheus(TelemetrySource& s, double now_s) {
  PrometheusOptions o;
  o.url = s.prometheus;
  o.ca_file = s.ca_file;
  o.ca_pem = s.ca_pem;
  o.client_cert_pem = s.client_cert_pem;
  o.client_key_pem = s.client_key_pem;
  o.bearer_token = s.bearer_token;
  o.insecure_skip_verify = s.insecure_skip_verify;
  o.timeout_s = s.timeout_s;
  o.retries = s.retries;
  if (!s.bearer_token_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(s.bearer_token_file, ec))
      return NotFound("--bearer-token-file {}: not a readable file", s.bearer_token_file);
    std::ifstream in(s.bearer_token_file);
    if (!in) return NotFound("--bearer-token-file {}: cannot read it", s.bearer_token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    o.bearer_token = ss.str();
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!o.bearer_token.empty() && space(o.bearer_token.back())) o.bearer_token.pop_back();
    while (!o.bearer_token.empty() && space(o.bearer_token.front())) o.bearer_token.erase(0, 1);
    if (o.bearer_token.empty())
      return InvalidArgument("--bearer-token-file {}: the file is empty", s.bearer_token_file);
    // RFC 6750 b64token characters; anything else (a space, a line break) would corrupt the header.
    if (o.bearer_token.size() > 16384 || std::any_of(o.bearer_token.begin(), o.bearer_token.end(), [](char c) {
          return static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f;
        }))
      return InvalidArgument("--bearer-token-file {}: not a bearer token (spaces, control characters, or over 16 KiB)",
                             s.bearer_token_file);
  }
  if (s.namespaces) {
    Result<std::vector<std::string>> ns = ParseNamespaces(*s.namespaces, "--namespace");
    if (!ns) return ns.error();
    o.namespaces = std::move(*ns);
  }
  if (s.selector) {
    Result<std::vector<LabelMatcher>> m = ParseLabelMatchers(*s.selector, "--selector");
    if (!m) return m.error();
    o.selector = std::move(*m);
  }
  // A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]* (Prometheus data model).
  for (const auto& [flag, name] : {std::pair<const char*, const std::string*>{"--pod-label", &s.pod_label},
                                   {"--namespace-label", &s.namespace_label}}) {
    const bool valid = !name->empty() && !std::isdigit(static_cast<unsigned char>(name->front())) &&
                       std::all_of(name->begin(), name->end(),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid)
      return InvalidArgument("{} must be a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*), got '{}'", flag, *name);
  }
  o.dcgm_labels = {.pod = s.pod_label, .ns = s.namespace_label};
  const Result<double> until = ParseTime("--until", s.until, now_s, now_s);
  if (!until) return until.error();
  const Result<double> since = ParseTime("--since", s.since, now_s, *until);
  if (!since) return since.error();
  const Result<double> step = ParsePrometheusDuration(s.step);
  if (!step) return InvalidArgument("--step: {}", step.error().message);
  if (*since >= *until) return InvalidArgument("--since ({}) must be before --until ({})", s.since, s.until);
  if (Verbose())  // -v: each request with its time and size
    o.on_request = [](const std::string& what, double seconds, std::uint64_t bytes, const std::string& error) {
      LogVerbose(error.empty() ? fmt::format("prometheus {}: {} bytes in {:.3f} s", what, bytes, seconds)
                               : fmt::format("prometheus {}: failed after {:.3f} s: {}", what, seconds, error));
    };
  s.server = std::move(o);
  s.range = {.since_s = *since, .until_s = *until, .step_s = *step};
  s.name = fmt::format("{} ({} to {}, step {} s)", s.prometheus, FormatRfc3339(*since), FormatRfc3339(*until), *step);
  return {};
}

Result<Telemetry> LoadTelemetry(TelemetrySource& s, double now_s) {
  Phase("read");
  if (s.prometheus.empty()) {
    s.name = s.path;
    Result<Telemetry> t = ReadTelemetry(s.path, s.ends);
    if (!t || s.containers.empty()) return t;
    Result<std::vector<ContainerSeries>> c = ReadContainersCsv(s.containers, *t);
    if (!c) return c.error();
    t->containers = std::move(*c);
    return t;
  }
  if (Result<void> ok = ResolvePrometheus(s, now_s); !ok) return ok.error();
  Result<Telemetry> t = ReadPrometheusTelemetry(s.server, s.range, s.ends);
  // Servers that pre-allocate GPU memory: their KV cache use (plan/preallocated.h sizes them).
  if (t)
    if (Result<std::size_t> kv = AddVllmKvCaches(s.server, *t); !kv) return kv.error();
  if (t && t->queries) {
    const TelemetryQueries& q = *t->queries;
    // Printed even with -q: the plan may rest on partial data (plan.json prometheus_warnings).
    for (const QueryNotice& n : q.notices)
      std::fprintf(stderr, "gpufit: warning: prometheus %s on query %s: %s\n", n.kind.c_str(),
                   QuoteForMessage(n.query, 200).c_str(), QuoteForMessage(n.text, 300).c_str());
    if (!Quiet())
      std::fprintf(stderr,
                   "gpufit: prometheus: %zu requests (%zu queries, %zu split into parts under the %.0f MiB answer cap, "
                   "%zu series look-ups), %.1f MiB read; step %g s%s\n",
                   q.requests, q.queries, q.split_queries, static_cast<double>(q.max_answer_bytes) / (1 << 20),
                   q.series_lookups, static_cast<double>(q.answer_bytes) / (1 << 20), q.step_s,
                   q.step_s != q.requested_step_s ? " (coarse: the window passed the points per series)" : "");
    // The source's name states the step actually read first, and the --step it replaced.
    if (q.step_s != q.requested_step_s)
      s.name =
          fmt::format("{} ({} to {}, step {} s, coarsened from --step {} s: the window passed {} points per series)",
                      s.prometheus, FormatRfc3339(s.range.since_s), FormatRfc3339(s.range.until_s), q.step_s,
                      q.requested_step_s, q.max_points_per_series);
  }
  return t;
}

}  // namespace gpufit::cli

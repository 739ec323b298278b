// A client of the Prometheus HTTP API's range queries (`/api/v1/query_range`).
//
// Wire format (https://prometheus.io/docs/prometheus/latest/querying/api/, summarized in
// ../shared/reference/formats.md (b)): a GET with the URL parameters `query`, `start`, `end`
// (Unix seconds) and `step` (seconds), plus `nocache=1` (VictoriaMetrics would otherwise
// move start and end onto multiples of the step) and `deny_partial_response=1` /
// `partial_response=false` (a VictoriaMetrics cluster or Thanos missing a storage node fails
// instead of answering in part); servers ignore the parameters they do not know. The answer is
// a JSON envelope {"status": "success"|"error", "errorType", "error", "data":
// {"resultType": "matrix", "result": [{"metric": {label: value}, "values": [[unix_s,
// "value"], ...]}]}}.
//
// Prometheus refuses a query whose (end - start) / step exceeds 11,000 points per series
// (HTTP 400 "exceeded maximum resolution", web/api/v1/api.go). QueryRange splits the range
// into chunks of at most `max_points` evaluation times on the same grid and joins the
// series again by label set, so callers see one answer.
//
// Failures: a refused connection, a timeout, HTTP 429 and HTTP 5xx are retried `retries`
// times with exponential back-off (backoff_s, 2 backoff_s, ..., at most 30 s); anything else
// fails at once. A 429 or 503 with Retry-After (seconds or an HTTP date) is retried after
// that wait instead, while the retry can end within timeout_s x (retries + 1) of the first
// try. `timeout_s` bounds each attempt as a whole, connection, headers and body (a watchdog
// closes the connection at the deadline: a server trickling bytes never trips a per-read timeout);
// refusals read "HTTP 429 Too Many Requests: <Prometheus's errorType: error, or the body>,
// Retry-After N s";
// an answer over `max_answer_bytes` (256 MiB) is refused with kInvalidArgument "the answer exceeds N MiB"
// (AnswerTooBig tells it apart; prometheus_split.h splits such queries). Every error names the URL, the query and
// the cause: kUnavailable when the server is down, too slow or keeps failing; kInvalidArgument for a refused query,
// malformed JSON or an answer that is not a matrix.
//
// Answers are parsed one series at a time (prometheus_answer.cpp: a byte scanner for the
// envelope, simdjson for each series), so a parse holds about its output besides the text.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/selector.h"

namespace gpufit {

// Prometheus's per-series point limit for range queries (web/api/v1/api.go).
inline constexpr int kPrometheusMaxPoints = 11000;

// The labels that name a DCGM series' pod and namespace. dcgm-exporter 2.x and later (run
// with --kubernetes) write `pod` and `namespace`; 1.x wrote `pod_name` and `pod_namespace`
// (and `container_name`), and relabelling rules may rename them (--pod-label,
// --namespace-label). Only DCGM series are read with them: kube-state-metrics' and
// cAdvisor's series keep `pod` and `namespace`.
struct PodLabelNames {
  std::string pod = "pod";
  std::string ns = "namespace";
};

struct PrometheusOptions {
  std::string url;                                // base URL: http(s)://host:port[/path-prefix]
  std::string bearer_token;                       // sent as "Authorization: Bearer <token>" when set
  std::string ca_file;                            // PEM bundle that signs the server's certificate (https)
  bool insecure_skip_verify = false;              // https without certificate verification
  // PEM text, for a server reached through the Kubernetes API server's service proxy with the
  // kubeconfig's credentials (kube_api/metrics_service.h): the CAs trusted instead of the system's
  // (with ca_file, both), and a client certificate with its key (both or neither). https only.
  std::string ca_pem;
  std::string client_cert_pem, client_key_pem;
  double timeout_s = 30;                          // each attempt, connect to last byte, seconds
  int retries = 3;                                // retries after the first attempt
  double backoff_s = 1;                           // first back-off, seconds; doubles on each retry
  int max_points = kPrometheusMaxPoints;          // evaluation times per request and series
  std::uint64_t max_answer_bytes = 256ull << 20;  // the largest answer read, bytes (tests lower it)
  // --namespace and --selector: matchers every reader adds to its pod-level selectors
  // (ScopeMatchers, AddMatchers in prometheus_selector.h). QueryRange itself sends queries as given.
  std::vector<std::string> namespaces;
  std::vector<LabelMatcher> selector;
  PodLabelNames dcgm_labels;  // --pod-label, --namespace-label: how DCGM series name their pod
  // Called once per HTTP request after its last attempt (the CLI's -v log; unset: nothing is
  // called): `what` names it (URL, path, query, range), `seconds` its wall time with retries,
  // `bytes` the answer's size (0 when it failed), `error` "" or why it failed. Called on the
  // thread that queries; the client never calls it twice at once.
  std::function<void(const std::string& what, double seconds, std::uint64_t bytes, const std::string& error)>
      on_request;

  // `selector`, then the namespace matcher of `namespaces` (NamespaceMatchers).
  std::vector<LabelMatcher> ScopeMatchers() const;
};

// A warning or info a Prometheus answer carried beside its data ("partial result: store
// gateway down"; Prometheus 2.x `warnings`, 3.x also `infos`): the answer may be partial or
// approximate, and whoever reads a plan made from it must be told.
struct PrometheusNotice {
  std::string query;  // the PromQL asked
  std::string kind;   // "warning" or "info"
  std::string text;   // as the server wrote it
};

// Requests sent and bytes read, summed over the queries of one read (a log line and the
// plan's telemetry section report them). Retries are not counted as requests.
struct PrometheusQueryStats {
  std::size_t requests = 0;        // HTTP requests answered: range chunks plus series look-ups
  std::size_t series_lookups = 0;  // /api/v1/series requests (prometheus_split.h estimates)
  std::size_t queries = 0;         // range queries asked (before splitting)
  std::size_t split_queries = 0;   // of those, split by namespace or pod batch
  std::size_t parts = 0;           // range queries sent after splitting (before point chunks)
  std::uint64_t answer_bytes = 0;  // bytes of all answers
  std::vector<PrometheusNotice> notices;  // each (query, kind, text) once, in the order first seen
};

// One answer series. time_s ascending; values as Prometheus printed them, parsed (NaN and
// +/-Inf kept: callers decide).
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<double> time_s;
  std::vector<double> value;
};

struct RangeQuery {
  std::string query;   // PromQL
  double start_s = 0;  // Unix seconds
  double end_s = 0;    // Unix seconds, >= start_s
  double step_s = 60;  // seconds, > 0
};

// Runs `q`, in chunks when it has more than options.max_points evaluation times.
// Series ordered by label set. The overload with `stats` adds its requests and bytes there.
Result<std::vector<PromSeries>> QueryRange(const PrometheusOptions& options, const RangeQuery& q);
Result<std::vector<PromSeries>> QueryRange(const PrometheusOptions& options, const RangeQuery& q,
                                           PrometheusQueryStats& stats);

// The label sets of the series that match `selector` with samples between start_s and end_s
// (`/api/v1/series`, answered from the index: no samples are read). Errors as QueryRange's.
Result<std::vector<std::map<std::string, std::string>>> QuerySeries(const PrometheusOptions& options,
                                                                    const std::string& selector, double start_s,
                                                                    double end_s, PrometheusQueryStats& stats);

// A Retry-After header's wait in seconds from `now`: delay-seconds ("120") or an HTTP-date
// ("Sun, 06 Nov 1994 08:49:37 GMT", in the past: 0); nullopt when it is neither.
std::optional<double> ParseRetryAfter(std::string_view value, std::chrono::system_clock::time_point now);

// Whether `error` is QueryRange's "the answer exceeds options.max_answer_bytes".
bool AnswerTooBig(const Error& error);

// A Prometheus duration ("30s", "5m", "1h30m", "7d", "250ms"; units ms s m h d w y, with
// d = 24 h, w = 7 d, y = 365 d, as in prometheus/common model.ParseDuration) or a plain
// number of seconds ("60", "0.5"), in seconds. Errors (kInvalidArgument) quote the text.
Result<double> ParsePrometheusDuration(std::string_view text);

// The warnings and infos of one answer, as the server wrote them.
struct PromAnswerNotes {
  std::vector<std::string> warnings, infos;
};

// Parses one query_range answer body (exposed for tests). `where` names it in errors. The
// overload with `notes` adds the answer's `warnings` and `infos` there.
// Shapes and errors: the envelope above; errors give the JSON path of the field
// ("data.result[3].values[7][1]: expected a string, got number") or the byte where the
// syntax broke ("malformed JSON at byte N: ...").
Result<std::vector<PromSeries>> ParseQueryRangeAnswer(const std::string& body, const std::string& where);
Result<std::vector<PromSeries>> ParseQueryRangeAnswer(const std::string& body, const std::string& where,
                                                      PromAnswerNotes& notes);

// Parses one /api/v1/series answer ({"status":"success","data":[{label: value}, ...]}).
Result<std::vector<std::map<std::string, std::string>>> ParseSeriesAnswer(const std::string& body,
                                                                          const std::string& where);
Result<std::vector<std::map<std::string, std::string>>> ParseSeriesAnswer(const std::string& body,
                                                                          const std::string& where,
                                                                          PromAnswerNotes& notes);

}  // namespace gpufit

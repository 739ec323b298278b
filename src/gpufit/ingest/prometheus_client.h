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
// fails at once. `timeout_s` bounds the connection and the whole answer of each attempt;
// an answer over 256 MiB is refused. Every error names the URL, the query and the cause: kUnavailable when the server
// is down, too slow or keeps failing; kInvalidArgument for a refused query, malformed JSON or an answer that is not a
// matrix.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit {

// Prometheus's per-series point limit for range queries (web/api/v1/api.go).
inline constexpr int kPrometheusMaxPoints = 11000;

struct PrometheusOptions {
  std::string url;                        // base URL: http(s)://host:port[/path-prefix]
  std::string bearer_token;               // sent as "Authorization: Bearer <token>" when set
  std::string ca_file;                    // PEM bundle that signs the server's certificate (https)
  bool insecure_skip_verify = false;      // https without certificate verification
  double timeout_s = 30;                  // connect and read timeout of one request, seconds
  int retries = 3;                        // retries after the first attempt
  double backoff_s = 1;                   // first back-off, seconds; doubles on each retry
  int max_points = kPrometheusMaxPoints;  // evaluation times per request and series
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
// Series ordered by label set.
Result<std::vector<PromSeries>> QueryRange(const PrometheusOptions& options, const RangeQuery& q);

// A Prometheus duration ("30s", "5m", "1h30m", "7d", "250ms"; units ms s m h d w y, with
// d = 24 h, w = 7 d, y = 365 d, as in prometheus/common model.ParseDuration) or a plain
// number of seconds ("60", "0.5"), in seconds. Errors (kInvalidArgument) quote the text.
Result<double> ParsePrometheusDuration(std::string_view text);

// Parses one query_range answer body (exposed for tests). `where` names it in errors.
Result<std::vector<PromSeries>> ParseQueryRangeAnswer(const std::string& body, const std::string& where);

}  // namespace gpufit

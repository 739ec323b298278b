// Range queries split so that no answer passes PrometheusOptions::max_answer_bytes (256 MiB by
// default): a 7-day, 60 s query over a cluster holds 10,080 points per series, about 400 KB of
// JSON each, so the cap is reached near 650 series.
//
// The rule (QueryRangeSplit):
//  1. Estimate first, from the index: one /api/v1/series request lists the series the
//     selector matches in the range (no samples are read; QuerySeries). Each series is
//     charged kEstimatedBytesPerPoint bytes per evaluation time ([1767225600,"1.234e+05"],
//     with room for longer values and its share of the labels).
//  2. If the whole fits, one query. Otherwise the series are grouped by their `namespace`
//     label ("" for none) in name order: namespaces that fit are packed greedily into parts
//     (namespace="a" or namespace=~"a|b"); a namespace that does not fit alone is cut into
//     batches of its pods, greedily in pod order (namespace="a",pod=~"p1|p2|..."; names
//     regex-escaped; "" in the alternation keeps series without a pod label). A batch also
//     closes at kMaxBatchRegexBytes of alternation, to keep the request line short.
//  3. React to the cap: a part whose answer still passes it (values longer than estimated)
//     is halved (its namespaces, else its pods) and each half asked again; a single pod over
//     the cap is an error that says to narrow the range or widen --step.
//  4. The parts select disjoint series (each series has one namespace and one pod value), so
//     their union, ordered by label set, is the unsplit answer exactly. Series that appear
//     after the look-up (a range ending now) are not in any batch of a split query.
// Every part is still cut into chunks of at most PrometheusOptions::max_points points.
// Requests are counted in PrometheusQueryStats: 1 look-up + the parts' chunks per query.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/selector.h"

namespace gpufit {

inline constexpr std::uint64_t kEstimatedBytesPerPoint = 40;
inline constexpr std::size_t kMaxBatchRegexBytes = 16 * 1024;

// function(selector{scope matchers}window), e.g. max_over_time(DCGM_FI_DEV_FB_USED{...}[59999ms]).
struct SplitQuery {
  std::string function;                        // "max_over_time", "avg_over_time"
  std::string selector;                        // metric selector with its own matchers, without the scope's
  std::string window;                          // "[59999ms]"
  double start_s = 0, end_s = 0, step_s = 60;  // as RangeQuery
};

// One part of a split query: the namespaces it covers and, when it is a batch of one
// namespace's pods, those pods ("" = series without a pod label).
struct QueryPart {
  std::vector<std::string> namespaces;
  std::vector<std::string> pods;  // empty: every pod of `namespaces`
  bool whole = false;             // the unsplit query (no matcher added)

  // namespace / pod matchers of this part (none when whole).
  std::vector<LabelMatcher> Matchers() const;
};

// The parts for `series` (label sets from QuerySeries) at `points` evaluation times each
// under `max_bytes` (rule 2 above). Exposed for tests.
std::vector<QueryPart> PlanQueryParts(const std::vector<std::map<std::string, std::string>>& series, std::size_t points,
                                      std::uint64_t max_bytes);

// Runs `q` with options.ScopeMatchers() added to its selector, split as above; adds its
// requests to `stats`. Errors: those of QueryRange and QuerySeries.
Result<std::vector<PromSeries>> QueryRangeSplit(const PrometheusOptions& options, const SplitQuery& q,
                                                PrometheusQueryStats& stats);

}  // namespace gpufit

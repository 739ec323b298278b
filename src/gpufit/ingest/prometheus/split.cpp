#include "gpufit/ingest/prometheus/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;

std::string Get(const Labels& l, const char* name) {
  const auto it = l.find(name);
  return it == l.end() ? "" : it->second;
}

LabelMatcher OneOf(const char* label, const std::vector<std::string>& names) {
  if (names.size() == 1) return {.label = label, .op = "=", .value = names.front()};
  std::string alternation;
  for (std::size_t i = 0; i < names.size(); ++i) alternation += (i == 0 ? "" : "|") + RegexEscape(names[i]);
  return {.label = label, .op = "=~", .value = alternation};
}

// Series per pod, per namespace ("" where the label is absent), in name order.
using Groups = std::map<std::string, std::map<std::string, std::size_t>>;

Groups GroupSeries(const std::vector<Labels>& series) {
  Groups g;
  for (const Labels& l : series) ++g[Get(l, "namespace")][Get(l, "pod")];
  return g;
}

// Halves a part whose answer passed the cap; false when it is a single pod.
bool Halve(const QueryPart& part, const Groups& groups, std::deque<QueryPart>& queue) {
  QueryPart p = part;
  if (p.whole) {
    p.whole = false;
    for (const auto& [ns, pods] : groups) p.namespaces.push_back(ns);
  }
  const auto halves = [&](std::vector<std::string> QueryPart::*member) {
    std::vector<std::string>& names = p.*member;
    const auto mid = names.begin() + static_cast<std::ptrdiff_t>(names.size() / 2);
    QueryPart a = p, b = p;
    a.*member = std::vector<std::string>(names.begin(), mid);
    b.*member = std::vector<std::string>(mid, names.end());
    queue.push_front(std::move(b));
    queue.push_front(std::move(a));
  };
  if (p.namespaces.size() > 1) {
    halves(&QueryPart::namespaces);
    return true;
  }
  if (p.pods.empty() && !p.namespaces.empty())
    if (const auto it = groups.find(p.namespaces.front()); it != groups.end())
      for (const auto& [pod, n] : it->second) p.pods.push_back(pod);
  if (p.pods.size() < 2) return false;
  halves(&QueryPart::pods);
  return true;
}

}  // namespace

std::vector<LabelMatcher> QueryPart::Matchers() const {
  if (whole) return {};
  std::vector<LabelMatcher> m;
  if (!namespaces.empty()) m.push_back(OneOf("namespace", namespaces));
  if (!pods.empty()) m.push_back(OneOf("pod", pods));
  return m;
}

std::vector<QueryPart> PlanQueryParts(const std::vector<Labels>& series, std::size_t points, std::uint64_t max_bytes) {
  const std::uint64_t per_series = std::max<std::uint64_t>(1, points) * kEstimatedBytesPerPoint;
  const auto fits = [&](std::size_t n) { return n * per_series <= max_bytes; };
  if (fits(series.size())) return {QueryPart{.namespaces = {}, .pods = {}, .whole = true}};
  std::vector<QueryPart> parts;
  QueryPart pack;  // namespaces that fit, packed together
  std::size_t pack_series = 0, pack_regex = 0;
  for (const auto& [ns, pods] : GroupSeries(series)) {
    std::size_t ns_series = 0;
    for (const auto& [pod, n] : pods) ns_series += n;
    if (fits(ns_series)) {
      if (!pack.namespaces.empty() &&
          (!fits(pack_series + ns_series) || pack_regex + ns.size() + 1 > kMaxBatchRegexBytes)) {
        parts.push_back(std::move(pack));
        pack = {};
        pack_series = pack_regex = 0;
      }
      pack.namespaces.push_back(ns);
      pack_series += ns_series;
      pack_regex += ns.size() + 1;
      continue;
    }
    QueryPart batch{.namespaces = {ns}, .pods = {}, .whole = false};
    std::size_t batch_series = 0, batch_regex = 0;
    for (const auto& [pod, n] : pods) {
      if (!batch.pods.empty() && (!fits(batch_series + n) || batch_regex + pod.size() + 1 > kMaxBatchRegexBytes)) {
        parts.push_back(std::move(batch));
        batch = QueryPart{.namespaces = {ns}, .pods = {}, .whole = false};
        batch_series = batch_regex = 0;
      }
      batch.pods.push_back(pod);
      batch_series += n;
      batch_regex += pod.size() + 1;
    }
    parts.push_back(std::move(batch));
  }
  if (!pack.namespaces.empty()) parts.push_back(std::move(pack));
  return parts;
}

Result<std::vector<PromSeries>> QueryRangeSplit(const PrometheusOptions& o, const SplitQuery& q,
                                                PrometheusQueryStats& stats) {
  const std::string selector = AddMatchers(q.selector, o.ScopeMatchers());
  ++stats.queries;
  const Result<std::vector<Labels>> series = QuerySeries(o, selector, q.start_s - q.step_s, q.end_s, stats);
  if (!series) return series.error();
  const double steps = std::floor((q.end_s - q.start_s) / q.step_s + 1e-9);
  const std::size_t points = steps >= 0 && steps < 1e9 ? static_cast<std::size_t>(steps) + 1 : 1;
  std::deque<QueryPart> queue;
  for (QueryPart& p : PlanQueryParts(*series, points, o.max_answer_bytes)) queue.push_back(std::move(p));
  bool split = queue.size() > 1 || !queue.front().whole;
  if (split) ++stats.split_queries;
  const Groups groups = GroupSeries(*series);
  std::vector<PromSeries> out;
  while (!queue.empty()) {
    const QueryPart part = std::move(queue.front());
    queue.pop_front();
    const RangeQuery rq{.query = fmt::format("{}({}{})", q.function, AddMatchers(selector, part.Matchers()), q.window),
                        .start_s = q.start_s,
                        .end_s = q.end_s,
                        .step_s = q.step_s};
    ++stats.parts;
    Result<std::vector<PromSeries>> r = QueryRange(o, rq, stats);
    if (!r && AnswerTooBig(r.error())) {
      if (!Halve(part, groups, queue))
        return Error{r.error().code, r.error().message + " (the series of a single pod; nothing left to split)"};
      if (!split) ++stats.split_queries;
      split = true;
      continue;
    }
    if (!r) return r.error();
    for (PromSeries& s : *r) out.push_back(std::move(s));
  }
  if (split)
    std::sort(out.begin(), out.end(), [](const PromSeries& a, const PromSeries& b) { return a.labels < b.labels; });
  return out;
}

}  // namespace gpufit

// The public entry points of ingest/prometheus/serving.h: every engine of the registry
// (serving/engine.h) in order, kube-state-metrics (serving/kube.h) and the shared mapping
// (serving/workloads.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "gpufit/ingest/prometheus/serving.h"
#include "gpufit/ingest/prometheus/serving/engine.h"
#include "gpufit/ingest/prometheus/serving/kube.h"
#include "gpufit/ingest/prometheus/serving/workloads.h"

namespace gpufit {
namespace serving {

Asker::Asker(const PrometheusOptions& options, const TelemetryGrid& grid)
    : options_(options),
      grid_(grid),
      since_s_(grid.grid.start_s - grid.grid.step_s),
      end_s_(grid.grid.start_s + static_cast<double>(grid.grid.samples - 1) * grid.grid.step_s),
      whole_(fmt::format("[{}s]", static_cast<long long>(std::llround(end_s_ - since_s_)))) {}

Result<std::vector<PromSeries>> Asker::OnGrid(const std::string& promql) const {
  return QueryRange(options_,
                    RangeQuery{.query = promql, .start_s = since_s_, .end_s = end_s_, .step_s = grid_.grid.step_s});
}

Result<std::vector<PromSeries>> Asker::Counter(const std::string& metric) const {
  return OnGrid(fmt::format("last_over_time({}{})", AddMatchers(metric, options_.ScopeMatchers()), grid_.window));
}

Result<std::vector<PromSeries>> Asker::GaugeMax(const std::string& metric) const {
  return OnGrid(fmt::format("max_over_time({}{})", AddMatchers(metric, options_.ScopeMatchers()), grid_.window));
}

Result<std::vector<PromSeries>> Asker::IncreaseOverRange(const std::string& metric) const {
  return Once(fmt::format("increase({}{})", AddMatchers(metric, options_.ScopeMatchers()), whole_));
}

Result<std::vector<PromSeries>> Asker::Once(const std::string& promql) const {
  return QueryRange(options_,
                    RangeQuery{.query = promql, .start_s = end_s_, .end_s = end_s_, .step_s = grid_.grid.step_s});
}

void PodNamespaces(const std::vector<PromSeries>& series, std::set<std::string>& into) {
  for (const PromSeries& s : series) {
    const std::string ns = NamespaceOf(PodKeyFromLabels(s.labels));
    if (!ns.empty()) into.insert(ns);
  }
}

}  // namespace serving

const char* ServingEngineName(ServingEngine e) {
  for (const serving::ServingEngineReader& r : serving::ServingEngines())
    if (r.id == e) return r.name;
  return "";
}

double HistogramTotal::Quantile(double q) const {
  if (buckets.empty()) return 0;
  const double total = buckets.back().second;
  if (!(total > 0)) return 0;
  const double rank = q * total;
  double lower = 0, below = 0;
  for (const auto& [le, cumulative] : buckets) {
    if (cumulative >= rank) {
      if (std::isinf(le)) return lower;  // the highest finite bound
      if (cumulative == below) return le;
      return lower + (le - lower) * (rank - below) / (cumulative - below);
    }
    lower = le;
    below = cumulative;
  }
  return lower;
}

double ServingWorkload::TotalRequests() const { return serving::Sum(requests); }

std::vector<ServingWorkload> ServingFromSeries(const ServingAnswers& answers, const std::vector<ServingQuery>& queries,
                                               const GridSpec& grid) {
  serving::Mapper m(grid, answers);
  for (const serving::ServingEngineReader& e : serving::ServingEngines()) e.map(answers, queries, m);
  return m.Finish();
}

Result<std::pair<std::string, std::string>> ParseNamedQuery(const std::string& flag, const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return InvalidArgument("{} '{}': expected NAME=PROMQL (NAME: a deployment, or namespace/deployment)", flag, text);
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Result<std::vector<ServingWorkload>> ReadPrometheusServing(const PrometheusOptions& options,
                                                           const TelemetryRange& range,
                                                           const std::vector<ServingQuery>& queries) {
  const Result<TelemetryGrid> tg = GridFor(range);
  if (!tg) return tg.error();
  const serving::Asker ask(options, *tg);
  const std::vector<serving::ServingEngineReader>& engines = serving::ServingEngines();

  ServingAnswers a;
  std::vector<bool> found;
  for (const serving::ServingEngineReader& e : engines) {
    const Result<bool> f = e.discover(ask, queries, a);
    if (!f) return f.error();
    found.push_back(*f);
  }
  if (std::find(found.begin(), found.end(), true) == found.end()) return std::vector<ServingWorkload>{};

  std::set<std::string> namespaces;
  for (const serving::ServingEngineReader& e : engines) e.namespaces(a, queries, namespaces);
  if (const Result<void> k = serving::ReadKubeStateMetrics(ask, namespaces, a); !k) return k.error();
  for (std::size_t i = 0; i < engines.size(); ++i) {
    if (!found[i]) continue;
    if (const Result<void> r = engines[i].read(ask, a); !r) return r.error();
  }
  if (const Result<void> c = CheckServingAnswers(a, queries); !c) return c.error();
  return ServingFromSeries(a, queries, tg->grid);
}

}  // namespace gpufit

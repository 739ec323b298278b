// Any other engine: a user's PromQL (ServingQuery, `--serving-query NAME=PROMQL` and
// `--serving-latency NAME=PROMQL`), plan's engine "query":
//   requests_per_s  requests per second, all series summed (non-finite and non-positive
//                   values skipped); discovers one service per query
//   latency_s       (optional) mean seconds per request, one series expected (with several,
//                   at each step the first one's finite, non-negative value where the step
//                   has requests)
// NAME is "namespace/deployment" or a deployment name (namespace "default"): the workload's
// namespace, owner name and model; it has no pods, so kube-state-metrics adds only its
// Deployment's replicas.
//
// Into ServingWorkload, per step: requests = the rate x the step; latency_sum_s = latency x
// requests and latency_count = requests (so the mean is request-weighted).
// Queries: each query as given, on the grid (engine.h), at discovery.
#include <cmath>
#include <string>

#include "gpufit/ingest/prometheus/serving/engine.h"
#include "gpufit/ingest/prometheus/serving/workloads.h"

namespace gpufit::serving {
namespace {

constexpr ServingEngine kEngine = ServingEngine::kQuery;

std::string NamespaceOfName(const std::string& name) {
  const std::size_t slash = name.find('/');
  return slash == std::string::npos ? "default" : name.substr(0, slash);
}

Result<bool> Discover(const Asker& ask, const std::vector<ServingQuery>& queries, ServingAnswers& a) {
  for (const ServingQuery& q : queries) {
    auto r = ask.OnGrid(q.requests_per_s);
    if (!r) return r.error();
    a.query_rates.push_back(std::move(*r));
    std::vector<PromSeries> latency;
    if (!q.latency_s.empty()) {
      auto l = ask.OnGrid(q.latency_s);
      if (!l) return l.error();
      latency = std::move(*l);
    }
    a.query_latencies.push_back(std::move(latency));
  }
  return !queries.empty();
}

void Namespaces(const ServingAnswers&, const std::vector<ServingQuery>& queries, std::set<std::string>& into) {
  for (const ServingQuery& q : queries) into.insert(NamespaceOfName(q.name));
}

Result<void> Read(const Asker&, ServingAnswers&) { return {}; }

void Map(const ServingAnswers& a, const std::vector<ServingQuery>& queries, Mapper& m) {
  const GridSpec& grid = m.grid();
  for (std::size_t q = 0; q < queries.size() && q < a.query_rates.size(); ++q) {
    const std::size_t slash = queries[q].name.find('/');
    const std::string ns = NamespaceOfName(queries[q].name);
    const std::string name = slash == std::string::npos ? queries[q].name : queries[q].name.substr(slash + 1);
    ServingWorkload& w = m.Named(kEngine, ns, name);
    w.engine = kEngine;
    w.kube_namespace = ns;
    w.owner_name = name;
    w.owner_basis = "named by --serving-query";
    w.model = name;
    w.grid = grid;
    w.requests.assign(grid.samples, 0.0);
    w.metrics.push_back(queries[q].requests_per_s);
    w.no_series = a.query_rates[q].empty();
    Steps rate(grid.samples, 0.0);
    for (const PromSeries& s : a.query_rates[q])
      for (std::size_t i = 0; i < s.time_s.size(); ++i)
        if (const auto k = m.StepOf(s.time_s[i]); k && std::isfinite(s.value[i]) && s.value[i] > 0)
          rate[*k] += s.value[i];
    for (std::size_t k = 0; k < grid.samples; ++k) w.requests[k] = rate[k] * grid.step_s;
    if (q < a.query_latencies.size() && !queries[q].latency_s.empty()) {
      w.metrics.push_back(queries[q].latency_s);
      w.latency_sum_s.assign(grid.samples, 0.0);
      w.latency_count.assign(grid.samples, 0.0);
      for (const PromSeries& s : a.query_latencies[q])
        for (std::size_t i = 0; i < s.time_s.size(); ++i) {
          const auto k = m.StepOf(s.time_s[i]);
          if (!k || !std::isfinite(s.value[i]) || s.value[i] < 0) continue;
          if (w.latency_count[*k] > 0) continue;  // one series: the first
          w.latency_sum_s[*k] = s.value[i] * w.requests[*k];
          w.latency_count[*k] = w.requests[*k];
        }
    }
  }
}

}  // namespace

extern const ServingEngineReader kPromqlReader{kEngine, "query", Discover, Namespaces, Read, Map};

}  // namespace gpufit::serving

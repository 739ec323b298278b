#include "gpufit/ingest/prometheus_serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Label(const Labels& l, const char* name) {
  const auto it = l.find(name);
  return it == l.end() ? "" : it->second;
}

// The object's namespace on a kube-state-metrics series (exported_namespace when the scrape
// renamed it).
std::string Namespace(const Labels& l) {
  const std::string exported = Label(l, "exported_namespace");
  return exported.empty() ? Label(l, "namespace") : exported;
}

std::string NamespaceOf(const std::string& pod_key) {
  const std::size_t slash = pod_key.find('/');
  return slash == std::string::npos ? "" : pod_key.substr(0, slash);
}

// Step index of time t on the grid: 0 is the first step's end, -1 the baseline at `since`.
long long StepIndex(const GridSpec& grid, double t) { return std::llround((t - grid.start_s) / grid.step_s); }

// Per-step increases of one counter series (header comment: the reset rule, the first point).
std::vector<double> StepIncreases(const PromSeries& s, const GridSpec& grid, bool born_in_range, int& resets) {
  std::vector<double> out(grid.samples, 0.0);
  std::optional<double> previous;
  for (std::size_t i = 0; i < s.time_s.size(); ++i) {
    const double v = s.value[i];
    if (!std::isfinite(v) || v < 0) continue;
    const long long k = StepIndex(grid, s.time_s[i]);
    if (k >= static_cast<long long>(grid.samples)) break;
    double increase = 0;
    if (previous) {
      if (v >= *previous) {
        increase = v - *previous;
      } else {
        increase = v;  // the process restarted: its counter began again at 0
        ++resets;
      }
    } else if (born_in_range) {
      increase = v;
    }
    previous = v;
    if (k >= 0) out[static_cast<std::size_t>(k)] += increase;
  }
  return out;
}

void AddTo(std::vector<double>& into, const std::vector<double>& x) {
  if (into.empty()) into.assign(x.size(), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) into[i] += x[i];
}

double Sum(const std::vector<double>& x) {
  double s = 0;
  for (const double v : x) s += v;
  return s;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double LastFinite(const PromSeries& s) {
  for (std::size_t i = s.value.size(); i > 0; --i)
    if (std::isfinite(s.value[i - 1])) return s.value[i - 1];
  return std::numeric_limits<double>::quiet_NaN();
}

using WorkloadKey =
    std::tuple<std::string, std::string, std::string, std::string, int>;  // ns, kind, name, model, engine

struct Mapper {
  const GridSpec& grid;
  double since_s;                                                                               // the baseline time
  std::map<std::string, std::pair<std::string, std::string>> pod_owner;                         // pod key -> kind, name
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> rs_owner;  // ns, rs -> kind, name
  std::map<std::string, double> created, ready_time, first_ready;
  std::map<WorkloadKey, ServingWorkload> workloads;
  std::map<std::string, WorkloadKey> key_of_pod_model;  // "engine|pod|model" -> workload

  explicit Mapper(const GridSpec& g) : grid(g), since_s(g.start_s - g.step_s) {}

  bool BornInRange(const std::string& pod) const {
    const auto it = created.find(pod);
    return it != created.end() && it->second > since_s;
  }

  ServingWorkload& Of(ServingEngine engine, const std::string& pod, const std::string& model) {
    const std::string ns = NamespaceOf(pod);
    std::string kind, name, basis;
    if (const auto o = pod_owner.find(pod); o != pod_owner.end()) {
      std::tie(kind, name) = o->second;
      basis = fmt::format("kube_pod_owner: {} {}", kind, name);
      if (kind == "ReplicaSet") {
        if (const auto r = rs_owner.find({ns, name}); r != rs_owner.end() && !r->second.first.empty()) {
          basis += fmt::format(" -> kube_replicaset_owner: {} {}", r->second.first, r->second.second);
          std::tie(kind, name) = r->second;
        }
      }
    } else {
      basis = "no kube_pod_owner for its pods: the pods of one model in one namespace";
    }
    const WorkloadKey key{ns, kind, name, model, static_cast<int>(engine)};
    ServingWorkload& w = workloads[key];
    if (w.grid.samples == 0) {
      w.engine = engine;
      w.kube_namespace = ns;
      w.owner_kind = kind;
      w.owner_name = name;
      w.owner_basis = basis;
      w.model = model;
      w.grid = grid;
      w.requests.assign(grid.samples, 0.0);
    }
    if (std::find(w.pods.begin(), w.pods.end(), pod) == w.pods.end()) w.pods.push_back(pod);
    return w;
  }

  // The counter series of one engine into `field` of their workloads.
  template <class Field>
  void Counters(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                const char* metric, Field field, double scale = 1.0) {
    for (const PromSeries& s : series) {
      const std::string pod = PodKeyFromLabels(s.labels);
      if (pod.empty()) continue;
      ServingWorkload& w = Of(engine, pod, Label(s.labels, model_label));
      std::vector<double> inc = StepIncreases(s, grid, BornInRange(pod), w.counter_resets);
      for (double& x : inc) x *= scale;
      field(w, inc);
      if (std::find(w.metrics.begin(), w.metrics.end(), metric) == w.metrics.end()) w.metrics.push_back(metric);
    }
  }

  // Only for workloads already found by their request counter.
  template <class Field>
  void Existing(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                const char* metric, Field field, double scale = 1.0) {
    std::vector<PromSeries> known;
    for (const PromSeries& s : series) {
      const std::string pod = PodKeyFromLabels(s.labels);
      for (const auto& [key, w] : workloads)
        if (std::get<4>(key) == static_cast<int>(engine) && std::get<3>(key) == Label(s.labels, model_label) &&
            std::find(w.pods.begin(), w.pods.end(), pod) != w.pods.end()) {
          known.push_back(s);
          break;
        }
    }
    Counters(known, engine, model_label, metric, field, scale);
  }

  void Buckets(const std::vector<PromSeries>& series, HistogramTotal ServingWorkload::*field, const char* metric) {
    std::map<WorkloadKey, std::map<double, double>> by;
    for (const PromSeries& s : series) {
      const std::string pod = PodKeyFromLabels(s.labels);
      const std::string le = Label(s.labels, "le");
      if (pod.empty() || le.empty()) continue;
      const double bound = le == "+Inf" ? kInf : std::strtod(le.c_str(), nullptr);
      const double v = LastFinite(s);
      if (!std::isfinite(v) || v < 0) continue;
      for (auto& [key, w] : workloads) {
        if (w.engine != ServingEngine::kVllm || w.model != Label(s.labels, "model_name") ||
            std::find(w.pods.begin(), w.pods.end(), pod) == w.pods.end())
          continue;
        by[key][bound] += v;
        if (std::find(w.metrics.begin(), w.metrics.end(), metric) == w.metrics.end()) w.metrics.push_back(metric);
      }
    }
    for (auto& [key, buckets] : by) {
      HistogramTotal& h = workloads[key].*field;
      h.buckets.assign(buckets.begin(), buckets.end());
    }
  }
};

}  // namespace

const char* ServingEngineName(ServingEngine e) {
  switch (e) {
    case ServingEngine::kVllm:
      return "vllm";
    case ServingEngine::kTriton:
      return "triton";
    case ServingEngine::kQuery:
      return "query";
  }
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

double ServingWorkload::TotalRequests() const { return Sum(requests); }

std::vector<ServingWorkload> ServingFromSeries(const ServingAnswers& a, const std::vector<ServingQuery>& queries,
                                               const GridSpec& grid) {
  Mapper m(grid);
  for (const PromSeries& s : a.pod_owner) {
    const std::string pod = PodKeyFromLabels(s.labels);
    if (pod.empty()) continue;
    const bool controller = Label(s.labels, "owner_is_controller") != "false";
    if (controller || !m.pod_owner.contains(pod))
      m.pod_owner[pod] = {Label(s.labels, "owner_kind"), Label(s.labels, "owner_name")};
  }
  for (const PromSeries& s : a.replicaset_owner) {
    const std::string rs = Label(s.labels, "replicaset");
    if (!rs.empty() && Label(s.labels, "owner_is_controller") != "false")
      m.rs_owner[{Namespace(s.labels), rs}] = {Label(s.labels, "owner_kind"), Label(s.labels, "owner_name")};
  }
  for (const PromSeries& s : a.pod_created) {
    const std::string pod = PodKeyFromLabels(s.labels);
    const double v = LastFinite(s);
    if (!pod.empty() && std::isfinite(v) && v > 0) m.created[pod] = v;
  }
  for (const PromSeries& s : a.pod_ready_time) {
    const std::string pod = PodKeyFromLabels(s.labels);
    for (const double v : s.value)
      if (!pod.empty() && std::isfinite(v) && v > 0)
        m.ready_time[pod] = m.ready_time.contains(pod) ? std::min(m.ready_time[pod], v) : v;
  }
  for (const PromSeries& s : a.pod_ready) {
    const std::string pod = PodKeyFromLabels(s.labels);
    if (pod.empty() || Label(s.labels, "condition") != "true") continue;
    for (std::size_t i = 0; i < s.value.size(); ++i)
      if (s.value[i] >= 1) {
        m.first_ready[pod] = m.first_ready.contains(pod) ? std::min(m.first_ready[pod], s.time_s[i]) : s.time_s[i];
        break;
      }
  }

  // Engines: the request counters found the workloads; the rest attach to them.
  using W = ServingWorkload;
  const auto requests = [](W& w, const std::vector<double>& x) { AddTo(w.requests, x); };
  m.Counters(a.vllm_success, ServingEngine::kVllm, "model_name", "vllm:request_success_total", requests);
  m.Existing(a.vllm_prompt, ServingEngine::kVllm, "model_name", "vllm:prompt_tokens_total",
             [](W& w, const std::vector<double>& x) { AddTo(w.prompt_tokens, x); });
  m.Existing(a.vllm_generation, ServingEngine::kVllm, "model_name", "vllm:generation_tokens_total",
             [](W& w, const std::vector<double>& x) { AddTo(w.generation_tokens, x); });
  m.Existing(a.vllm_e2e_sum, ServingEngine::kVllm, "model_name", "vllm:e2e_request_latency_seconds_sum",
             [](W& w, const std::vector<double>& x) {
               AddTo(w.latency_sum_s, x);
               w.e2e.sum += Sum(x);
             });
  m.Existing(a.vllm_e2e_count, ServingEngine::kVllm, "model_name", "vllm:e2e_request_latency_seconds_count",
             [](W& w, const std::vector<double>& x) {
               AddTo(w.latency_count, x);
               w.e2e.count += Sum(x);
             });
  m.Existing(a.vllm_ttft_sum, ServingEngine::kVllm, "model_name", "vllm:time_to_first_token_seconds_sum",
             [](W& w, const std::vector<double>& x) { w.ttft.sum += Sum(x); });
  m.Existing(a.vllm_ttft_count, ServingEngine::kVllm, "model_name", "vllm:time_to_first_token_seconds_count",
             [](W& w, const std::vector<double>& x) { w.ttft.count += Sum(x); });
  m.Existing(a.vllm_tpot_sum, ServingEngine::kVllm, "model_name", "vllm:time_per_output_token_seconds_sum",
             [](W& w, const std::vector<double>& x) { w.tpot.sum += Sum(x); });
  m.Existing(a.vllm_tpot_count, ServingEngine::kVllm, "model_name", "vllm:time_per_output_token_seconds_count",
             [](W& w, const std::vector<double>& x) { w.tpot.count += Sum(x); });
  m.Buckets(a.vllm_e2e_bucket, &W::e2e, "vllm:e2e_request_latency_seconds_bucket");
  m.Buckets(a.vllm_ttft_bucket, &W::ttft, "vllm:time_to_first_token_seconds_bucket");
  m.Buckets(a.vllm_tpot_bucket, &W::tpot, "vllm:time_per_output_token_seconds_bucket");
  // Gauges: per step, the sum over pods of each pod's maximum.
  for (const auto& [series, field, metric] : {std::tuple{&a.vllm_running, &W::running, "vllm:num_requests_running"},
                                              std::tuple{&a.vllm_waiting, &W::waiting, "vllm:num_requests_waiting"}}) {
    for (const PromSeries& s : *series) {
      const std::string pod = PodKeyFromLabels(s.labels);
      for (auto& [key, w] : m.workloads) {
        if (w.engine != ServingEngine::kVllm || w.model != Label(s.labels, "model_name") ||
            std::find(w.pods.begin(), w.pods.end(), pod) == w.pods.end())
          continue;
        std::vector<double>& into = w.*field;
        if (into.empty()) into.assign(grid.samples, 0.0);
        for (std::size_t i = 0; i < s.time_s.size(); ++i) {
          const long long k = StepIndex(grid, s.time_s[i]);
          if (k < 0 || k >= static_cast<long long>(grid.samples) || !std::isfinite(s.value[i])) continue;
          into[static_cast<std::size_t>(k)] += s.value[i];
          if (field == &W::running) w.max_running_per_pod = std::max(w.max_running_per_pod, s.value[i]);
        }
        if (std::find(w.metrics.begin(), w.metrics.end(), metric) == w.metrics.end()) w.metrics.push_back(metric);
      }
    }
  }

  m.Counters(a.triton_success, ServingEngine::kTriton, "model", "nv_inference_request_success",
             [](W& w, const std::vector<double>& x) {
               AddTo(w.requests, x);
               AddTo(w.latency_count, x);
               w.triton_requests += Sum(x);
             });
  m.Existing(
      a.triton_request_us, ServingEngine::kTriton, "model", "nv_inference_request_duration_us",
      [](W& w, const std::vector<double>& x) {
        AddTo(w.latency_sum_s, x);
        w.triton_request_s += Sum(x);
      },
      1e-6);
  m.Existing(
      a.triton_queue_us, ServingEngine::kTriton, "model", "nv_inference_queue_duration_us",
      [](W& w, const std::vector<double>& x) { w.triton_queue_s += Sum(x); }, 1e-6);
  m.Existing(
      a.triton_compute_us, ServingEngine::kTriton, "model", "nv_inference_compute_infer_duration_us",
      [](W& w, const std::vector<double>& x) { w.triton_compute_s += Sum(x); }, 1e-6);

  // The user's queries: requests per second (summed over series) x the step; latency the
  // request-weighted mean.
  for (std::size_t q = 0; q < queries.size() && q < a.query_rates.size(); ++q) {
    const std::size_t slash = queries[q].name.find('/');
    const std::string ns = slash == std::string::npos ? "default" : queries[q].name.substr(0, slash);
    const std::string name = slash == std::string::npos ? queries[q].name : queries[q].name.substr(slash + 1);
    ServingWorkload& w = m.workloads[{ns, "", name, name, static_cast<int>(ServingEngine::kQuery)}];
    w.engine = ServingEngine::kQuery;
    w.kube_namespace = ns;
    w.owner_name = name;
    w.owner_basis = "named by --serving-query";
    w.model = name;
    w.grid = grid;
    w.requests.assign(grid.samples, 0.0);
    w.metrics.push_back(queries[q].requests_per_s);
    std::vector<double> rate(grid.samples, 0.0);
    for (const PromSeries& s : a.query_rates[q])
      for (std::size_t i = 0; i < s.time_s.size(); ++i) {
        const long long k = StepIndex(grid, s.time_s[i]);
        if (k >= 0 && k < static_cast<long long>(grid.samples) && std::isfinite(s.value[i]) && s.value[i] > 0)
          rate[static_cast<std::size_t>(k)] += s.value[i];
      }
    for (std::size_t k = 0; k < grid.samples; ++k) w.requests[k] = rate[k] * grid.step_s;
    if (q < a.query_latencies.size() && !queries[q].latency_s.empty()) {
      w.metrics.push_back(queries[q].latency_s);
      w.latency_sum_s.assign(grid.samples, 0.0);
      w.latency_count.assign(grid.samples, 0.0);
      for (const PromSeries& s : a.query_latencies[q])
        for (std::size_t i = 0; i < s.time_s.size(); ++i) {
          const long long k = StepIndex(grid, s.time_s[i]);
          if (k < 0 || k >= static_cast<long long>(grid.samples) || !std::isfinite(s.value[i]) || s.value[i] < 0)
            continue;
          const auto at = static_cast<std::size_t>(k);
          if (w.latency_count[at] > 0) continue;  // one series: the first
          w.latency_sum_s[at] = s.value[i] * w.requests[at];
          w.latency_count[at] = w.requests[at];
        }
    }
  }

  // Replicas today and cold starts.
  std::map<std::pair<std::string, std::string>, double> deployments, statefulsets;
  for (const PromSeries& s : a.deployment_replicas)
    if (const double v = LastFinite(s); std::isfinite(v))
      deployments[{Namespace(s.labels), Label(s.labels, "deployment")}] = v;
  for (const PromSeries& s : a.statefulset_replicas)
    if (const double v = LastFinite(s); std::isfinite(v))
      statefulsets[{Namespace(s.labels), Label(s.labels, "statefulset")}] = v;
  std::vector<ServingWorkload> out;
  for (auto& [key, w] : m.workloads) {
    const std::pair<std::string, std::string> object{w.kube_namespace, w.owner_name};
    if ((w.owner_kind == "Deployment" || w.owner_kind.empty()) && deployments.contains(object)) {
      w.current_replicas = static_cast<int>(std::lround(deployments[object]));
      w.replicas_basis = "kube_deployment_status_replicas (its last value in the range)";
    } else if (w.owner_kind == "StatefulSet" && statefulsets.contains(object)) {
      w.current_replicas = static_cast<int>(std::lround(statefulsets[object]));
      w.replicas_basis = "kube_statefulset_status_replicas (its last value in the range)";
    }
    std::vector<double> from_time, from_steps;
    for (const std::string& pod : w.pods) {
      const auto c = m.created.find(pod);
      if (c == m.created.end()) continue;
      if (const auto r = m.ready_time.find(pod); r != m.ready_time.end() && r->second >= c->second) {
        from_time.push_back(r->second - c->second);
      } else if (const auto f = m.first_ready.find(pod);
                 f != m.first_ready.end() && c->second > m.since_s && f->second >= c->second) {
        from_steps.push_back(f->second - c->second);
      }
    }
    if (!from_time.empty()) {
      w.cold_start_s = Median(from_time);
      w.cold_start_basis = fmt::format("median over {} of {} pods of kube_pod_status_ready_time - kube_pod_created",
                                       from_time.size(), w.pods.size());
    } else if (!from_steps.empty()) {
      w.cold_start_s = Median(from_steps);
      w.cold_start_basis = fmt::format(
          "median over {} pods created in the range of (first step with kube_pod_status_ready{{condition=\"true\"}} "
          "= 1) - kube_pod_created (an upper bound, {:g} s coarse)",
          from_steps.size(), grid.step_s);
    }
    if (w.pods.empty() && w.engine != ServingEngine::kQuery) continue;
    std::sort(w.pods.begin(), w.pods.end());
    out.push_back(std::move(w));
  }
  return out;
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
  const GridSpec& grid = tg->grid;
  const double end = grid.start_s + static_cast<double>(grid.samples - 1) * grid.step_s;
  const double since = grid.start_s - grid.step_s;
  // Grid answers with the baseline point at `since`.
  const auto on_grid = [&](const std::string& q) {
    return QueryRange(options, RangeQuery{.query = q, .start_s = since, .end_s = end, .step_s = grid.step_s});
  };
  const auto last = [&](const std::string& metric, const std::string& matchers = "") {
    return on_grid(fmt::format("last_over_time({}{}{})", metric, matchers, tg->window));
  };
  // One point at the end of the range over the whole range.
  const std::string whole = fmt::format("[{}s]", static_cast<long long>(std::llround(end - since)));
  const auto once = [&](const std::string& q) {
    return QueryRange(options, RangeQuery{.query = q, .start_s = end, .end_s = end, .step_s = grid.step_s});
  };

  ServingAnswers a;
#define GPUFIT_ANSWER(field, call) \
  do {                             \
    auto r = call;                 \
    if (!r) return r.error();      \
    a.field = std::move(*r);       \
  } while (false)
  GPUFIT_ANSWER(vllm_success, last("vllm:request_success_total"));
  GPUFIT_ANSWER(triton_success, last("nv_inference_request_success"));
  for (const ServingQuery& q : queries) {
    auto r = on_grid(q.requests_per_s);
    if (!r) return r.error();
    a.query_rates.push_back(std::move(*r));
    std::vector<PromSeries> latency;
    if (!q.latency_s.empty()) {
      auto l = on_grid(q.latency_s);
      if (!l) return l.error();
      latency = std::move(*l);
    }
    a.query_latencies.push_back(std::move(latency));
  }
  if (a.vllm_success.empty() && a.triton_success.empty() && queries.empty()) return std::vector<ServingWorkload>{};

  // kube-state-metrics, restricted to the namespaces serving.
  std::set<std::string> namespaces;
  for (const auto* list : {&a.vllm_success, &a.triton_success})
    for (const PromSeries& s : *list) {
      const std::string ns = NamespaceOf(PodKeyFromLabels(s.labels));
      if (!ns.empty()) namespaces.insert(ns);
    }
  for (const ServingQuery& q : queries)
    namespaces.insert(q.name.find('/') == std::string::npos ? "default" : q.name.substr(0, q.name.find('/')));
  std::string regex;
  for (const std::string& ns : namespaces) regex += (regex.empty() ? "" : "|") + ns;
  const std::string in_ns = fmt::format("{{namespace=~\"{}\"}}", regex);
  // Scraped without honorLabels, kube-state-metrics' `namespace` is exported_namespace and the
  // plain label names its own: when its pods' owners are not found in the serving namespaces,
  // the whole cluster's series are read.
  std::string matchers = in_ns;
  const auto ksm = [&](const std::string& metric, const std::string& window, const char* over, bool per_step) {
    const std::string q = fmt::format("{}({}{}{})", over, metric, matchers, window);
    return per_step ? on_grid(q) : once(q);
  };
  GPUFIT_ANSWER(pod_owner, ksm("kube_pod_owner", whole, "max_over_time", false));
  if (a.pod_owner.empty()) {
    matchers.clear();
    GPUFIT_ANSWER(pod_owner, ksm("kube_pod_owner", whole, "max_over_time", false));
    if (a.pod_owner.empty()) matchers = in_ns;
  }
  GPUFIT_ANSWER(replicaset_owner, ksm("kube_replicaset_owner", whole, "max_over_time", false));
  GPUFIT_ANSWER(pod_created, ksm("kube_pod_created", whole, "max_over_time", false));
  GPUFIT_ANSWER(pod_ready_time, ksm("kube_pod_status_ready_time", whole, "min_over_time", false));
  if (a.pod_ready_time.empty())
    GPUFIT_ANSWER(pod_ready, ksm("kube_pod_status_ready", tg->window, "max_over_time", true));
  GPUFIT_ANSWER(deployment_replicas, ksm("kube_deployment_status_replicas", tg->window, "last_over_time", true));
  GPUFIT_ANSWER(statefulset_replicas, ksm("kube_statefulset_status_replicas", tg->window, "last_over_time", true));
  if (!a.vllm_success.empty()) {
    GPUFIT_ANSWER(vllm_prompt, last("vllm:prompt_tokens_total"));
    GPUFIT_ANSWER(vllm_generation, last("vllm:generation_tokens_total"));
    GPUFIT_ANSWER(vllm_e2e_sum, last("vllm:e2e_request_latency_seconds_sum"));
    GPUFIT_ANSWER(vllm_e2e_count, last("vllm:e2e_request_latency_seconds_count"));
    GPUFIT_ANSWER(vllm_ttft_sum, last("vllm:time_to_first_token_seconds_sum"));
    GPUFIT_ANSWER(vllm_ttft_count, last("vllm:time_to_first_token_seconds_count"));
    GPUFIT_ANSWER(vllm_tpot_sum, last("vllm:time_per_output_token_seconds_sum"));
    GPUFIT_ANSWER(vllm_tpot_count, last("vllm:time_per_output_token_seconds_count"));
    GPUFIT_ANSWER(vllm_e2e_bucket, once(fmt::format("increase(vllm:e2e_request_latency_seconds_bucket{})", whole)));
    GPUFIT_ANSWER(vllm_ttft_bucket, once(fmt::format("increase(vllm:time_to_first_token_seconds_bucket{})", whole)));
    GPUFIT_ANSWER(vllm_tpot_bucket, once(fmt::format("increase(vllm:time_per_output_token_seconds_bucket{})", whole)));
    GPUFIT_ANSWER(vllm_running, on_grid(fmt::format("max_over_time(vllm:num_requests_running{})", tg->window)));
    GPUFIT_ANSWER(vllm_waiting, on_grid(fmt::format("max_over_time(vllm:num_requests_waiting{})", tg->window)));
  }
  if (!a.triton_success.empty()) {
    GPUFIT_ANSWER(triton_request_us, last("nv_inference_request_duration_us"));
    GPUFIT_ANSWER(triton_queue_us, last("nv_inference_queue_duration_us"));
    GPUFIT_ANSWER(triton_compute_us, last("nv_inference_compute_infer_duration_us"));
  }
#undef GPUFIT_ANSWER
  return ServingFromSeries(a, queries, grid);
}

}  // namespace gpufit

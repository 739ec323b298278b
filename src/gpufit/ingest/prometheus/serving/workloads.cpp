#include "gpufit/ingest/prometheus/serving/workloads.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace gpufit::serving {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Step index of time t on the grid: 0 is the first step's end, -1 the baseline at `since`.
long long StepIndex(const GridSpec& grid, double t) { return std::llround((t - grid.start_s) / grid.step_s); }

// Per-step increases of one counter series (header comment: the reset rule, the first point).
Steps StepIncreases(const PromSeries& s, const GridSpec& grid, bool born_in_range, int& resets) {
  Steps out(grid.samples, 0.0);
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

bool Serves(const ServingWorkload& w, ServingEngine engine, const std::string& model, const std::string& pod) {
  return w.engine == engine && w.model == model && std::find(w.pods.begin(), w.pods.end(), pod) != w.pods.end();
}

void Note(ServingWorkload& w, const char* metric) {
  if (std::find(w.metrics.begin(), w.metrics.end(), metric) == w.metrics.end()) w.metrics.push_back(metric);
}

}  // namespace

std::string Label(const Labels& l, const char* name) {
  const auto it = l.find(name);
  return it == l.end() ? "" : it->second;
}

std::string NamespaceOf(const std::string& pod_key) {
  const std::size_t slash = pod_key.find('/');
  return slash == std::string::npos ? "" : pod_key.substr(0, slash);
}

double LastFinite(const PromSeries& s) {
  for (std::size_t i = s.value.size(); i > 0; --i)
    if (std::isfinite(s.value[i - 1])) return s.value[i - 1];
  return std::numeric_limits<double>::quiet_NaN();
}

void AddTo(Steps& into, const Steps& x) {
  if (into.empty()) into.assign(x.size(), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) into[i] += x[i];
}

double Sum(const Steps& x) {
  double s = 0;
  for (const double v : x) s += v;
  return s;
}

Mapper::Mapper(const GridSpec& grid, const ServingAnswers& answers) : grid_(grid), kube_(answers, grid) {}

std::optional<std::size_t> Mapper::StepOf(double t) const {
  const long long k = StepIndex(grid_, t);
  if (k < 0 || k >= static_cast<long long>(grid_.samples)) return std::nullopt;
  return static_cast<std::size_t>(k);
}

ServingWorkload& Mapper::Of(ServingEngine engine, const std::string& pod, const std::string& model) {
  const std::string ns = NamespaceOf(pod);
  const KubeObjects::Owner owner = kube_.OwnerOf(pod);
  ServingWorkload& w = workloads_[Key{ns, owner.kind, owner.name, model, static_cast<int>(engine)}];
  if (w.grid.samples == 0) {
    w.engine = engine;
    w.kube_namespace = ns;
    w.owner_kind = owner.kind;
    w.owner_name = owner.name;
    w.owner_basis = owner.basis;
    w.model = model;
    w.grid = grid_;
    w.requests.assign(grid_.samples, 0.0);
  }
  if (std::find(w.pods.begin(), w.pods.end(), pod) == w.pods.end()) w.pods.push_back(pod);
  return w;
}

void Mapper::Counters(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                      const char* metric, Into into, double scale) {
  for (const PromSeries& s : series) {
    const std::string pod = PodKeyFromLabels(s.labels);
    if (pod.empty()) continue;
    ServingWorkload& w = Of(engine, pod, Label(s.labels, model_label));
    Steps inc = StepIncreases(s, grid_, kube_.BornInRange(pod), w.counter_resets);
    for (double& x : inc) x *= scale;
    into(w, inc);
    Note(w, metric);
  }
}

void Mapper::Existing(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                      const char* metric, Into into, double scale) {
  std::vector<PromSeries> known;
  for (const PromSeries& s : series) {
    const std::string pod = PodKeyFromLabels(s.labels);
    const std::string model = Label(s.labels, model_label);
    if (std::any_of(workloads_.begin(), workloads_.end(),
                    [&](const auto& kw) { return Serves(kw.second, engine, model, pod); }))
      known.push_back(s);
  }
  Counters(known, engine, model_label, metric, into, scale);
}

void Mapper::Buckets(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                     HistogramTotal ServingWorkload::*field, const char* metric) {
  std::map<Key, std::map<double, double>> by;
  for (const PromSeries& s : series) {
    const std::string pod = PodKeyFromLabels(s.labels);
    const std::string le = Label(s.labels, "le");
    if (pod.empty() || le.empty()) continue;
    const double bound = le == "+Inf" ? kInf : std::strtod(le.c_str(), nullptr);
    const double v = LastFinite(s);
    if (!std::isfinite(v) || v < 0) continue;
    for (auto& [key, w] : workloads_) {
      if (!Serves(w, engine, Label(s.labels, model_label), pod)) continue;
      by[key][bound] += v;
      Note(w, metric);
    }
  }
  for (auto& [key, buckets] : by) {
    HistogramTotal& h = workloads_[key].*field;
    h.buckets.assign(buckets.begin(), buckets.end());
  }
}

void Mapper::Gauges(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                    Steps ServingWorkload::*field, const char* metric, double ServingWorkload::*max_per_pod) {
  for (const PromSeries& s : series) {
    const std::string pod = PodKeyFromLabels(s.labels);
    for (auto& [key, w] : workloads_) {
      if (!Serves(w, engine, Label(s.labels, model_label), pod)) continue;
      Steps& into = w.*field;
      if (into.empty()) into.assign(grid_.samples, 0.0);
      for (std::size_t i = 0; i < s.time_s.size(); ++i) {
        const std::optional<std::size_t> k = StepOf(s.time_s[i]);
        if (!k || !std::isfinite(s.value[i])) continue;
        into[*k] += s.value[i];
        if (max_per_pod) w.*max_per_pod = std::max(w.*max_per_pod, s.value[i]);
      }
      Note(w, metric);
    }
  }
}

ServingWorkload& Mapper::Named(ServingEngine engine, const std::string& ns, const std::string& name) {
  return workloads_[Key{ns, "", name, name, static_cast<int>(engine)}];
}

std::vector<ServingWorkload> Mapper::Finish() {
  std::vector<ServingWorkload> out;
  for (auto& [key, w] : workloads_) {
    kube_.AddReplicasAndColdStart(w);
    if (w.pods.empty() && w.engine != ServingEngine::kQuery) continue;
    std::sort(w.pods.begin(), w.pods.end());
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace gpufit::serving

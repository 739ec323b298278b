// The mapping shared by every engine: an engine's per-pod series, summed per step into one
// ServingWorkload per (namespace, owner, model, engine), the owner from serving/kube.h.
//
// Counters: the increase of each series over step k is its point at k minus its point at
// k - 1 (the last earlier point across a gap), with Prometheus's reset rule (a decrease means
// the process restarted from 0, so the increase is the new value; counted in
// ServingWorkload::counter_resets). A series' first point counts from 0 only when its pod was
// created within the range (kube_pod_created): a new process starts its counters at 0; a
// series already running at `since` without a baseline point (a gap) is not counted there.
// Malformed values (negative or non-finite counters) are skipped here; ReadPrometheusServing
// refuses them first (CheckServingAnswers, prometheus_serving.h).
// Gauges: per step, the sum over pods of each pod's step maximum.
// Histogram buckets: per `le`, the sum of the series' increases over the range.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gpufit/ingest/prometheus/serving/kube.h"

namespace gpufit::serving {

using Labels = std::map<std::string, std::string>;
using Steps = std::vector<double>;  // one value per step of the grid

std::string Label(const Labels& l, const char* name);  // "" when absent
std::string NamespaceOf(const std::string& pod_key);   // "namespace" of "namespace/pod"
double LastFinite(const PromSeries& s);                // NaN when none
void AddTo(Steps& into, const Steps& x);               // `into` sized to x when empty
double Sum(const Steps& x);

class Mapper {
 public:
  Mapper(const GridSpec& grid, const ServingAnswers& answers);
  const GridSpec& grid() const { return grid_; }

  // Where an engine's per-step series go in its workload.
  using Into = void (*)(ServingWorkload& w, const Steps& x);

  // Counter series that find workloads: each series' pod and `model_label` name (and create)
  // its workload; its per-step increases, times `scale`, go `into` it.
  void Counters(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                const char* metric, Into into, double scale = 1.0);
  // As Counters, for the series of workloads already found.
  void Existing(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
                const char* metric, Into into, double scale = 1.0);
  // Histogram bucket series (one point each, label `le`) of workloads already found.
  void Buckets(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
               HistogramTotal ServingWorkload::*field, const char* metric);
  // Gauge series of workloads already found, summed per step into `field`; `max_per_pod`
  // (optional) keeps the highest single value.
  void Gauges(const std::vector<PromSeries>& series, ServingEngine engine, const char* model_label,
              Steps ServingWorkload::*field, const char* metric, double ServingWorkload::*max_per_pod = nullptr);
  // A workload without pods, named by the user: namespace `ns`, owner and model `name`.
  ServingWorkload& Named(ServingEngine engine, const std::string& ns, const std::string& name);
  // The step holding time t (a point of a grid answer); nullopt before the first or past the last.
  std::optional<std::size_t> StepOf(double t) const;

  // Every workload with its replicas and cold start, ordered by namespace, owner, model and
  // engine; pods sorted. A workload without pods is kept only when named by the user.
  std::vector<ServingWorkload> Finish();

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string, int>;  // ns, kind, name, model, engine
  ServingWorkload& Of(ServingEngine engine, const std::string& pod, const std::string& model);
  GridSpec grid_;
  KubeObjects kube_;
  std::map<Key, ServingWorkload> workloads_;
};

}  // namespace gpufit::serving

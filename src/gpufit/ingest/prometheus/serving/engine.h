// Serving engines: where inference services are read from, one file per engine behind this
// interface, listed in registry.cpp in a fixed order; each file documents the metrics it reads
// (names, types, units, labels and their sources). Adding an engine is one new file, its
// answers in ServingAnswers and its ServingEngine value (ingest/prometheus/serving.h), and one
// registry line.
//
// | name   | file       | discovered by                        | model label |
// |--------|------------|--------------------------------------|-------------|
// | vllm   | vllm.cpp   | vllm:request_success_total           | model_name  |
// | triton | triton.cpp | nv_inference_request_success         | model       |
// | query  | promql.cpp | the user's --serving-query (PromQL)  | (its NAME)  |
//
// What an engine contributes: its discovery queries (asked first, for every engine in
// registry order; a server where none finds anything costs those queries and yields no
// services), the namespaces its services run in (kube-state-metrics' queries are restricted to
// them, serving/kube.h), the rest of its queries (asked only when discovery found services,
// after kube-state-metrics'), and the mapping of its answers into per-pod per-step series that
// the shared code (serving/workloads.h) sums into one ServingWorkload per model and
// Kubernetes workload.
//
// Query shapes (range queries on the grid of prometheus_telemetry.h's GridFor, W = step - 1 ms
// so that each point is the last raw sample of its step): last_over_time(COUNTER[W]) for every
// counter and histogram _sum/_count, evaluated from `since` (a baseline point) to the end of
// the last step; max_over_time(GAUGE[W]) for gauges; histogram buckets once over the whole
// range, increase(X_bucket[D]) at `until` with D = until - since.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/serving.h"

namespace gpufit::serving {

// The query shapes above, on one range's grid. Errors: those of QueryRange.
class Asker {
 public:
  Asker(const PrometheusOptions& options, const TelemetryGrid& grid);
  const GridSpec& grid() const { return grid_.grid; }
  const std::string& window() const { return grid_.window; }  // "[W]"
  const std::string& whole() const { return whole_; }         // "[D]", the whole range
  // Any PromQL on the grid, from the baseline point at `since` to the end of the last step.
  Result<std::vector<PromSeries>> OnGrid(const std::string& promql) const;
  // last_over_time(METRIC[W]) on the grid.
  Result<std::vector<PromSeries>> Counter(const std::string& metric) const;
  // max_over_time(METRIC[W]) on the grid.
  Result<std::vector<PromSeries>> GaugeMax(const std::string& metric) const;
  // increase(METRIC[D]): one point at the end of the range.
  Result<std::vector<PromSeries>> IncreaseOverRange(const std::string& metric) const;
  // Any PromQL evaluated once, at the end of the range.
  Result<std::vector<PromSeries>> Once(const std::string& promql) const;

 private:
  const PrometheusOptions& options_;
  TelemetryGrid grid_;
  double since_s_, end_s_;
  std::string whole_;
};

class Mapper;

struct ServingEngineReader {
  ServingEngine id;
  const char* name;  // ServingEngineName(id): the plan's `engine`
  // Asks its discovery queries into `answers`; true when they found services.
  Result<bool> (*discover)(const Asker& ask, const std::vector<ServingQuery>& queries, ServingAnswers& answers);
  // Adds the namespaces of the services discovery found.
  void (*namespaces)(const ServingAnswers& answers, const std::vector<ServingQuery>& queries,
                     std::set<std::string>& into);
  // Asks the rest of its queries into `answers` (only after discovery found services).
  Result<void> (*read)(const Asker& ask, ServingAnswers& answers);
  // Maps its answers into workloads.
  void (*map)(const ServingAnswers& answers, const std::vector<ServingQuery>& queries, Mapper& m);
};

// Every engine, in registry order (the order of their queries and of their mapping).
const std::vector<ServingEngineReader>& ServingEngines();
// nullptr for an unknown name.
const ServingEngineReader* FindServingEngine(const std::string& name);

// Adds the `namespace` of each series' pod (PodKeyFromLabels) to `into`.
void PodNamespaces(const std::vector<PromSeries>& series, std::set<std::string>& into);

}  // namespace gpufit::serving

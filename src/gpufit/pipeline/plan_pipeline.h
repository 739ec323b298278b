// The plan of every strategy as a pipeline of stages (issue 41): what `gpufit plan` and
// `gpufit demo` print, and what a CronJob or the controller can compute without the CLI.
// The inputs are library types only (PlanInputs); each stage reads the inputs and what the
// stages before it produced (PlanContext) and adds its own part; the result is a
// PlanDocument (the JSON and Markdown of the plan, the manifest files, the report's parts).
//
// Stages, in order (PlanStages()): read (catalog, prices), training, inference, colocation
// (the co-location fit and its backtest), prices, ancillary, emit (manifests), summary.
// Errors: those of the inputs (kInvalidArgument naming the flag or file) and of the readers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpufit/analyze/model_loading.h"
#include "gpufit/backtest/backtest.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/ingest/prometheus/network.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/optimize/container_rightsize.h"
#include "gpufit/pipeline/cluster_reads.h"
#include "gpufit/pipeline/inference_section.h"
#include "gpufit/plan/ancillary_plan.h"
#include "gpufit/plan/autoscalers.h"
#include "gpufit/plan/plan.h"
#include "gpufit/plan/training_plan.h"
#include "gpufit/training/workload_file.h"

namespace gpufit::pipeline {

// Everything a plan is computed from. Paths are read by the stages; "" = not given.
struct PlanInputs {
  // GPU telemetry (null: the sections of the other inputs alone) and its name in the plan.
  const Telemetry* telemetry = nullptr;
  std::string source;
  TelemetryOrigin origin;  // where the telemetry came from (its file or server, range, name)
  // The cluster's nodes and pods (kubectl JSON or the API server), and how errors name them
  // ("--nodes FILE", "the nodes of https://...").
  std::optional<std::vector<KubeNode>> nodes;
  std::optional<std::vector<KubePod>> pods;
  std::string nodes_label, pods_label;
  std::string catalog_path;       // GPU catalog YAML; "" = the embedded one
  PlanOptions options;            // the co-location plan's options (target_gpu: --gpu)
  std::vector<std::string> gpus;  // the models the mixed fleet may use; empty = the catalog's
  std::int64_t reserve_mib = 0;   // GPU memory kept free on every shared GPU
  std::string training_jobs;      // training workload YAML
  std::string inference;          // inference services YAML
  AutoscalerOptions autoscaler;   // of the services
  ServingMetricsOptions serving;  // services from the server's serving metrics
  bool emit_manifests = false;    // the manifests are wanted (PlanDocument::manifest_files)
  std::string model_loads;        // GenTD26 basemodel_update_latency CSV; "" = the GenTD26 folder's
  ContainerRightsizeOptions rightsize;
  ModelLoadingOptions model_loading;
  std::string capacity_labels = "karpenter";  // karpenter, eks, gke or aks
  std::string sharing;                        // "" = detected from the nodes, else time-slicing
  std::string kai_queue;
  bool compute_caps = false;
  std::string replicas_apart = "gpu";  // gpu or off
  // The demo's embedded jobs and services, and its MIG layout beside the time-sliced plan.
  std::optional<TrainingWorkload> demo_training;
  std::vector<PreparedService> demo_services;
  bool mig_alternative = false;
  double now_s = 0;                 // the current Unix time (the training section's clock)
  bool want_csv = false;            // PlanDocument::csv, the per-pod table
  bool want_report_series = false;  // PlanDocument::series_json, the HTML report's series
  // Progress: the name of each long step as it starts; notes and warnings for the user, one
  // line each ("warning: ..."). Either may be empty.
  std::function<void(const std::string&)> phase;
  std::function<void(const std::string&)> note;
};

// The plan as printed and written.
struct PlanDocument {
  bool has_plan = false;  // a co-location plan from telemetry is its top level
  std::string json;       // the whole plan (a single section's alone when it is all there is)
  std::string markdown;
  // The manifest folder's files (name, text) with its README; empty unless emit_manifests.
  std::vector<std::pair<std::string, std::string>> manifest_files;
  std::string csv;          // with want_csv and a plan: the per-pod table
  std::string series_json;  // with want_report_series and a plan: the report's series
};

// The inputs and what each stage produced so far.
struct PlanContext {
  PlanInputs in;  // the stages may settle them (sharing, options)
  GpuCatalog catalog;
  std::optional<ClusterPricing> pricing;
  std::optional<Telemetry> sized_telemetry;  // the telemetry with pre-allocating servers resized
  // Sections by JSON key as (JSON, Markdown); the co-location plan is the top level.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> sections;
  std::optional<TrainingPlan> training;
  std::vector<std::pair<std::string, std::string>> inference_manifests;
  std::optional<Plan> plan;
  std::optional<Backtest> backtest;
  std::string backtest_note;
  std::optional<ClusterNetwork> network;
  std::optional<AncillaryPlan> ancillary;
  PlanDocument document;

  const std::vector<KubeNode>* nodes() const { return in.nodes ? &*in.nodes : nullptr; }
  const std::vector<KubePod>* pods() const { return in.pods ? &*in.pods : nullptr; }
  void Phase(const std::string& name) const {
    if (in.phase) in.phase(name);
  }
  void Note(const std::string& line) const {
    if (in.note) in.note(line);
  }
};

// One step of the plan: reads the context, adds its part.
class PlanStage {
 public:
  virtual ~PlanStage() = default;
  virtual std::string_view Name() const = 0;
  virtual Result<void> Run(PlanContext& context) const = 0;
};

// The stages in the order they run.
const std::vector<std::unique_ptr<PlanStage>>& PlanStages();

// Runs every stage on `inputs`. Errors: the first stage's that failed.
Result<PlanDocument> RunPlanPipeline(PlanInputs inputs);

}  // namespace gpufit::pipeline

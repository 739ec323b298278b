// gpufit plan, demo and backtest: the flags they share (PlanFlags), the plan of every
// strategy from them (RunPlan: the flags as pipeline::PlanInputs, the stages of
// pipeline/plan_pipeline.h, the document printed and written by Emit) and the walk-forward
// backtest command (pipeline/backtest_study.h). Exit codes as main's: 0, 2 bad input,
// 1 internal; backtest 3 when the plan did not hold.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "gpufit/analyze/model_loading.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/optimize/container_rightsize.h"
#include "gpufit/pipeline/plan_pipeline.h"
#include "gpufit/plan/plan.h"
#include "gpufit/training/workload_file.h"
#include "inference_command.h"
#include "kube_source.h"
#include "serving_section.h"
#include "telemetry_source.h"

namespace gpufit::cli {

struct PlanFlags {
  cli::TelemetrySource telemetry;
  std::string training_jobs;
  std::string inference;
  cli::AutoscalerFlags autoscaler;  // of the --inference services
  cli::ServingFlags serving;        // services from --prometheus serving metrics
  std::string manifests;            // --emit-manifests
  std::string nodes, pods;
  KubeApiFlags kube;                                // --kubeconfig, --context: nodes and pods from the API server
  std::optional<std::vector<KubePod>> kube_pods;    // --pods (or the live cluster's), once read
  std::optional<std::vector<KubeNode>> kube_nodes;  // --nodes (or the live cluster's), once read
  std::string live_source;                          // the API server they came from ("" = files)
  // How errors and the plan name the nodes and pods: "--nodes FILE" or "the nodes of https://...".
  std::string NodesLabel() const { return live_source.empty() ? "--nodes " + nodes : "the nodes of " + live_source; }
  std::string PodsLabel() const { return live_source.empty() ? "--pods " + pods : "the pods of " + live_source; }
  std::string model_loads;                        // GenTD26 basemodel_update_latency CSV; default: the GenTD26 folder's
  ContainerRightsizeOptions rightsize;
  ModelLoadingOptions model_loading;
  double model_gib = 0;
  CLI::Option* model_gib_flag = nullptr;
  std::string capacity_labels = "karpenter";
  std::string sharing;    // --sharing; "" = detected from --nodes, else time-slicing
  std::string kai_queue;  // --kai-queue
  bool compute_caps = false;  // --compute-caps
  std::string replicas_apart = "gpu";  // --replicas-apart: gpu or off
  std::string catalog;
  PlanOptions options;
  std::vector<std::string> gpus;  // --gpus: the models the mixed fleet may use; empty = the catalog's
  std::int64_t reserve_mib = 0;
  Output output;
  std::string report_command = "plan";  // the HTML report's command: plan or demo
  // The demo's embedded jobs and services (demo_cluster.h), and its MIG layout beside the
  // time-sliced plan; a plan from files or a server has none of these.
  std::optional<TrainingWorkload> demo_training;
  std::vector<PreparedService> demo_services;
  bool mig_alternative = false;
};

// The flags of plan (needs_telemetry: the telemetry source and every input beside it), demo
// and backtest on `cmd`; `formats`: the --format choices beyond text, json and yaml.
void AddPlanOptions(CLI::App* cmd, PlanFlags& f, bool needs_telemetry, const std::vector<std::string>& formats);

// The nodes and pods into kube_nodes and kube_pods: from --nodes/--pods, or with
// --kubeconfig/--context from the live cluster (then also live_source; an error with
// --nodes/--pods). Neither: nothing.
Result<void> ReadClusterInputs(PlanFlags& f);

// Every output path of `plan`, checked before anything is read, computed or written.
Result<void> CheckPlanOutputs(const PlanFlags& f);

// The pipeline's inputs from the flags (library types only; pipeline/plan_pipeline.h): what
// RunPlan, backtest and the controller pass to RunPlanPipeline. Moves the nodes, pods and the
// demo's workloads out of `f`.
pipeline::PlanInputs PlanInputsOf(PlanFlags& f, const Telemetry* telemetry, const std::string& source);

// The plan of `telemetry` (null: the sections of the other inputs alone), printed and written
// as the flags say; `source` names the telemetry. Returns the exit code.
int RunPlan(PlanFlags& f, const Telemetry* telemetry, const std::string& source);

// gpufit backtest: the walk-forward backtest of the plan and the GPUs-vs-overflow trade-off
// at `risks`. Returns the exit code (3 when the plan did not hold).
int RunBacktestCommand(PlanFlags& f, const std::vector<double>& risks);

}  // namespace gpufit::cli

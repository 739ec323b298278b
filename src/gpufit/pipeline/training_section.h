// The training section of a plan: jobs found in the cluster (kubectl's --pods and/or
// kube-state-metrics in --prometheus, training/cluster_jobs.h), their spot rate from the
// cluster's history (training/spot_history.h), and --training-jobs as an override (a job
// of the file wins over the cluster's of the same name).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/pipeline/cluster_reads.h"
#include "gpufit/plan/training_plan.h"

namespace gpufit::pipeline {

struct TrainingSectionInput {
  std::string training_jobs;                     // --training-jobs, or ""
  const std::vector<KubePod>* pods = nullptr;    // --pods, once read
  std::string pods_source;                       // "--pods FILE", or the API server it was listed from
  const std::vector<KubeNode>* nodes = nullptr;  // --nodes, once read
  const TelemetryOrigin* source = nullptr;       // the telemetry's (with a server: its URL and range)
  const Telemetry* telemetry = nullptr;          // GPU memory use per pod (DCGM), the GPU model
  const GpuCatalog* catalog = nullptr;
  std::string capacity_labels;  // --capacity-labels
  std::string gpu;              // --current-gpu, else --gpu: prices jobs of unknown nodes
  double now_s = 0;             // without --prometheus: the wall clock
};

// nullopt when there is nothing to plan: no --training-jobs and no training job found.
Result<std::optional<TrainingPlan>> TrainingSection(const TrainingSectionInput& in);

}  // namespace gpufit::pipeline

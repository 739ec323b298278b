// The training stage: the jobs found in the cluster (pods, Prometheus), the training jobs file
// overriding; the demo's embedded jobs.
#include "gpufit/pipeline/internal/stages.h"
#include "gpufit/pipeline/training_section.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit::pipeline::internal {
namespace {

// The demo's training section: its embedded jobs, planned as a workload file.
Result<std::optional<TrainingPlan>> DemoTrainingPlan(const PlanInputs& in, const GpuCatalog& catalog) {
  const Result<CapacityLabels> labels = ParseCapacityLabels(in.capacity_labels);
  if (!labels) return labels.error();
  Result<TrainingPlan> plan = BuildTrainingPlan(*in.demo_training, catalog, *labels, "demo training jobs");
  if (!plan) return plan.error();
  return std::optional<TrainingPlan>(std::move(*plan));
}

}  // namespace

Result<void> TrainingStage::Run(PlanContext& c) const {
  const PlanInputs& in = c.in;
  Result<std::optional<TrainingPlan>> t =
      in.demo_training
          ? DemoTrainingPlan(in, c.catalog)
          : TrainingSection({.training_jobs = in.training_jobs,
                             .pods = c.pods(),
                             .pods_source = in.pods_label,
                             .nodes = c.nodes(),
                             .source = &in.origin,
                             .telemetry = in.telemetry,
                             .catalog = &c.catalog,
                             .capacity_labels = in.capacity_labels,
                             .gpu = in.options.current_gpu.empty() ? in.options.target_gpu : in.options.current_gpu,
                             .now_s = in.now_s});
  if (!t) return t.error();
  c.training = std::move(*t);
  if (c.training)
    c.sections.emplace_back("training",
                            std::make_pair(TrainingPlanToJson(*c.training), TrainingPlanToMarkdown(*c.training)));
  else if (!in.telemetry && in.inference.empty())
    return InvalidArgument(
        "{}: no training job among its pods (GPU pods of a Job, PyTorchJob, JobSet, "
        "RayJob, ...); give --telemetry or --prometheus to plan the others",
        in.pods_label);
  return {};
}

}  // namespace gpufit::pipeline::internal

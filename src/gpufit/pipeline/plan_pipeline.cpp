#include "gpufit/pipeline/plan_pipeline.h"

#include "gpufit/pipeline/internal/stages.h"

namespace gpufit::pipeline {

const std::vector<std::unique_ptr<PlanStage>>& PlanStages() {
  static const std::vector<std::unique_ptr<PlanStage>> stages = [] {
    std::vector<std::unique_ptr<PlanStage>> s;
    s.push_back(std::make_unique<internal::ReadStage>());
    s.push_back(std::make_unique<internal::TrainingStage>());
    s.push_back(std::make_unique<internal::InferenceStage>());
    s.push_back(std::make_unique<internal::ColocationStage>());
    s.push_back(std::make_unique<internal::PricesStage>());
    s.push_back(std::make_unique<internal::AncillaryStage>());
    s.push_back(std::make_unique<internal::EmitStage>());
    s.push_back(std::make_unique<internal::SummaryStage>());
    return s;
  }();
  return stages;
}

Result<PlanDocument> RunPlanPipeline(PlanInputs inputs) {
  // The context is not moved once built: the stages may point into it (the resized telemetry).
  auto context = std::make_unique<PlanContext>();
  context->in = std::move(inputs);
  for (const std::unique_ptr<PlanStage>& stage : PlanStages())
    if (Result<void> ok = stage->Run(*context); !ok) return ok.error();
  return std::move(context->document);
}

}  // namespace gpufit::pipeline

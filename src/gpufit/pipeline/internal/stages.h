// The stages of the plan pipeline (plan_pipeline.h), one file each in stages/, in the order
// PlanStages() runs them.
#pragma once

#include <string_view>

#include "gpufit/pipeline/plan_pipeline.h"

namespace gpufit::pipeline::internal {

#define GPUFIT_PLAN_STAGE(Class, name)                      \
  class Class final : public PlanStage {                    \
   public:                                                  \
    std::string_view Name() const override { return name; } \
    Result<void> Run(PlanContext& context) const override;  \
  }

// The catalog (checked with the ancillary options) and, with telemetry, the cluster's prices.
GPUFIT_PLAN_STAGE(ReadStage, "read");
// The training section: the jobs found in the cluster, the training jobs file overriding; the demo's jobs.
GPUFIT_PLAN_STAGE(TrainingStage, "training");
// The inference section: the services file's and the serving metrics'; the demo's services.
GPUFIT_PLAN_STAGE(InferenceStage, "inference");
// The co-location plan (each pod's GPU today, pre-allocating servers, sharing, the fleet) and its backtest.
GPUFIT_PLAN_STAGE(ColocationStage, "colocation");
// The prices section, with the co-location plan.
GPUFIT_PLAN_STAGE(PricesStage, "prices");
// The ancillary section (right-sizing, model loading, night lending, the network check).
GPUFIT_PLAN_STAGE(AncillaryStage, "ancillary");
// The manifest files of the plan, with their README.
GPUFIT_PLAN_STAGE(EmitStage, "emit");
// The document: the sections merged, the guarantee and the summary leading, the rollups closing.
GPUFIT_PLAN_STAGE(SummaryStage, "summary");

#undef GPUFIT_PLAN_STAGE

}  // namespace gpufit::pipeline::internal

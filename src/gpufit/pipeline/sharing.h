// How the pods of a planned GPU share it (--sharing): the back end (given, or hami when the
// nodes allocate HAMi's nvidia.com/gpumem, else time-slicing) and what it asks of the plan:
// memory caps, equal for a workload's replicas, or a MIG layout (plan/manifests/sharing_backend.h).
#pragma once

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/pipeline/plan_pipeline.h"

namespace gpufit::pipeline {

// Settles in.sharing and in.options (sharing, isolation, caps, HAMi's limits, each pod's
// devices and workload) from the inputs, their nodes and pods and `telemetry` (may be null);
// says what it detected through in.note. Errors (kInvalidArgument): a --kai-queue that is not
// a label value or without --sharing kai, --compute-caps without hami, caps to emit without
// pods, nodes whose sharing or HAMi registration cannot be read.
Result<void> ApplySharing(PlanInputs& in, const GpuCatalog& catalog, const Telemetry* telemetry);

}  // namespace gpufit::pipeline

// The one registry of placement plugins and policies, so the simulator, the CLI and the
// scheduler extender build the same pipeline from the same names.
//
// Policies (filters are always gpu-model, gpu, cpu, memory; "node order" ties go to the
// first best node of the run's node order, see TieBreak in placement/policy.h):
//   random          constant score, uniformly random node, random GPU      (random-fit)
//   first-fit       constant score, first node in node order, best-fit GPU
//   best-fit        best-fit score, node order, best-fit GPU
//   dot-product     dot-product score, node order, best-fit GPU
//   gpu-packing     gpu-packing score, node order, best-fit GPU
//   gpu-clustering  gpu-clustering score, node order, best-fit GPU
//   fgd             fgd score (weight 1000), node order, fgd GPU
//   gpufit          gpufit's own policy (placement/gpufit_policy.h)
// These are the configurations of the FGD paper's experiments
// (experiments/run_scripts/generate_run_scripts.py of its simulator).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/policy.h"

namespace gpufit {

// What policies may need beyond the cluster: FGD's target workload.
struct PolicyContext {
  std::shared_ptr<const std::vector<TypicalPod>> target;
};

std::vector<std::string> PolicyNames();

// The filters every policy runs, in order: gpu-model, gpu, cpu, memory.
std::vector<std::unique_ptr<FilterPlugin>> StandardFilters();

// Errors: kNotFound for an unknown name (the message lists the known ones),
// kInvalidArgument when the policy needs a target workload and the context has none.
Result<Policy> MakePolicy(std::string_view name, const PolicyContext& context);

}  // namespace gpufit

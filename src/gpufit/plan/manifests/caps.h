// Memory caps of the back ends that enforce them (hami, kai, dra-mps), and the check that
// what was emitted enforces what the plan assumed.
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/plan/kube_manifests.h"
#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {

// Every pod of the plan (indices) whose workload is `key`.
std::vector<std::size_t> WorkloadPods(Builder& b, const WorkloadKey& key);

// "cap N MiB = ...; the caps of its GPUs add up to at most M of C MiB".
std::string CapReason(const Plan& plan, const std::vector<std::size_t>& pods);

struct CapCheck {
  std::size_t gpus = 0;           // planned GPUs checked
  std::size_t capped_pods = 0;    // pods whose workload patch sets a cap
  std::size_t uncapped_pods = 0;  // pods of shared GPUs whose workload has no patch (noted)
  double largest_sum_mib = 0;     // the largest sum of caps on one GPU
};

// For a plan made with memory caps: reads each workload patch back with the back end's
// reader and checks, on every planned GPU, that each pod whose workload is patched runs
// under exactly the plan's cap (Plan::memory_cap_mib), and that the caps (the plan's, for
// pods left unpatched) add up to at most capacity_mib. kFailedPrecondition naming the file,
// the pod and both numbers otherwise.
Result<CapCheck> CheckMemoryCaps(const Plan& plan, const SharingBackend& backend, const std::vector<KubePod>& pods,
                                 const std::vector<ManifestFile>& files);

}  // namespace gpufit::manifests

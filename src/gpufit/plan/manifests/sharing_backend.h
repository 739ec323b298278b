// Sharing back ends: how the pods that the plan puts on one GPU are made to share it in
// Kubernetes, one file per back end behind this interface, listed in sharing_registry.cpp.
// Adding a back end is one new file and one registry line.
//
// | name         | memory is enforced by                 | compute is enforced by           |
// |--------------|---------------------------------------|----------------------------------|
// | time-slicing | nothing                               | nothing (time slices)            |
// | mig          | MIG hardware partitions               | MIG hardware partitions          |
// | hami         | HAMi-core (CUDA interception), hard   | HAMi-core, nvidia.com/gpucores   |
// | kai          | nothing at run time (scheduling only) | nothing                          |
// | dra-mps      | MPS pinned device memory limit        | nothing (thread percentage 100)  |
// Sources per back end in its file and in docs/integrations.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::manifests {

class Builder;

struct SharingBackend {
  const char* name;                 // the --sharing value
  const char* memory_enforced_by;   // for the README and docs
  const char* compute_enforced_by;  //
  const char* needs;                // what the cluster must run
  // Plan with per-pod memory caps (PlanOptions::memory_caps): the back end writes each
  // pod's cap into its workload patch.
  bool caps_memory;
  Result<void> (*emit)(Builder&);
  // The memory cap (MiB) a workload patch written by this back end sets, read back from its
  // YAML as the system itself reads it; nullopt when the patch sets none.
  std::optional<double> (*read_cap)(const std::string& patch_yaml);
};

// Every back end, in registry order.
const std::vector<SharingBackend>& SharingBackends();
// kInvalidArgument naming the known ones for an unknown name.
Result<const SharingBackend*> FindSharingBackend(const std::string& name);
// "time-slicing, mig, hami, kai, dra-mps".
std::string SharingBackendNames();

}  // namespace gpufit::manifests

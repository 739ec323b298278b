// MIG layouts on one GPU: which sets of GPU instances the hardware can hold, where each
// goes, in what order to create them, what can still be created next to existing ones,
// and the fewest moves that make room for a wanted profile.
//
// Rule (NVIDIA MIG User Guide, "concepts"): a set of instances is valid iff every instance
// starts at one of its profile's allowed start slots and their memory-slice intervals
// [start, start + memory_slices) do not overlap; in addition no profile exceeds its
// per-GPU maximum, at most one "+me" instance exists, the instance count stays within the
// GPU's maximum and the compute slices within its total. The driver places an instance at
// an allowed start whose slices are free; creating them with explicit starts (nvidia-smi
// mig -cgi ID:START, mig-parted) in the order given here always succeeds.
//
// Everything is exhaustive search over at most 8 memory slices: exact, and fast at this size.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/catalog/mig_catalog.h"

namespace gpufit {

struct MigInstance {
  const MigProfile* profile = nullptr;
  int start = 0;  // first memory slice
};

struct MigLayoutCheck {
  bool valid = false;
  std::string reason;                       // why not, in words, when invalid
  std::vector<MigInstance> placements;      // one concrete placement, when valid
  std::vector<MigInstance> creation_order;  // largest first, with explicit starts
  int stranded_compute_slices = 0;          // free compute slices no further instance can use
};

// Whether `profiles` (a multiset; pointers into `gpu`) fit on one GPU, and how.
MigLayoutCheck CheckMigLayout(const MigGpu& gpu, const std::vector<const MigProfile*>& profiles);

// Errors (kInvalidArgument) for explicit instances the GPU cannot hold: a start slot the
// profile does not allow, overlapping slices, too many of a profile or of "+me".
Result<void> ValidateMigInstances(const MigGpu& gpu, const std::vector<MigInstance>& instances);

struct MigFreeCapacity {
  std::vector<std::pair<const MigProfile*, int>> creatable;  // profile -> how many could be added (> 0 only)
  const MigProfile* largest_creatable = nullptr;             // most compute, then memory; none if nothing fits
  int free_memory_slices = 0;
  int unusable_free_memory_slices = 0;  // free slices that no creatable instance can cover
};

// What can still be created next to `existing` (which must be valid).
MigFreeCapacity FreeMigCapacity(const MigGpu& gpu, const std::vector<MigInstance>& existing);

struct MigMoves {
  bool possible = false;                // false: `want` cannot fit even on an empty GPU with the rest
  std::vector<MigInstance> moved_from;  // existing instances to destroy, at their old starts
  std::vector<MigInstance> moved_to;    // the same instances re-created, at their new starts
  int want_start = 0;
};

// The fewest existing instances to move (destroy and re-create elsewhere) so that `want`
// can be created; no moves when it already fits.
MigMoves FewestMigMoves(const MigGpu& gpu, const std::vector<MigInstance>& existing, const MigProfile& want);

struct MigReconfiguration {
  bool possible = false;             // false: the target layout is not valid on this GPU
  std::string reason;                // why not
  std::vector<MigInstance> keep;     // current instances that stay where they are
  std::vector<MigInstance> destroy;  // current instances to destroy (their pods move first)
  std::vector<MigInstance> create;   // new instances, in creation order, explicit starts
};

// From the current instances to a target multiset of profiles, keeping as many current
// instances (same profile at the same start) as any valid placement of the target allows,
// those that run pods (`occupied`, parallel to `current`; may be empty) first.
MigReconfiguration PlanMigReconfiguration(const MigGpu& gpu, const std::vector<MigInstance>& current,
                                          const std::vector<const MigProfile*>& target,
                                          const std::vector<bool>& occupied = {});

// The GPU Operator's MIG strategies (NVIDIA k8s-device-plugin): under "single" every MIG
// instance on a node has the same profile (each is advertised as nvidia.com/gpu); under
// "mixed" each profile is its own resource (nvidia.com/mig-<profile>).
enum class MigStrategy { kSingle, kMixed };

// Why the per-GPU layouts of one node break `strategy`, or empty when they do not.
// `node_gpus[i]` is GPU i's instances; an empty list is a GPU with MIG disabled (a whole
// GPU). The rules are the device plugin's (NVIDIA k8s-device-plugin internal/rm/device_map.go,
// buildDeviceMapFromConfigResources and assertAllMigDevicesAreValid, commit 278c2a4):
//   single: MIG enabled on every GPU of the node or on none ("all devices on the node must be
//           configured with the same migEnabled value"), and every MIG instance of the node,
//           on all its GPUs, of one profile ("more than one MIG device type present on node");
//           the GPUs need not hold the same number of instances.
//   mixed:  no rule across GPUs.
// (A MIG-enabled GPU without instances is refused under both; it cannot be written here.)
// The message names `node` (when given), the GPUs by index and the rule broken.
std::string MigStrategyProblem(MigStrategy strategy, const std::vector<std::vector<const MigProfile*>>& node_gpus,
                               std::string_view node = "");

}  // namespace gpufit

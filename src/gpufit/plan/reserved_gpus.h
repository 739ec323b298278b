// GPUs that hold memory no pod accounts for (model/telemetry.h ReservedGpuMemory: processes
// outside any pod), as a plan uses them: such a GPU has less memory for pods, its capacity
// less its reserved peak, and takes a co-location group only when the group fits that.
//
// Assignment (after packing, so the GPU count does not change): the reserved GPUs from the
// least room to the most each take the unassigned group with the largest need that fits
// (best fit), where a group's need is what the packer held it to: its replayed peak plus
// the learned memory margin, or with memory caps the sum of its pods' caps. A GPU no group
// fits takes none. Reserved GPUs are the telemetry's own GPUs: when the plan moves to
// another GPU model they take no group.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct Plan;

// The memory a GPU of `capacity_mib` (memory less the plan's reserve) has for pods once
// `reserved` is taken off: never below 0. Meant for online placement as well (not yet built).
double CapacityForPods(double capacity_mib, const ReservedGpuMemory& reserved);

struct ReservedGpu {
  ReservedGpuMemory reserved;
  double capacity_mib = 0;           // CapacityForPods(plan.capacity_mib, reserved)
  std::optional<std::size_t> group;  // index into Plan::replay.gpus, none when no group fits
};

// One entry per reserved GPU of the telemetry, in its order.
std::vector<ReservedGpu> PlaceOnReservedGpus(const Plan& plan, const std::vector<ReservedGpuMemory>& reserved);

}  // namespace gpufit

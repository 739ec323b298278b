// For tests only: FGD's node fragmentation written straight from its definition (paper
// section 3, simulator pkg/utils/frag.go), one typical pod and one GPU at a time, with no
// sorting or prefix tricks, as an oracle for placement/fragmentation.h.
#pragma once

#include <span>

#include "gpufit/placement/fragmentation.h"

namespace gpufit::testing {

inline double FragOracle(const NodeFree& n, std::span<const TypicalPod> target) {
  double free_total = 0;
  for (int g = 0; g < n.gpu_count; ++g) free_total += static_cast<double>(n.gpu[static_cast<std::size_t>(g)].value);
  double frag = 0;
  for (const TypicalPod& t : target) {
    const bool cpu_only = t.gpu_per_gpu.value == 0;
    const bool type_ok = t.any_model || (n.model >= 0 && ((t.model_mask >> n.model) & 1));
    int gpus_that_fit = 0;
    double too_small = 0;  // free milli-GPU on GPUs with less free than t asks for
    for (int g = 0; g < n.gpu_count; ++g) {
      const double f = static_cast<double>(n.gpu[static_cast<std::size_t>(g)].value);
      if (f >= static_cast<double>(t.gpu_per_gpu.value))
        ++gpus_that_fit;
      else
        too_small += f;
    }
    const bool fits = !cpu_only && type_ok && n.cpu >= t.cpu && gpus_that_fit >= t.gpu_count;
    frag += t.share * (fits ? too_small : free_total);
  }
  return frag;
}

}  // namespace gpufit::testing

#include "gpufit/placement/fgd.h"

#include <cmath>

namespace gpufit {

FgdModel::Choice FgdModel::Compute(const NodeState& node) const {
  const NodeFree now = NodeFree::Of(node);
  const double before = FragMilli(now, *target_);
  Choice best;
  bool found = false;
  internal::ForEachGpuChoice(workload_, node, [&](GpuSet gpus) {
    Choice c;
    c.delta = before - FragMilli(now.After(workload_, gpus), *target_);
    c.score = static_cast<int>(100.0 / (1.0 + std::exp(-c.delta / 1000.0)));
    c.gpus = gpus;
    if (!found || c.score > best.score) best = c;  // the lowest index on equal scores
    found = true;
  });
  return best;
}

}  // namespace gpufit

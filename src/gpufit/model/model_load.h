// One load of model weights onto a pod's GPU (GenTD26 `basemodel_update_latency`: the
// base-model load, the main part of a cold start).
#pragma once

#include <string>

namespace gpufit {

struct ModelLoad {
  std::string pod;     // the telemetry's pod key
  double time_s = 0;   // when it was reported, seconds on the telemetry's clock
  double seconds = 0;  // how long the load took
};

}  // namespace gpufit

// A deterministic synthetic cluster: the embedded default of `gpufit demo` and the large
// benchmark input. No files, no network; the same options give the same telemetry.
//
// Pod kinds (shares of `pods`, rounded; the rest are inference):
//  * inference (60 %): a model of 14-44 GiB stays loaded all the window; memory rises with
//    load by up to +30 % (activations, KV cache); duty cycle follows a day curve peaking at
//    14:00 (peak 25-70 %), 0 below a per-pod threshold, with noise;
//  * training (25 %): nightly jobs, 20:00 to 06:00, 28-56 GiB, duty 75-98 %; a job lives
//    one night (a new pod each night); a job that ends inside the window is in
//    Telemetry::ended (its completion, no sample dropped);
//  * idle (15 %): a model of 8-20 GiB loaded, duty cycle 0 but for rare 5-20 % blips
//    (health checks), the forgotten pods of every cluster.
// Times start at 0 s; samples every `step_s`. The duty cycle stands for DCGM_FI_DEV_GPU_UTIL
// (PodSeries::util_field) of a full GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct SyntheticOptions {
  std::size_t pods = 24;          // >= 1; training pods are counted per night
  std::size_t samples = 24 * 60;  // grid length, >= 1
  double step_s = 60;             // > 0
  std::uint64_t seed = 7;
};

Telemetry GenerateSyntheticTelemetry(const SyntheticOptions& options);

}  // namespace gpufit

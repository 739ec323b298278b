// Test fixture shared by the manifest tests: four pods, ten one-minute samples, constant use.
// ml/a-5d8f7-x1, ml/a-5d8f7-x2 and ml/solo at 20000 MiB and 20 % duty, ml/c-0 at 70000 MiB and
// 50 %. On an H100 80GB (81559 MiB) the smallest packing is {a-x1, a-x2, solo} and {c-0}.
#pragma once

#include <string>

#include "gpufit/model/telemetry.h"

namespace gpufit::testing {

inline Telemetry FourPods() {
  Telemetry t;
  t.step_s = 60;
  t.samples = 10;
  auto pod = [&](const std::string& name, float mib, float duty) {
    PodSeries p;
    p.pod = name;
    p.fb_used_mib.assign(10, mib);
    p.gpu_util_pct.assign(10, duty);
    p.first = 0;
    p.last = 9;
    t.pods.push_back(p);
  };
  pod("ml/a-5d8f7-x1", 20000, 20);
  pod("ml/a-5d8f7-x2", 20000, 20);
  pod("ml/c-0", 70000, 50);
  pod("ml/solo", 20000, 20);
  return t;
}

}  // namespace gpufit::testing

#include "gpufit/ingest/dcgm_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

RawSeries Samples(std::vector<float> v) {
  RawSeries s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    s.time_s.push_back(60.0 * static_cast<double>(i));
    s.value.push_back(v[i]);
  }
  return s;
}

TEST(DutyFieldOf, MigInstancesUseEngineActiveFullGpusPreferItElseGpuUtil) {
  DeviceSamples util_only{.gpu_util_pct = Samples({0, 0})};
  DeviceSamples both{.gpu_util_pct = Samples({0, 0}), .engine_active_pct = Samples({60, 60})};
  struct Case {
    const char* name;
    std::string device;
    const DeviceSamples* samples;
    const char* field;  // the rule of dcgm_devices.h
  };
  const Case cases[] = {
      {"MIG instance by GPU_I_ID, both fields", "GPU-a/gi2", &both, kDcgmGrEngineActive},
      {"MIG device UUID, both fields", "MIG-1234", &both, kDcgmGrEngineActive},
      {"MIG instance with GPU_UTIL only: unusable", "GPU-a/gi2", &util_only, nullptr},
      {"full GPU with both (Volta and newer)", "GPU-a", &both, kDcgmGrEngineActive},
      {"full GPU without profiling fields (pre-Volta)", "GPU-a", &util_only, kDcgmGpuUtil},
      {"unknown device with GPU_UTIL", "", &util_only, kDcgmGpuUtil},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // By content: the constants are string literals, whose addresses may differ between
    // translation units (ASan builds do not merge them).
    const char* field = DutyFieldOf(c.device, *c.samples);
    EXPECT_EQ(field == nullptr ? "(none)" : std::string(field), c.field == nullptr ? "(none)" : std::string(c.field));
  }
}

TEST(SeriesByDevice, APodOnTwoDevicesIsOneSeriesPerDeviceEachWithItsField) {
  PodDevices pods;
  pods["ml/t"]["GPU-b/gi1"] = {.fb_used_mib = Samples({5, 5}), .engine_active_pct = Samples({0, 0})};
  pods["ml/t"]["GPU-b/gi2"] = {
      .fb_used_mib = Samples({900, 900}), .gpu_util_pct = Samples({0, 0}), .engine_active_pct = Samples({60, 70})};
  pods["ml/s"]["GPU-old"] = {.fb_used_mib = Samples({10, 10}), .gpu_util_pct = Samples({30, 40})};
  const DeviceSeries s = SeriesByDevice(std::move(pods));
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_EQ(s.util_field.at("ml/t[0]"), kDcgmGrEngineActive);
  EXPECT_EQ(s.device.at("ml/t[0]"), "GPU-b/gi1");
  EXPECT_EQ(s.device.at("ml/t[1]"), "GPU-b/gi2");
  EXPECT_THAT(s.raw.gpu_util_pct.at("ml/t[1]").value, ElementsAre(60, 70));
  EXPECT_EQ(s.util_field.at("ml/s"), kDcgmGpuUtil);
  EXPECT_THAT(s.raw.gpu_util_pct.at("ml/s").value, ElementsAre(30, 40));
}

TEST(SeriesByDevice, AMigInstanceWithOnlyGpuUtilLeavesItsPodOutSayingWhy) {
  PodDevices pods;
  pods["ml/m"]["GPU-a/gi3"] = {.fb_used_mib = Samples({100}), .gpu_util_pct = Samples({0})};
  const DeviceSeries s = SeriesByDevice(std::move(pods));
  EXPECT_TRUE(s.raw.fb_used_mib.empty());
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_THAT(s.skipped[0], HasSubstr("ml/m: MIG instance GPU-a/gi3 has no DCGM_FI_PROF_GR_ENGINE_ACTIVE samples"));
}

}  // namespace
}  // namespace gpufit

#include "gpufit/ingest/files/telemetry_readers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/internal/long_csv.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using testing::DataDir;
using testing::TempDir;

TEST(ReadLongCsv, ReadsBothMetricsInAnyColumnOrder) {
  TempDir d;
  const std::string f = d.Write("t.csv",
                                "pod,value,metric,timestamp_s,extra\n"
                                "p1,1024,DCGM_FI_DEV_FB_USED,0,x\n"
                                "p1,50,DCGM_FI_DEV_GPU_UTIL,0,x\n"
                                "p1,2048,DCGM_FI_DEV_FB_USED,60,x\n"
                                "p1,0,DCGM_FI_DEV_GPU_UTIL,60,x\n"
                                "p1,7,DCGM_FI_DEV_SM_CLOCK,60,x\n");
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].fb_used_mib, (std::vector<float>{1024, 2048}));
  EXPECT_EQ(t->pods[0].gpu_util_pct, (std::vector<float>{50, 0}));
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expect;  // substring of the error after the file name
};

TEST(ReadLongCsv, BadInputNamesFileLineAndColumn) {
  const BadCase cases[] = {
      {"missing column", "timestamp_s,pod,value\n0,p,1\n", "metric"},
      {"non-numeric", "timestamp_s,pod,metric,value\n0,p,DCGM_FI_DEV_FB_USED,12x\n",
       ":2: column 'value': expected a number, got '12x'"},
      {"negative", "timestamp_s,pod,metric,value\n0,p,DCGM_FI_DEV_FB_USED,1\n60,p,DCGM_FI_DEV_FB_USED,-5\n",
       ":3: column 'value': must be >= 0, got -5"},
      {"nan", "timestamp_s,pod,metric,value\n0,p,DCGM_FI_DEV_GPU_UTIL,nan\n",
       ":2: column 'value': 'nan' is not a finite number"},
      {"duty over 100", "timestamp_s,pod,metric,value\n0,p,DCGM_FI_DEV_GPU_UTIL,130\n",
       ":2: column 'value': duty cycle must be <= 100 %"},
      {"empty pod", "timestamp_s,pod,metric,value\n0,,DCGM_FI_DEV_GPU_UTIL,1\n", ":2: column 'pod': empty value"},
      {"header only", "timestamp_s,pod,metric,value\n", "no data rows"},
      {"implausible memory", "timestamp_s,pod,metric,value\n0,p,DCGM_FI_DEV_FB_USED,1e30\n",
       ":2: column 'value': 1e+30 MiB of GPU memory is implausible"},
      {"empty file", "", "empty file"},
      {"engine activity as a percent", "timestamp_s,pod,metric,value\n0,p,DCGM_FI_PROF_GR_ENGINE_ACTIVE,60\n",
       ":2: column 'value': DCGM_FI_PROF_GR_ENGINE_ACTIVE is a ratio 0-1 (as DCGM sends it), got 60"},
      {"MIG instance without its GPU", "timestamp_s,pod,metric,value,GPU_I_ID\n0,p,DCGM_FI_DEV_FB_USED,1,2\n",
       ":2: column 'GPU_I_ID': a MIG instance id needs its GPU in column 'device'"},
      {"MIG profile without its instance",
       "timestamp_s,pod,metric,value,device,GPU_I_ID,GPU_I_PROFILE\n0,p,DCGM_FI_DEV_FB_USED,1,GPU-a,,1g.10gb\n",
       ":2: column 'GPU_I_PROFILE': a MIG profile needs its instance id in column 'GPU_I_ID'"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir d;
    const std::string f = d.Write("bad.csv", c.text);
    const Result<Telemetry> t = ReadLongCsv(f);
    ASSERT_FALSE(t.has_value());
    EXPECT_EQ(t.error().code, Code::kInvalidArgument);
    EXPECT_THAT(t.error().message, HasSubstr(f));
    EXPECT_THAT(t.error().message, HasSubstr(c.expect));
  }
}

TEST(ReadLongCsv, AStrayTimestampFarFromTheRestIsRejectedBeforeAllocating) {
  // 100 pods at 0 s and 60 s, one sample at 3e8 s: 5e6 samples x 100 pods > 4e8 cells.
  std::string text = "timestamp_s,pod,metric,value\n";
  for (int p = 0; p < 100; ++p) {
    for (const char* m : {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL"}) {
      text += "0,p" + std::to_string(p) + "," + m + ",1\n60,p" + std::to_string(p) + "," + m + ",1\n";
    }
  }
  text += "300000000,p0,DCGM_FI_DEV_FB_USED,1\n";
  TempDir d;
  const Result<Telemetry> t = ReadLongCsv(d.Write("stray.csv", text));
  ASSERT_FALSE(t.has_value());
  EXPECT_THAT(t.error().message, HasSubstr("a timestamp far from the rest?"));
}

TEST(ReadTelemetry, MissingPathIsNotFound) {
  const Result<Telemetry> t = ReadTelemetry("/nonexistent/gpufit/telemetry.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, Code::kNotFound);
  EXPECT_THAT(t.error().message, HasSubstr("/nonexistent/gpufit/telemetry.csv: no such file"));
}

TEST(ReadGenTd26, MissingFileInTheDirectoryIsNamed) {
  TempDir d;
  d.Write(kGenTd26MemoryFile, "timestamp_anon,value,container_ip\n0,1048576,p\n");
  const Result<Telemetry> t = ReadGenTd26(d.path());
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, Code::kNotFound);
  EXPECT_THAT(t.error().message,
              HasSubstr("is not a GenTD26 directory: " + std::string(kGenTd26DutyFile) + " is missing"));
}

TEST(ReadGenTd26, ConvertsBytesToMiBAndReadsEachHeader) {
  TempDir d;
  d.Write(kGenTd26MemoryFile, "timestamp_anon,value,container_ip\n0,1048576,p\n57,2097152,p\n");
  d.Write(kGenTd26DutyFile, "value,timestamp_anon,container_ip\n10,0,p\n20,57,p\n");
  const Result<Telemetry> t = ReadGenTd26(d.path());
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->step_s, 57);
  EXPECT_EQ(t->pods[0].fb_used_mib, (std::vector<float>{1, 2}));
  EXPECT_EQ(t->pods[0].gpu_util_pct, (std::vector<float>{10, 20}));
}

TEST(ReadGenTd26, RealTraceHas143PodsWithBothMetrics) {
  const std::string dir = DataDir() + "/gentd26";
  if (!fs::exists(dir)) GTEST_SKIP() << "no " << dir;
  const Result<Telemetry> t = ReadGenTd26(dir);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->pods.size(), 143u);  // data README: 143 duty-cycle pods, 144 memory pods
  EXPECT_EQ(t->skipped.size(), 1u);
  EXPECT_EQ(t->step_s, 57);      // the trace's scrape interval
  EXPECT_EQ(t->samples, 1441u);  // (1662940800 - 1662858720) / 57 + 1
}

// Issue 18: dcgm-exporter sends DCGM_FI_DEV_GPU_UTIL = 0 for a MIG instance; its duty cycle is
// DCGM_FI_PROF_GR_ENGINE_ACTIVE (a ratio). A long CSV with the device columns says which.
TEST(ReadLongCsv, AMigInstanceTakesEngineActivityNotItsZeroGpuUtil) {
  TempDir d;
  const std::string f = d.Write("mig.csv",
                                "timestamp_s,pod,metric,value,device,GPU_I_ID\n"
                                "0,ml/infer,DCGM_FI_DEV_FB_USED,9000,GPU-a,2\n"
                                "0,ml/infer,DCGM_FI_DEV_GPU_UTIL,0,GPU-a,2\n"
                                "0,ml/infer,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.6,GPU-a,2\n"
                                "60,ml/infer,DCGM_FI_DEV_FB_USED,9000,GPU-a,2\n"
                                "60,ml/infer,DCGM_FI_DEV_GPU_UTIL,0,GPU-a,2\n"
                                "60,ml/infer,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.65,GPU-a,2\n");
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].pod, "ml/infer");
  EXPECT_EQ(t->pods[0].device, "GPU-a/gi2");
  EXPECT_EQ(t->pods[0].util_field, kDcgmGrEngineActive);
  // 0.6 and 0.65 of the time active: 60 % and 65 % (float of the ratio x 100).
  ASSERT_EQ(t->pods[0].gpu_util_pct.size(), 2u);
  EXPECT_FLOAT_EQ(t->pods[0].gpu_util_pct[0], 60.0f);
  EXPECT_FLOAT_EQ(t->pods[0].gpu_util_pct[1], 65.0f);
}

// The GPU_I_PROFILE column names a MIG instance's profile (the plan prices its pod by it);
// a whole GPU's row leaves it empty. Columns in any order.
TEST(ReadLongCsv, TheMigProfileColumnNamesTheInstancesProfile) {
  TempDir d;
  const std::string f = d.Write("mig.csv",
                                "GPU_I_PROFILE,timestamp_s,pod,metric,value,device,GPU_I_ID\n"
                                "1g.10gb,0,ml/infer,DCGM_FI_DEV_FB_USED,9000,GPU-a,2\n"
                                "1g.10gb,0,ml/infer,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.6,GPU-a,2\n"
                                ",0,ml/whole,DCGM_FI_DEV_FB_USED,100,GPU-b,\n"
                                ",0,ml/whole,DCGM_FI_DEV_GPU_UTIL,5,GPU-b,\n");
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->pods.size(), 2u);
  EXPECT_EQ(t->pods[0].pod, "ml/infer");
  EXPECT_EQ(t->pods[0].device, "GPU-a/gi2");
  EXPECT_EQ(t->pods[0].mig_profile, "1g.10gb");
  EXPECT_EQ(t->pods[1].device, "GPU-b");
  EXPECT_EQ(t->pods[1].mig_profile, "");
}

TEST(ReadLongCsv, FullGpusPreferEngineActivityAndFallBackToGpuUtil) {
  TempDir d;
  const std::string f = d.Write("full.csv",
                                "timestamp_s,pod,metric,value\n"
                                "0,volta,DCGM_FI_DEV_FB_USED,100\n"
                                "0,volta,DCGM_FI_DEV_GPU_UTIL,90\n"
                                "0,volta,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.5\n"
                                "0,volta,DCGM_FI_PROF_SM_ACTIVE,0.25\n"
                                "0,pascal,DCGM_FI_DEV_FB_USED,100\n"
                                "0,pascal,DCGM_FI_DEV_GPU_UTIL,40\n");
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->pods.size(), 2u);
  const PodSeries &pascal = t->pods[0], &volta = t->pods[1];
  EXPECT_EQ(pascal.util_field, kDcgmGpuUtil);
  EXPECT_EQ(pascal.gpu_util_pct, (std::vector<float>{40}));
  EXPECT_TRUE(pascal.sm_active_pct.empty());
  EXPECT_EQ(volta.util_field, kDcgmGrEngineActive);
  EXPECT_EQ(volta.gpu_util_pct, (std::vector<float>{50}));
  EXPECT_EQ(volta.sm_active_pct, (std::vector<float>{25}));
}

TEST(ReadLongCsv, APodOnTwoDevicesIsOneSeriesPerDevice) {
  TempDir d;
  std::string text = "device,timestamp_s,pod,metric,value\n";
  for (int t = 0; t <= 120; t += 60)
    for (const char* gpu : {"GPU-b", "GPU-a"})
      text += std::string(gpu) + "," + std::to_string(t) + ",ml/train,DCGM_FI_DEV_FB_USED,1000\n" + gpu + "," +
              std::to_string(t) + ",ml/train,DCGM_FI_DEV_GPU_UTIL,80\n";
  const Result<Telemetry> t = ReadLongCsv(d.Write("two.csv", text));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->pods.size(), 2u);
  EXPECT_EQ(t->pods[0].pod, "ml/train[0]");
  EXPECT_EQ(t->pods[0].device, "GPU-a");
  EXPECT_EQ(t->pods[1].pod, "ml/train[1]");
  EXPECT_EQ(t->pods[1].device, "GPU-b");
  EXPECT_EQ(PodKeyOf(t->pods[1].pod), "ml/train");
}

TEST(ReadLongCsv, AMigInstanceWithOnlyGpuUtilIsLeftOutNotPlannedIdle) {
  TempDir d;
  const std::string f = d.Write("mig.csv",
                                "timestamp_s,pod,metric,value,device\n"
                                "0,busy,DCGM_FI_DEV_FB_USED,9000,MIG-1111\n"
                                "0,busy,DCGM_FI_DEV_GPU_UTIL,0,MIG-1111\n"
                                "0,ok,DCGM_FI_DEV_FB_USED,9000,GPU-a\n"
                                "0,ok,DCGM_FI_DEV_GPU_UTIL,10,GPU-a\n");
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].pod, "ok");
  ASSERT_EQ(t->skipped.size(), 1u);
  EXPECT_THAT(t->skipped[0], HasSubstr("busy: MIG instance MIG-1111 has no DCGM_FI_PROF_GR_ENGINE_ACTIVE samples"));
}

// Issue 21: a large file is read in byte ranges on several threads; the telemetry must be
// the same as one reader's, field by field, with pods, devices and metrics interleaved
// across the ranges, gaps, a MIG instance, a pod ended by a kube_pod_completion_time row and
// a pod left out.
TEST(ReadLongCsv, ReadingInPartsGivesTheSameTelemetryAsOneReader) {
  TempDir d;
  std::string text = "timestamp_s,pod,metric,value,device,GPU_I_ID\n";
  for (int t = 0; t <= 1800; t += 60) {
    for (int p = 0; p < 5; ++p) {
      if (p == 2 && t % 300 == 120) continue;  // gaps in one pod
      if (p == 4 && t > 900) continue;         // a pod that stops reporting
      const std::string pod = "ns/pod" + std::to_string(p);
      const std::string dev = p == 1 ? (t % 120 == 0 ? "GPU-b," : "GPU-a,") : "GPU-c,";
      const std::string gi = p == 3 ? "5" : "";
      text += std::to_string(t) + "," + pod + ",DCGM_FI_DEV_FB_USED," + std::to_string(1000 + 7 * p + t / 60) + "," +
              dev + gi + "\n";
      text += std::to_string(t) + "," + pod + ",DCGM_FI_DEV_GPU_UTIL," + std::to_string((p * 13 + t / 60) % 100) + "," +
              dev + gi + "\n";
      if (p == 3 || (p == 0 && t % 120 == 0))
        text += std::to_string(t) + "," + pod + ",DCGM_FI_PROF_GR_ENGINE_ACTIVE,0." + std::to_string(p + 1) + "," +
                dev + gi + "\n";
    }
    text += std::to_string(t) + ",ns/mig-only,DCGM_FI_DEV_GPU_UTIL,0,MIG-9,\n";
    text += std::to_string(t) + ",ns/mig-only,DCGM_FI_DEV_FB_USED,10,MIG-9,\n";
  }
  text += "1200,ns/pod0,kube_pod_completion_time,1500,,\n";
  const std::string f = d.Write("parts.csv", text);

  const Result<Telemetry> one = internal::ReadLongCsvInParts(f, {}, 1, 0);
  ASSERT_TRUE(one.has_value()) << one.error().message;
  ASSERT_GE(one->pods.size(), 5u);  // pod1 is two series (two devices)
  ASSERT_FALSE(one->ended.empty());
  ASSERT_FALSE(one->skipped.empty());
  for (std::size_t parts : {2u, 3u, 8u}) {
    SCOPED_TRACE(parts);
    const Result<Telemetry> many = internal::ReadLongCsvInParts(f, {}, parts, 0);
    ASSERT_TRUE(many.has_value()) << many.error().message;
    EXPECT_EQ(many->start_s, one->start_s);
    EXPECT_EQ(many->step_s, one->step_s);
    EXPECT_EQ(many->samples, one->samples);
    EXPECT_EQ(many->skipped, one->skipped);
    EXPECT_EQ(many->gpu_model_name, one->gpu_model_name);
    ASSERT_EQ(many->ended.size(), one->ended.size());
    for (std::size_t i = 0; i < one->ended.size(); ++i) {
      EXPECT_EQ(many->ended[i].pod, one->ended[i].pod);
      EXPECT_EQ(many->ended[i].end_s, one->ended[i].end_s);
      EXPECT_EQ(many->ended[i].source, one->ended[i].source);
      EXPECT_EQ(many->ended[i].dropped_samples, one->ended[i].dropped_samples);
    }
    ASSERT_EQ(many->pods.size(), one->pods.size());
    for (std::size_t i = 0; i < one->pods.size(); ++i) {
      const PodSeries &a = many->pods[i], &b = one->pods[i];
      SCOPED_TRACE(b.pod);
      EXPECT_EQ(a.pod, b.pod);
      EXPECT_EQ(a.device, b.device);
      EXPECT_EQ(a.util_field, b.util_field);
      EXPECT_EQ(a.first, b.first);
      EXPECT_EQ(a.last, b.last);
      EXPECT_EQ(a.filled_samples, b.filled_samples);
      EXPECT_EQ(a.fb_gaps, b.fb_gaps);
      EXPECT_EQ(a.fb_used_mib, b.fb_used_mib);
      EXPECT_EQ(a.gpu_util_pct, b.gpu_util_pct);
      ASSERT_EQ(a.sm_active_pct.size(), b.sm_active_pct.size());
      for (std::size_t k = 0; k < b.sm_active_pct.size(); ++k)  // NaN where no sample: compare bits
        EXPECT_TRUE(a.sm_active_pct[k] == b.sm_active_pct[k] ||
                    (std::isnan(a.sm_active_pct[k]) && std::isnan(b.sm_active_pct[k])));
    }
  }
}

}  // namespace
}  // namespace gpufit

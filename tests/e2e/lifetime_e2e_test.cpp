// Issue 18 (3): a finished pod's stale samples. ml/job-0 runs at 80 % duty for 4 samples
// (0 to 180 s after T0) and ends at 180 s; dcgm-exporter then reports its idle GPU (0 %)
// under its name for 2 more samples. Given its end (kubectl's pods or a CSV row), the plan
// reads 80 % over 4 samples; without, 80 x 4 / 6 = 53.3 % over 6, a third of them idle.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace {

using gpufit::e2e::CliRun;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr long long kT0 = 1767225600;  // 2026-01-01T00:00:00Z

std::string Csv(const std::string& extra = "") {
  std::string csv = "timestamp_s,pod,metric,value\n";
  for (int k = 0; k < 6; ++k) {
    const long long t = kT0 + 60 * k;
    csv += fmt::format("{},ml/job-0,DCGM_FI_DEV_FB_USED,{}\n{},ml/job-0,DCGM_FI_DEV_GPU_UTIL,{}\n", t, k < 4 ? 1000 : 0,
                       t, k < 4 ? 80 : 0);
    csv += fmt::format("{},ml/web-0,DCGM_FI_DEV_FB_USED,500\n{},ml/web-0,DCGM_FI_DEV_GPU_UTIL,10\n", t, t);
  }
  return csv + extra;
}

// kubectl get pods -A -o json: job-0 Succeeded, its container finished at T0 + 180 s.
std::string PodsJson() {
  auto pod = [](const std::string& name, const std::string& phase, Json statuses) {
    return Json{{"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "ml"}}},
                {"spec", {{"containers", Json::array({{{"name", "main"}, {"image", "x"}}})}}},
                {"status", {{"phase", phase}, {"containerStatuses", statuses}}}};
  };
  const Json done = {{"name", "main"}, {"state", {{"terminated", {{"finishedAt", "2026-01-01T00:03:00Z"}}}}}};
  const Json running = {{"name", "main"}, {"state", {{"running", {{"startedAt", "2026-01-01T00:00:00Z"}}}}}};
  return Json{{"kind", "List"}, {"items", {pod("job-0", "Succeeded", {done}), pod("web-0", "Running", {running})}}}
      .dump();
}

const Json& Pod(const Json& plan, const std::string& name) {
  for (const Json& p : plan["pods"])
    if (p["pod"] == name) return p;
  ADD_FAILURE() << "no pod " << name;
  return plan["pods"][0];
}

TEST(PodLifetime, KubectlPodsEndAFinishedJobAndThePlanSaysSo) {
  const auto dir = Scratch("lifetime-pods");
  std::ofstream(dir / "t.csv") << Csv();
  std::ofstream(dir / "pods.json") << PodsJson();
  const std::string args = "plan --telemetry " + (dir / "t.csv").string() + " --gpu h100-80gb";

  const CliRun before = Gpufit(args + " --format json", dir);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  const Json b = Json::parse(before.out);
  EXPECT_NEAR(Pod(b, "ml/job-0")["profile"]["gpu_util_pct"]["mean"].get<double>(), 80.0 * 4 / 6, 1e-6);
  EXPECT_NEAR(Pod(b, "ml/job-0")["profile"]["idle_share"].get<double>(), 2.0 / 6, 1e-6);
  EXPECT_EQ(b["telemetry"]["ended"].size(), 0u);

  const CliRun with = Gpufit(args + " --pods " + (dir / "pods.json").string() + " --format json", dir);
  ASSERT_EQ(with.exit_code, 0) << with.err;
  const Json w = Json::parse(with.out);
  const Json& job = Pod(w, "ml/job-0")["profile"];
  EXPECT_DOUBLE_EQ(job["gpu_util_pct"]["mean"].get<double>(), 80.0);
  EXPECT_EQ(job["idle_share"].get<double>(), 0.0);
  EXPECT_NEAR(job["gpu_hours_allocated"].get<double>(), 4 * 60 / 3600.0, 1e-9);  // 4 samples, not 6
  ASSERT_EQ(w["telemetry"]["ended"].size(), 1u);
  EXPECT_EQ(w["telemetry"]["ended"][0]["pod"], "ml/job-0");
  EXPECT_EQ(w["telemetry"]["ended"][0]["end_s"], kT0 + 180);
  EXPECT_EQ(w["telemetry"]["ended"][0]["source"], "pods JSON finishedAt");
  EXPECT_EQ(w["telemetry"]["ended"][0]["dropped_samples"], 2);
  EXPECT_EQ(w["telemetry"]["samples_dropped_after_end"], 2);

  const CliRun text = Gpufit(args + " --pods " + (dir / "pods.json").string(), dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("Dropped 2 samples after the end of 1 finished pod ("));
  EXPECT_THAT(text.out, HasSubstr(fmt::format("ml/job-0 (2 samples after {} s, pods JSON finishedAt)", kT0 + 180)));
}

TEST(PodLifetime, ACompletionRowInTheCsvDoesTheSame) {
  const auto dir = Scratch("lifetime-row");
  std::ofstream(dir / "t.csv") << Csv(fmt::format("{},ml/job-0,kube_pod_completion_time,{}\n", kT0, kT0 + 180));
  const CliRun r = Gpufit("analyze --telemetry " + (dir / "t.csv").string() + " --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_DOUBLE_EQ(Pod(j, "ml/job-0")["gpu_util_pct"]["mean"].get<double>(), 80.0);
  EXPECT_EQ(Pod(j, "ml/job-0")["running_samples"], 4);
}

TEST(PodLifetime, ABadPodsFileIsOneErrorAndExitTwo) {
  const auto dir = Scratch("lifetime-bad");
  std::ofstream(dir / "t.csv") << Csv();
  std::string pods = PodsJson();
  pods.replace(pods.find("2026-01-01T00:03:00Z"), 20, "yesterday");
  std::ofstream(dir / "pods.json") << pods;
  const CliRun r = Gpufit("plan --telemetry " + (dir / "t.csv").string() + " --gpu h100-80gb --pods " +
                              (dir / "pods.json").string() + " --out " + (dir / "out").string(),
                          dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(".status.containerStatuses[0].state.terminated.finishedAt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

}  // namespace

// Issue 18, point 9: hostile JSON inputs that crashed the Release binary (SIGABRT, SIGSEGV)
// are clear errors with exit code 2, and plan.json type errors name the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.h"

namespace gpufit::e2e {
namespace {

using ::testing::HasSubstr;

// One pod, p1, three one-minute samples (docs/telemetry-formats.md, long CSV).
fs::path Telemetry(const fs::path& dir) {
  const fs::path p = dir / "t.csv";
  std::ofstream(p) << "timestamp_s,pod,metric,value\n"
                      "0,p1,DCGM_FI_DEV_FB_USED,1000\n0,p1,DCGM_FI_DEV_GPU_UTIL,10\n"
                      "60,p1,DCGM_FI_DEV_FB_USED,1000\n60,p1,DCGM_FI_DEV_GPU_UTIL,10\n"
                      "120,p1,DCGM_FI_DEV_FB_USED,1000\n120,p1,DCGM_FI_DEV_GPU_UTIL,10\n";
  return p;
}

// A plan that passes the option checks of `gpufit replay` (a100-80gb, p1 in one group) with
// `extra` appended as further top-level members.
std::string Plan(const std::string& extra) {
  return R"({"schema_version": 1, "options": {"target_gpu": "a100-80gb", "reserve_mib": 0,
             "max_collision_share": 0.01}, "groups": [{"pods": ["p1"]}])" +
         extra + "}";
}

TEST(BadJsonE2e, ReplayPlanThatIsADirectory) {
  const fs::path dir = Scratch("plan-dir");
  fs::create_directories(dir / "plan.json");
  const CliRun r =
      Gpufit("replay --telemetry " + Telemetry(dir).string() + " --plan " + (dir / "plan.json").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // was 134: uncaught std::ios_base::failure
  EXPECT_THAT(r.err, HasSubstr((dir / "plan.json").string() + ": not a regular file (a directory)"));
}

TEST(BadJsonE2e, ReplayPlanNestedDeep) {
  const fs::path dir = Scratch("plan-deep");
  std::ofstream(dir / "plan.json") << Plan(", \"kept_on_current_gpu\": " + std::string(300'000, '[') +
                                           std::string(300'000, ']'));
  const CliRun r =
      Gpufit("replay --telemetry " + Telemetry(dir).string() + " --plan " + (dir / "plan.json").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // was SIGSEGV: nlohmann's recursive copy
  EXPECT_THAT(r.err, HasSubstr("plan.json: JSON nested deeper than 100 levels at byte"));
}

TEST(BadJsonE2e, ReplayPlanTypeErrorNamesTheField) {
  const fs::path dir = Scratch("plan-type");
  std::ofstream(dir / "plan.json") << Plan(R"(, "kept_on_current_gpu": [7])");
  const CliRun r =
      Gpufit("replay --telemetry " + Telemetry(dir).string() + " --plan " + (dir / "plan.json").string(), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // Was "[json.exception.type_error.302] type must be string, but is number", no field.
  EXPECT_THAT(r.err, HasSubstr("plan.json: kept_on_current_gpu[0]: type must be string, but is number"));
}

TEST(BadJsonE2e, NodesWithAHugeNumber) {
  const fs::path dir = Scratch("nodes-number");
  std::ofstream(dir / "nodes.json") << R"({"kind": "NodeList", "items": [{"metadata": {"name": "n1"},
      "status": {"capacity": {"cpu": )" + std::string(20'000, '1') +
                                           "}}}]}";
  const CliRun r = Gpufit(
      "plan --telemetry " + Telemetry(dir).string() + " --nodes " + (dir / "nodes.json").string() + " --format json",
      dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // was 134: uncaught nlohmann::json::out_of_range
  EXPECT_THAT(r.err, HasSubstr("nodes.json: "));
  EXPECT_THAT(r.err, HasSubstr("number overflow"));
  EXPECT_LT(r.err.size(), 1000u);  // the 20,000 digits are not echoed
}

TEST(BadJsonE2e, OversizePodsFileIsRefusedBeforeReading) {
  const fs::path dir = Scratch("pods-big");
  // 1 GiB, sparse: it takes no disk, and was read whole, then parsed until memory ran out.
  std::ofstream(dir / "pods.json").close();
  fs::resize_file(dir / "pods.json", 1ull << 30);
  const CliRun r = Gpufit(
      "plan --telemetry " + Telemetry(dir).string() + " --pods " + (dir / "pods.json").string() + " --format json",
      dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("pods.json: 1073741824 bytes of JSON, more than the 256 MiB gpufit reads"));
}

}  // namespace
}  // namespace gpufit::e2e

// A plan keyed by workload survives a rollout: planned with --pods on one week, replayed
// with --pods on telemetry where every Deployment pod has a new ReplicaSet hash (as the
// rollout the plan's own patches cause gives), it gives the same result as the replay of
// the week it was made on; a workload the plan never saw is listed as unplanned.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"
#include "kube_fixture.h"

namespace gpufit::e2e {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
namespace kt = gpufit::testing;

struct FixturePod {
  std::string name;        // pod name in namespace ml
  std::string owner_kind;  // ReplicaSet, StatefulSet, Job, or "" (bare)
  std::string owner;       // owner name (for a ReplicaSet: <deployment>-<hash>)
  std::string workload;    // the key the plan must give it (the test's own answer)
  double memory_mib;       // constant part; web adds a shared 30-minute step
  int replica;             // index among its workload's replicas (duty phase)
};

// The pods of week 0, or of week 1: after a rollout, every Deployment pod has a new
// ReplicaSet hash and suffix; StatefulSet, Job and bare pod names stay.
std::vector<FixturePod> Pods(int week) {
  const std::string web = week == 0 ? "web-5d8f7c9b4" : "web-7f6e5d4c3";
  const std::string api = week == 0 ? "api-6c7d8e9f5" : "api-9b8a7c6d5";
  const std::vector<std::string> suffix = week == 0 ? std::vector<std::string>{"aaaaa", "bbbbb", "ccccc"}
                                                    : std::vector<std::string>{"x2k9p", "x2k9q", "x2k9r"};
  std::vector<FixturePod> pods;
  for (int i = 0; i < 3; ++i) pods.push_back({web + "-" + suffix[i], "ReplicaSet", web, "deployment/ml/web", 12000, i});
  for (int i = 0; i < 2; ++i) pods.push_back({api + "-" + suffix[i], "ReplicaSet", api, "deployment/ml/api", 18000, i});
  for (int i = 0; i < 2; ++i)
    pods.push_back({"db-" + std::to_string(i), "StatefulSet", "db", "statefulset/ml/db", 22000, i});
  pods.push_back({"run-7-x2k9p", "Job", "run-7", "job/ml/run-7", 30000, 0});
  pods.push_back({"debug", "", "", "pod/ml/debug", 4000, 0});
  return pods;
}

// 4 hours every 60 s. Replicas of one workload use the same memory (so the workload's envelope
// is exact and the plan's safety carries over) and different duty phases; all duty cycles
// together stay under 100%, so no GPU can collide.
void WriteTelemetry(const fs::path& csv, const std::vector<FixturePod>& pods) {
  std::ofstream out(csv);
  out << "timestamp_s,pod,metric,value\n";
  for (int k = 0; k < 240; ++k) {
    for (const FixturePod& p : pods) {
      const double memory = p.memory_mib + (p.workload == "deployment/ml/web" ? 1000.0 * ((k / 30) % 3) : 0.0);
      out << 60 * k << ",ml/" << p.name << ",DCGM_FI_DEV_FB_USED," << memory << "\n"
          << 60 * k << ",ml/" << p.name << ",DCGM_FI_DEV_GPU_UTIL," << 2 + (k + 13 * p.replica) % 7 << "\n";
    }
  }
}

void WritePods(const fs::path& file, const std::vector<FixturePod>& pods) {
  Json items = Json::array();
  int uid = 0;
  for (const FixturePod& p : pods) {
    kt::PodArgs a{.ns = "ml", .name = p.name};
    if (p.owner_kind == "ReplicaSet") {
      a.owners = Json::array({kt::OwnerRef("apps/v1", "ReplicaSet", p.owner)});
      a.labels = {{"pod-template-hash", p.owner.substr(p.owner.rfind('-') + 1)}};
    } else if (p.owner_kind == "StatefulSet") {
      a.owners = Json::array({kt::OwnerRef("apps/v1", "StatefulSet", p.owner)});
    } else if (p.owner_kind == "Job") {
      a.owners = Json::array({kt::OwnerRef("batch/v1", "Job", p.owner)});
    }
    a.containers = Json::array(
        {kt::Container("main", "registry.example/" + p.owner + ":1", Json::object(), {{"nvidia.com/gpu", "1"}})});
    a.node = "gpu-0";
    items.push_back(kt::Pod(a, uid++));
  }
  std::ofstream(file) << kt::List(items).dump(2);
}

// The four fields a replay is judged by.
Json Verdict(const std::string& out) {
  const Json j = Json::parse(out);
  return {{"gpus", j["gpus"]},
          {"memory_overflows", j["memory_overflows"]},
          {"max_collision_share", j["max_collision_share"]},
          {"safe", j["safe"]}};
}

class Rollout : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Scratch("rollout-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    old_ = Pods(0);
    renamed_ = Pods(1);
    WriteTelemetry(dir_ / "old.csv", old_);
    WritePods(dir_ / "old-pods.json", old_);
    WriteTelemetry(dir_ / "new.csv", renamed_);
    WritePods(dir_ / "new-pods.json", renamed_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliRun Plan(const std::string& extra = "") {
    return Gpufit("plan --telemetry " + (dir_ / "old.csv").string() + " --gpu h100-80gb --out " +
                      (dir_ / "plan").string() + " --format json " + extra,
                  dir_);
  }
  CliRun Replay(const std::string& telemetry, const std::string& pods) {
    return Gpufit("replay --telemetry " + (dir_ / telemetry).string() + " --plan " +
                      (dir_ / "plan" / "plan.json").string() + " --format json" +
                      (pods.empty() ? "" : " --pods " + (dir_ / pods).string()),
                  dir_);
  }

  fs::path dir_;
  std::vector<FixturePod> old_, renamed_;
};

TEST_F(Rollout, PlanNamesEachPodsWorkloadAndCountsReplicasPerGroup) {
  const CliRun plan = Plan("--pods " + (dir_ / "old-pods.json").string());
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json j = Json::parse(Slurp(dir_ / "plan" / "plan.json"));
  std::map<std::string, std::string> expected;  // telemetry pod -> the test's own key
  for (const FixturePod& p : old_) expected["ml/" + p.name] = p.workload;
  ASSERT_EQ(j["pods"].size(), old_.size());
  for (const Json& p : j["pods"]) EXPECT_EQ(p["workload"], expected.at(p["pod"].get<std::string>())) << p["pod"];
  std::size_t slots = 0;
  for (const Json& g : j["groups"]) {
    std::map<std::string, std::size_t> counted;  // from the group's pod names
    for (const Json& name : g["pods"]) ++counted[expected.at(name.get<std::string>())];
    std::map<std::string, std::size_t> stated;
    for (const Json& w : g["workloads"]) stated[w["workload"].get<std::string>()] = w["replicas"].get<std::size_t>();
    EXPECT_EQ(stated, counted) << g.dump();
    for (const auto& [w, n] : stated) slots += n;
  }
  EXPECT_EQ(slots + j["too_big_for_target_workloads"].size() + j["kept_on_current_gpu_workloads"].size(), old_.size());
  EXPECT_EQ(j["too_big_for_target_workloads"], Json::array());
  EXPECT_EQ(j["workload_replay"]["memory_overflows"], 0);
  EXPECT_TRUE(j["workload_replay"]["safe"].get<bool>());
  EXPECT_THAT(plan.out, HasSubstr("\"workloads\""));
}

TEST_F(Rollout, RenamedPodsReplayByWorkloadAsTheOriginalWeek) {
  ASSERT_EQ(Plan("--pods " + (dir_ / "old-pods.json").string()).exit_code, 0);
  const CliRun by_name = Replay("old.csv", "");
  ASSERT_EQ(by_name.exit_code, 0) << by_name.err;
  const CliRun before = Replay("old.csv", "old-pods.json");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  const CliRun after = Replay("new.csv", "new-pods.json");
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(Verdict(after.out), Verdict(before.out));
  // Replicas of a workload use the same memory here, so the envelope is exact: the same as by name.
  EXPECT_EQ(Verdict(before.out), Verdict(by_name.out));
  const Json a = Json::parse(after.out);
  EXPECT_EQ(a["matching"], "workload");
  EXPECT_EQ(a["unplanned"], Json::array());
  EXPECT_EQ(a["absent"], Json::array());
  EXPECT_EQ(a["pods_not_in_pods_file"], Json::array());
  EXPECT_EQ(a["gpus"], Json::parse(Slurp(dir_ / "plan" / "plan.json"))["groups"].size());
}

TEST_F(Rollout, RenamedPodsStillFailWithoutPods) {
  ASSERT_EQ(Plan("--pods " + (dir_ / "old-pods.json").string()).exit_code, 0);
  const CliRun r = Replay("new.csv", "");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is not in " + (dir_ / "new.csv").string()));
  EXPECT_THAT(r.err, HasSubstr("give --pods to match pods by workload"));
}

TEST_F(Rollout, ANewWorkloadIsUnplannedNotRefused) {
  ASSERT_EQ(Plan("--pods " + (dir_ / "old-pods.json").string()).exit_code, 0);
  const CliRun before = Replay("new.csv", "new-pods.json");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  std::vector<FixturePod> grown = renamed_;
  grown.push_back({"embed-58c9d7f6b4-m4n5p", "ReplicaSet", "embed-58c9d7f6b4", "deployment/ml/embed", 9000, 0});
  // web scales from 3 to 4 replicas: one more than its planned slots.
  grown.push_back({"web-7f6e5d4c3-x2k9s", "ReplicaSet", "web-7f6e5d4c3", "deployment/ml/web", 12000, 3});
  WriteTelemetry(dir_ / "grown.csv", grown);
  WritePods(dir_ / "grown-pods.json", grown);
  const CliRun r = Replay("grown.csv", "grown-pods.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  ASSERT_EQ(j["unplanned"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["unplanned"][0]["workload"], "deployment/ml/embed");
  EXPECT_EQ(j["unplanned"][0]["planned_slots"], 0);
  EXPECT_EQ(j["unplanned"][0]["pods"], Json::array({"ml/embed-58c9d7f6b4-m4n5p"}));
  EXPECT_EQ(j["unplanned"][1]["workload"], "deployment/ml/web");
  EXPECT_EQ(j["unplanned"][1]["replicas"], 4);
  EXPECT_EQ(j["unplanned"][1]["planned_slots"], 3);
  EXPECT_EQ(j["unplanned"][1]["unplanned_replicas"], 1);
  // The 4th web replica has the same memory as the others: the planned slots replay the same.
  EXPECT_EQ(Verdict(r.out), Verdict(before.out));
}

TEST_F(Rollout, BadPodsFileIsRejectedByName) {
  ASSERT_EQ(Plan("--pods " + (dir_ / "old-pods.json").string()).exit_code, 0);
  std::ofstream(dir_ / "broken.json") << R"({"apiVersion": "v1", "kind": "List", "items": [)";
  const CliRun r = Replay("new.csv", "broken.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr((dir_ / "broken.json").string() + ": malformed JSON"));
  std::ofstream(dir_ / "nodes.json") << R"({"apiVersion": "v1", "kind": "NodeList", "items": []})";
  const CliRun n = Replay("new.csv", "nodes.json");
  EXPECT_EQ(n.exit_code, 2);
  EXPECT_THAT(n.err, HasSubstr((dir_ / "nodes.json").string()));
  EXPECT_THAT(n.err, HasSubstr(".kind"));
}

TEST_F(Rollout, PlanWithoutPodsCannotBeReplayedByWorkload) {
  ASSERT_EQ(Plan().exit_code, 0);
  const Json j = Json::parse(Slurp(dir_ / "plan" / "plan.json"));
  EXPECT_TRUE(j["groups"][0]["workloads"].is_null());
  EXPECT_TRUE(j["workload_replay"].is_null());
  const CliRun r = Replay("new.csv", "new-pods.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("groups[0].workloads is missing: the plan was made without --pods"));
}

// A plan for a back end that caps memory replays each pod against its own cap: the renamed
// week holds; a week where db's replicas grow to 30000 MiB (their cap, read from plan.json,
// is below) is unsafe, every sample of both replicas over, each named.
TEST_F(Rollout, CappedPlanReplaysEachPodAgainstItsOwnCap) {
  ASSERT_EQ(Plan("--sharing hami --pods " + (dir_ / "old-pods.json").string()).exit_code, 0);
  const Json plan = Json::parse(Slurp(dir_ / "plan" / "plan.json"));
  ASSERT_EQ(plan["options"]["sharing"], "hami");
  double db_cap = 0;
  for (const Json& g : plan["groups"])
    for (std::size_t i = 0; i < g["pods"].size(); ++i)
      if (g["pods"][i].get<std::string>().starts_with("ml/db-")) db_cap = g["memory_caps_mib"][i];
  ASSERT_GT(db_cap, 22000);
  ASSERT_LT(db_cap, 30000);
  const CliRun held = Replay("new.csv", "new-pods.json");
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_EQ(Json::parse(held.out)["cap_overflow_samples"], 0);

  std::vector<FixturePod> grown = renamed_;
  for (FixturePod& p : grown)
    if (p.workload == "statefulset/ml/db") p.memory_mib = 30000;
  WriteTelemetry(dir_ / "grown.csv", grown);
  const CliRun over = Replay("grown.csv", "new-pods.json");
  EXPECT_EQ(over.exit_code, 3) << over.err;
  const Json j = Json::parse(over.out);
  EXPECT_EQ(j["cap_overflow_samples"], 2 * 240);
  EXPECT_EQ(j["over_cap"], Json::array({fmt::format("ml/db-0: peak 30000 MiB > cap {:.0f} MiB", db_cap),
                                        fmt::format("ml/db-1: peak 30000 MiB > cap {:.0f} MiB", db_cap)}));
  EXPECT_FALSE(j["safe"]);
}

TEST_F(Rollout, SharingFlagsThatCannotWorkAreRefused) {
  const std::string pods = " --pods " + (dir_ / "old-pods.json").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--sharing hami --emit-manifests " + (dir_ / "m").string(), "--emit-manifests needs --pods"},
      {"--sharing kai --kai-queue Team_A!" + pods, "--kai-queue 'Team_A!' is not a valid label value"},
      {"--sharing hami --kai-queue team-a" + pods, "--kai-queue applies to --sharing kai only"},
      {"--sharing gpushare" + pods, "--sharing"},
  };
  for (const auto& [flags, message] : cases) {
    const CliRun r = Plan(flags);
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_THAT(r.err, HasSubstr(message)) << flags;
    EXPECT_FALSE(fs::exists(dir_ / "m")) << flags;
  }
}

}  // namespace
}  // namespace gpufit::e2e

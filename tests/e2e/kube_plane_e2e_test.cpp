// Issue 42: the test control plane runs rollouts and simulates GPU out-of-memory kills, for the
// tests of `gpufit apply` (tests/support/kube_control_plane.h, tests/support/kwok_stages.h).
//
// On a real kube-apiserver with kube-controller-manager, kube-scheduler (profiles
// default-scheduler and hami-scheduler) and KWOK nodes carrying nvidia.com/gpu and
// nvidia.com/gpumem:
// - a Deployment under hami-scheduler whose nvidia.com/gpumem limit is above the KWOK stage's
//   threshold gets a ReplicaSet and Running pods and no OOM kill, and its PodDisruptionBudget
//   gets disruptionsAllowed = healthy pods - minAvailable;
// - a template patch below the threshold rolls out (a second ReplicaSet, the first scaled to 0)
//   and each new pod's container is OOMKilled once: exit code 137, restartCount 1, and it stays 1;
// - the threshold moves by restarting KWOK with a new stage file; a limit equal to the threshold
//   is not below it; only the container below it is killed, its sibling's status is kept; a
//   second restart does not kill it again;
// - a StatefulSet gets its pod NAME-0 and a Job completes (its controllers run too).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "kube_control_plane.h"
#include "kwok_stages.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::Scratch;
using gpufit::testing::KubeControlPlane;
using gpufit::testing::KwokOomStage;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr long kH100MemoryMib = 81559;  // an H100 80GB as nvidia-smi reports it

struct ContainerSpec {
  std::string name;
  std::optional<std::string> gpumem;  // the nvidia.com/gpumem limit, a quantity of MiB; none: no GPU
};

// A Deployment `name` (label app=name) of `replicas` pods under `scheduler`.
Json Deployment(const std::string& name, int replicas, const std::string& scheduler,
                const std::vector<ContainerSpec>& containers) {
  Json list = Json::array();
  for (const ContainerSpec& c : containers) {
    Json container{{"name", c.name}, {"image", "vllm/vllm-openai:v0.6.0"}};
    if (c.gpumem) container["resources"]["limits"] = {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", *c.gpumem}};
    list.push_back(container);
  }
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec", {{"schedulerName", scheduler}, {"containers", list}}}}}}}};
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

class KubePlane : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Scratch(::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto plane = KubeControlPlane::Start((dir_ / "plane").string());
    ASSERT_TRUE(plane) << plane.error().message;
    plane_ = std::move(*plane);
    const Clock::time_point t0 = Clock::now();
    gpufit::Result<void> kcm = plane_->StartControllerManager();
    ASSERT_TRUE(kcm) << kcm.error().message;
    std::cout << "kube-controller-manager started in " << SecondsSince(t0) << " s\n";
    gpufit::Result<void> scheduler = plane_->StartSchedulerProfiles();
    ASSERT_TRUE(scheduler) << scheduler.error().message;
    for (const char* node : {"gpu-a", "gpu-b"}) {
      gpufit::Result<void> made = plane_->CreateKwokGpuNode(node, 4, kH100MemoryMib);
      ASSERT_TRUE(made) << made.error().message;
    }
  }
  void TearDown() override {
    plane_.reset();  // stops every process of the plane
    fs::remove_all(dir_);
  }

  // (Re)starts KWOK with the OOM stage of `threshold_mib` on nvidia.com/gpumem.
  void StartKwokWithOomBelow(long threshold_mib) {
    const fs::path stage = dir_ / ("oom-below-" + std::to_string(threshold_mib) + ".yaml");
    std::ofstream(stage) << KwokOomStage("nvidia.com/gpumem", threshold_mib);
    gpufit::Result<void> kwok = plane_->StartKwok({stage.string()});
    ASSERT_TRUE(kwok) << kwok.error().message;
  }

  Json Get(const std::vector<std::string>& what) {
    std::vector<std::string> args{"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    gpufit::Result<std::string> out = plane_->KubectlOk(args);
    EXPECT_TRUE(out) << out.error().message;
    return out ? Json::parse(*out) : Json::object();
  }
  // The pods of app=`app` that are not being deleted.
  std::vector<Json> Pods(const std::string& app) {
    std::vector<Json> pods;
    const Json list = Get({"pods", "-l", "app=" + app});
    for (const Json& p : list["items"])
      if (!p["metadata"].contains("deletionTimestamp")) pods.push_back(p);
    return pods;
  }
  void Apply(const Json& object) {
    gpufit::Result<std::string> made = plane_->KubectlOk({"create", "-f", "-"}, object.dump());
    ASSERT_TRUE(made) << made.error().message;
  }

  // Polls `done` every 100 ms until it holds or `timeout_s` passed; false then.
  static bool WaitFor(const std::function<bool()>& done, double timeout_s) {
    const Clock::time_point t0 = Clock::now();
    while (SecondsSince(t0) < timeout_s) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return done();
  }

  fs::path dir_;
  std::unique_ptr<KubeControlPlane> plane_;
};

bool Running(const Json& pod) {
  return pod["status"].value("phase", "") == "Running" && !pod["spec"].value("nodeName", "").empty();
}

// The status of container `name` of `pod`; an empty object when it has none.
Json ContainerStatus(const Json& pod, const std::string& name) {
  for (const Json& s : pod["status"].value("containerStatuses", Json::array()))
    if (s.value("name", "") == name) return s;
  return Json::object();
}

bool OomKilled(const Json& status) {
  return status.value("/lastState/terminated/reason"_json_pointer, std::string()) == "OOMKilled";
}

TEST_F(KubePlane, RolloutBelowTheThresholdIsKilledForOutOfMemoryOnce) {
  constexpr long kThreshold = 40000;
  StartKwokWithOomBelow(kThreshold);
  Apply(Deployment("llm", 2, "hami-scheduler", {{"vllm", "60330"}}));
  Apply({{"apiVersion", "policy/v1"},
         {"kind", "PodDisruptionBudget"},
         {"metadata", {{"name", "llm"}, {"namespace", "default"}}},
         {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "llm"}}}}}}}});

  // Above the threshold: a ReplicaSet, two Running pods placed by the hami-scheduler profile.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::vector<Json> pods = Pods("llm");
        return pods.size() == 2 && Running(pods[0]) && Running(pods[1]);
      },
      30))
      << Get({"pods"}).dump(1);
  const Json first_sets = Get({"replicasets", "-l", "app=llm"})["items"];
  ASSERT_EQ(first_sets.size(), 1u);
  const std::string first_hash = first_sets[0]["metadata"]["labels"].value("pod-template-hash", "");
  std::set<std::string> scheduled_by;
  ASSERT_TRUE(WaitFor(
      [&] {
        scheduled_by.clear();
        const Json events = Get({"events", "--field-selector", "reason=Scheduled"});
        for (const Json& e : events["items"]) scheduled_by.insert(e.value("reportingComponent", ""));
        return !scheduled_by.empty();
      },
      10));
  EXPECT_EQ(scheduled_by, std::set<std::string>{"hami-scheduler"});

  // The PDB's status: 2 healthy pods, minAvailable 1.
  Json pdb;
  ASSERT_TRUE(WaitFor(
      [&] {
        pdb = Get({"pdb", "llm"});
        return pdb["status"].value("currentHealthy", 0) == 2;
      },
      20))
      << pdb.dump(1);
  EXPECT_EQ(pdb["status"].value("expectedPods", -1), 2);
  EXPECT_EQ(pdb["status"].value("desiredHealthy", -1), 1);
  EXPECT_EQ(pdb["status"].value("disruptionsAllowed", -1), 2 - 1);

  // No kill above the threshold, also after KWOK has seen the Running pods for a while.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (const Json& pod : Pods("llm")) {
    const Json status = ContainerStatus(pod, "vllm");
    EXPECT_EQ(status.value("restartCount", -1), 0) << pod.dump(1);
    EXPECT_FALSE(OomKilled(status)) << pod.dump(1);
  }

  // Below it: the template change rolls out and each new pod's container is killed once.
  const Clock::time_point patched = Clock::now();
  gpufit::Result<std::string> patch = plane_->KubectlOk(
      {"patch", "deployment", "llm", "--type", "strategic", "-p",
       R"({"spec": {"template": {"spec": {"containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpumem": "30000"}}}]}}}})"});
  ASSERT_TRUE(patch) << patch.error().message;
  std::vector<Json> pods;
  ASSERT_TRUE(WaitFor(
      [&] {
        pods = Pods("llm");
        if (pods.size() != 2) return false;
        for (const Json& p : pods)
          if (p["metadata"]["labels"].value("pod-template-hash", "") == first_hash ||
              !OomKilled(ContainerStatus(p, "vllm")))
            return false;
        return true;
      },
      40))
      << Json(pods).dump(1);
  const double patch_to_oom_s = SecondsSince(patched);
  std::cout << "patch to OOMKilled on both new pods: " << patch_to_oom_s << " s\n";
  RecordProperty("patch_to_oom_ms", static_cast<int>(patch_to_oom_s * 1000));

  const Json sets = Get({"replicasets", "-l", "app=llm"})["items"];
  ASSERT_EQ(sets.size(), 2u);
  for (const Json& rs : sets) {
    const bool old = rs["metadata"]["labels"].value("pod-template-hash", "") == first_hash;
    EXPECT_EQ(rs["spec"].value("replicas", -1), old ? 0 : 2) << rs.dump(1);
  }
  std::set<std::string> names;
  for (const Json& pod : pods) {
    names.insert(pod["metadata"]["name"]);
    // The API server keeps a limit in its canonical spelling: 30000 is "30k".
    EXPECT_EQ(pod.value("/spec/containers/0/resources/limits/nvidia.com~1gpumem"_json_pointer, std::string()), "30k");
    const Json status = ContainerStatus(pod, "vllm");
    EXPECT_EQ(status.value("/lastState/terminated/exitCode"_json_pointer, -1), 137) << status.dump(1);
    EXPECT_FALSE(status.value("/lastState/terminated/finishedAt"_json_pointer, std::string()).empty());
    EXPECT_EQ(status.value("restartCount", -1), 1) << status.dump(1);
    EXPECT_TRUE(status.contains("/state/running"_json_pointer)) << status.dump(1);
  }

  // Once: restartCount stays 1 while the pods run on.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const std::vector<Json> later = Pods("llm");
  ASSERT_EQ(later.size(), 2u);
  for (const Json& pod : later) {
    EXPECT_TRUE(names.contains(pod["metadata"]["name"])) << pod["metadata"]["name"];
    EXPECT_EQ(ContainerStatus(pod, "vllm").value("restartCount", -1), 1) << pod.dump(1);
  }
  EXPECT_EQ(Get({"pdb", "llm"})["status"].value("disruptionsAllowed", -1), 1);
}

TEST_F(KubePlane, ThresholdMovesWithKwokRestartAndKillsOnlyTheContainerBelowIt) {
  const std::string missing = (dir_ / "no-such-stages.yaml").string();
  gpufit::Result<void> refused = plane_->StartKwok({missing});
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("no stage file " + missing));
  gpufit::Result<void> no_gpus = plane_->CreateKwokGpuNode("gpu-c", 0, kH100MemoryMib);
  ASSERT_FALSE(no_gpus);
  EXPECT_THAT(no_gpus.error().message, ::testing::HasSubstr("gpus and gpu_memory_mib must be > 0, got 0 and 81559"));
  EXPECT_FALSE(plane_->CreateKwokGpuNode("gpu-a", 4, kH100MemoryMib)) << "gpu-a exists";
  StartKwokWithOomBelow(40000);
  // Under default-scheduler: one container exactly at the threshold, one without a GPU.
  Apply(Deployment("mixed", 1, "default-scheduler", {{"worker", "40000"}, {"sidecar", std::nullopt}}));
  // The other controllers that kube-controller-manager runs: a StatefulSet's pod, a Job that
  // completes (KWOK's pod-complete stage ends its pod).
  Json embed = Deployment("embed", 1, "default-scheduler", {{"encoder", std::nullopt}});
  embed["kind"] = "StatefulSet";
  Apply(embed);
  Apply({{"apiVersion", "batch/v1"},
         {"kind", "Job"},
         {"metadata", {{"name", "eval"}, {"namespace", "default"}}},
         {"spec",
          {{"template",
            {{"spec",
              {{"restartPolicy", "Never"},
               {"containers", Json::array({{{"name", "eval"}, {"image", "python:3.12"}}})}}}}}}}});
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::vector<Json> pods = Pods("mixed");
        return pods.size() == 1 && Running(pods[0]);
      },
      30))
      << Get({"pods"}).dump(1);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Get({"job", "eval"})["status"].value("succeeded", 0) == 1;
      },
      20))
      << Get({"job", "eval"}).dump(1);
  std::vector<Json> embed_pods;
  ASSERT_TRUE(WaitFor(
      [&] {
        embed_pods = Pods("embed");
        return embed_pods.size() == 1 && Running(embed_pods[0]);
      },
      20))
      << Json(embed_pods).dump(1);
  EXPECT_EQ(embed_pods[0]["metadata"]["name"], "embed-0");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  std::vector<Json> pods = Pods("mixed");
  ASSERT_EQ(pods.size(), 1u);
  const std::string name = pods[0]["metadata"]["name"];
  EXPECT_EQ(ContainerStatus(pods[0], "worker").value("restartCount", -1), 0) << "40000 is not below 40000";

  // The threshold one MiB higher: the worker is below it now; the sidecar has no limit.
  const Clock::time_point restarted = Clock::now();
  StartKwokWithOomBelow(40001);
  ASSERT_TRUE(WaitFor(
      [&] {
        pods = Pods("mixed");
        return pods.size() == 1 && OomKilled(ContainerStatus(pods[0], "worker"));
      },
      20))
      << Json(pods).dump(1);
  std::cout << "KWOK restart to OOMKilled: " << SecondsSince(restarted) << " s\n";
  EXPECT_EQ(pods[0]["metadata"]["name"], name);  // the same pod: a restart, no rollout
  const Json worker = ContainerStatus(pods[0], "worker");
  EXPECT_EQ(worker.value("restartCount", -1), 1);
  EXPECT_EQ(worker.value("/lastState/terminated/exitCode"_json_pointer, -1), 137);
  const Json sidecar = ContainerStatus(pods[0], "sidecar");
  EXPECT_EQ(sidecar.value("restartCount", -1), 0) << sidecar.dump(1);
  EXPECT_FALSE(sidecar.contains("/lastState/terminated"_json_pointer)) << sidecar.dump(1);
  EXPECT_TRUE(sidecar.contains("/state/running"_json_pointer)) << sidecar.dump(1);
  EXPECT_TRUE(sidecar.value("ready", false));

  // A second KWOK restart on the same threshold plays the stage on the pod again: no second kill.
  StartKwokWithOomBelow(40001);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  pods = Pods("mixed");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(ContainerStatus(pods[0], "worker").value("restartCount", -1), 1) << pods[0].dump(1);
  EXPECT_EQ(ContainerStatus(pods[0], "sidecar").value("restartCount", -1), 0) << pods[0].dump(1);
}

}  // namespace

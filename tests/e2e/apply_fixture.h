// The fixture of the `gpufit apply` e2e tests (apply_e2e_test.cpp, apply_guard_e2e_test.cpp).
// Issue 42: `gpufit apply` on a real control plane (kube-apiserver, kube-controller-manager and
// kube-scheduler v1.37.2, KWOK nodes; tests/support/kube_control_plane.h). Three Deployments run
// on KWOK nodes; `gpufit plan --kubeconfig` plans them from three days of telemetry written for
// their live pods (HAMi memory caps: colocation held its backtest); `gpufit apply` shows the
// server's diff, applies a canary and the rest, watches the rollouts' pods, and reverts.
// What stands in for a GPU: a KWOK Stage (tests/support/kwok_stages.h) marks a container
// OOMKilled when its nvidia.com/gpumem limit is below a threshold the test sets, as a kubelet
// reports a container the GPU's memory cap killed; hami-scheduler is a second profile of the
// real kube-scheduler (HAMi's scheduler is kube-scheduler with an extender).
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli_run.h"
#include "kube_control_plane.h"
#include "kwok_stages.h"

namespace gpufit::e2e {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::KubeControlPlane;

// Peak GPU memory (MiB) of each Deployment's pods in the telemetry: web-c's is the smallest,
// so its cap is too, and a threshold between the caps OOM-kills web-c alone.
const std::map<std::string, double> kPeakMib = {{"web-a", 20000}, {"web-b", 30000}, {"web-c", 9000}};
const std::map<std::string, int> kReplicas = {{"web-a", 2}, {"web-b", 2}, {"web-c", 1}};

inline Json Deployment(const std::string& name, int replicas) {
  Json d = Json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "ml"},
    "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
      "template": {"spec": {"containers": [{"name": "srv",
        "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}}}]}}}})");
  d["metadata"]["name"] = name;
  d["spec"]["replicas"] = replicas;
  d["spec"]["selector"]["matchLabels"]["app"] = name;
  d["spec"]["template"]["metadata"]["labels"]["app"] = name;
  d["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/" + name + ":1";
  return d;
}

// A quantity of MiB as the API server spells it ("60330", "22k") in MiB.
inline long Mib(const Json& quantity) {
  const std::string q = quantity.is_string() ? quantity.get<std::string>() : "";
  if (q.empty()) return -1;
  return q.back() == 'k' ? std::stol(q.substr(0, q.size() - 1)) * 1000 : std::stol(q);
}

// The UTC weekday two days from now ("Mon".."Sun"): a window on it cannot hold during a test
// that ends within a day, whatever the day and hour it starts.
inline std::string DayAfterTomorrowUtc() {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const std::chrono::sys_days today = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  return kDays[std::chrono::weekday(today + std::chrono::days(2)).c_encoding()];
}

// `check()` true within `timeout_s` (polled every 200 ms).
inline bool Eventually(const std::function<bool()>& check, double timeout_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return check();
}

class ApplyE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Scratch("apply-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    auto plane = KubeControlPlane::Start((dir_ / "plane").string());
    ASSERT_TRUE(plane) << plane.error().message;
    plane_ = std::move(*plane);
    ASSERT_TRUE(Ok(plane_->StartControllerManager()));
    SetOomThreshold(0);
    ASSERT_TRUE(Ok(plane_->StartSchedulerProfiles({"default-scheduler", "hami-scheduler"})));
    ASSERT_TRUE(Ok(plane_->KubectlOk({"create", "namespace", "ml"})));
    // Kueue's CRDs (from its own release): the plan lends GPUs at night through a ClusterQueue.
    ASSERT_TRUE(Ok(plane_->KubectlOk({"apply", "--server-side", "-f", plane_->bin() + "/crds"})));
    ASSERT_TRUE(Eventually(
        [&] {
          return plane_->Kubectl({"wait", "--for", "condition=established", "--timeout", "30s", "crd", "--all"}).rc ==
                 0;
        },
        60));
    for (const char* node : {"gpu-0", "gpu-1"}) ASSERT_TRUE(Ok(plane_->CreateKwokGpuNode(node, 4, 81559)));
    for (const auto& [name, replicas] : kReplicas)
      ASSERT_TRUE(Ok(plane_->KubectlOk({"create", "-f", "-"}, Deployment(name, replicas).dump())));
    ASSERT_TRUE(Eventually([&] { return RunningPods().size() == 5; }, 60))
        << RunningPods().size() << " running of " << Pods()["items"].size() << " pods";
    for (const auto& [name, replicas] : kReplicas) original_[name] = Spec(name);
    WriteTelemetry(72);
  }
  void TearDown() override {
    plane_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  static ::testing::AssertionResult Ok(const Result<std::string>& r) {
    return r ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << r.error().message;
  }
  static ::testing::AssertionResult Ok(const Result<void>& r) {
    return r ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << r.error().message;
  }

  void SetOomThreshold(long mib) {
    const fs::path stage = dir_ / fmt::format("oom-{}.yaml", mib);
    std::ofstream(stage) << testing::KwokOomStage("nvidia.com/gpumem", mib);
    ASSERT_TRUE(Ok(plane_->StartKwok({stage.string()})));
  }

  Json Get(const std::vector<std::string>& args) {
    std::vector<std::string> a = {"get"};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), {"-o", "json"});
    Result<std::string> out = plane_->KubectlOk(a);
    return out ? Json::parse(*out) : Json();
  }
  Json Pods() { return Get({"pods", "-n", "ml"}); }
  std::vector<std::string> RunningPods() {
    std::vector<std::string> names;
    const Json pods = Pods();
    for (const Json& p : pods["items"])
      if (p["status"].value("phase", "") == "Running" && !p["metadata"].contains("deletionTimestamp"))
        names.push_back(p["metadata"]["name"]);
    return names;
  }
  // The Deployment's spec as the user sees it.
  Json Spec(const std::string& name) { return Get({"deployment", "-n", "ml", name})["spec"]; }
  Json Template(const std::string& name) { return Spec(name)["template"]["spec"]; }

  // Three days (or `hours`) of DCGM samples every 5 minutes for the live pods: memory around
  // each Deployment's peak with a daily swing of 500 MiB, duty 5-25 %.
  void WriteTelemetry(double hours) {
    std::string csv = "timestamp_s,pod,metric,value\n";
    const double t0 = 1764979200;  // 2025-12-06T00:00:00Z
    const std::vector<std::string> pods = RunningPods();
    for (int k = 0; k < static_cast<int>(hours * 12); ++k) {
      const double t = t0 + 300.0 * k;
      for (std::size_t i = 0; i < pods.size(); ++i) {
        const std::string deployment = pods[i].substr(0, 5);
        const double day = std::sin(2 * M_PI * std::fmod(t, 86400) / 86400 + static_cast<double>(i));
        csv +=
            fmt::format("{},ml/{},DCGM_FI_DEV_FB_USED,{:.0f}\n", t, pods[i], kPeakMib.at(deployment) - 500 + 500 * day);
        csv += fmt::format("{},ml/{},DCGM_FI_DEV_GPU_UTIL,{:.1f}\n", t, pods[i], 15 + 10 * day);
      }
    }
    std::ofstream(dir_ / fmt::format("telemetry-{:.0f}h.csv", hours)) << csv;
  }

  CliRun Plan(double hours, const std::string& name) {
    return Gpufit(fmt::format("plan --kubeconfig {} --telemetry {} --gpu h100-80gb --sharing hami --search-budget 0 "
                              "--emit-manifests {} --out {} -f json",
                              plane_->kubeconfig(), (dir_ / fmt::format("telemetry-{:.0f}h.csv", hours)).string(),
                              (dir_ / name / "k8s").string(), (dir_ / name / "out").string()),
                  dir_);
  }
  CliRun Apply(const std::string& name, const std::string& args) {
    return Gpufit(
        fmt::format("apply {} --manifests {} --kubeconfig {} {}", (dir_ / name / "out" / "plan.json").string(),
                    (dir_ / name / "k8s").string(), plane_->kubeconfig(), args),
        dir_);
  }
  // The cap the folder gives a Deployment, MiB.
  long Cap(const std::string& name, const std::string& plan = "plan") {
    std::ifstream in(dir_ / plan / "k8s" / fmt::format("workload-ml-deployment-{}.yaml", name));
    std::stringstream text;
    text << in.rdbuf();
    std::smatch m;
    const std::string s = text.str();
    if (!std::regex_search(s, m, std::regex(R"re(nvidia.com/gpumem: "([0-9]+)")re"))) return -1;
    return std::stol(m[1]);
  }
  std::string RunId(const std::string& stdout_text) {
    std::smatch m;
    return std::regex_search(stdout_text, m, std::regex(R"(run ([0-9a-z]+-[0-9a-z]{6}):)")) ? m[1].str() : "";
  }
  Json Record(const std::string& run) {
    const Json cm = Get({"configmap", "-n", "default", "gpufit-apply-" + run});
    return cm.contains("data") ? Json::parse(cm["data"]["run.json"].get<std::string>()) : Json();
  }

  fs::path dir_;
  std::unique_ptr<KubeControlPlane> plane_;
  std::map<std::string, Json> original_;
};

}  // namespace
}  // namespace gpufit::e2e

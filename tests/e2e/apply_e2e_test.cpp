// Issue 42: `gpufit apply` on a real control plane (kube-apiserver, kube-controller-manager and
// kube-scheduler v1.37.2, KWOK nodes; tests/support/kube_control_plane.h). Three Deployments run
// on KWOK nodes; `gpufit plan --kubeconfig` plans them from three days of telemetry written for
// their live pods (HAMi memory caps: colocation held its backtest); `gpufit apply` shows the
// server's diff, applies a canary and the rest, watches the rollouts' pods, and reverts.
// What stands in for a GPU: a KWOK Stage (tests/support/kwok_stages.h) marks a container
// OOMKilled when its nvidia.com/gpumem limit is below a threshold the test sets, as a kubelet
// reports a container the GPU's memory cap killed; hami-scheduler is a second profile of the
// real kube-scheduler (HAMi's scheduler is kube-scheduler with an extender).
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

Json Deployment(const std::string& name, int replicas) {
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
long Mib(const Json& quantity) {
  const std::string q = quantity.is_string() ? quantity.get<std::string>() : "";
  if (q.empty()) return -1;
  return q.back() == 'k' ? std::stol(q.substr(0, q.size() - 1)) * 1000 : std::stol(q);
}

// The UTC weekday two days from now ("Mon".."Sun"): a window on it cannot hold during a test
// that ends within a day, whatever the day and hour it starts.
std::string DayAfterTomorrowUtc() {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  const std::chrono::sys_days today = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  return kDays[std::chrono::weekday(today + std::chrono::days(2)).c_encoding()];
}

// `check()` true within `timeout_s` (polled every 200 ms).
bool Eventually(const std::function<bool()>& check, double timeout_s) {
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

TEST_F(ApplyE2e, DryRunCanaryOomRevertedAndRevertOfARun) {
  CliRun plan = Plan(72, "plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json doc = Json::parse(Slurp(dir_ / "plan" / "out" / "plan.json"));
  ASSERT_EQ(doc["backtest"]["status"]["colocation"]["status"], "held") << doc["backtest"]["status"].dump(1);
  const long cap_a = Cap("web-a"), cap_b = Cap("web-b"), cap_c = Cap("web-c");
  ASSERT_GT(cap_c, 0) << Slurp(dir_ / "plan" / "k8s" / "README.md");
  ASSERT_LT(cap_c, std::min(cap_a, cap_b));
  std::cout << "caps: web-a " << cap_a << ", web-b " << cap_b << ", web-c " << cap_c << " MiB\n";

  // 1. The dry run: the server's diff of each Deployment, nothing changed.
  CliRun dry = Apply("plan", "");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("Deployment ml/web-a (workload-ml-deployment-web-a.yaml, strategic patch):"));
  EXPECT_THAT(dry.out, HasSubstr("~ spec.template.spec.schedulerName: \"default-scheduler\" -> \"hami-scheduler\""));
  EXPECT_THAT(dry.out, HasSubstr("+ spec.template.spec.containers[srv].resources.limits.nvidia.com/gpumem: "));
  // Three Deployments, and night lending's two PriorityClasses and three Kueue objects.
  EXPECT_THAT(dry.out, HasSubstr("PriorityClass gpufit-night-lending (priorityclass-gpufit-night-lending.yaml, "
                                 "server-side apply, created):"));
  EXPECT_THAT(dry.out, HasSubstr("dry run: 8 of 8 changes would change the cluster"));
  EXPECT_EQ(plane_->Kubectl({"get", "priorityclass", "gpufit-night-lending"}).rc, 1);
  for (const auto& [name, spec] : original_) EXPECT_EQ(Spec(name), spec) << name;

  // 2. --yes with web-c's cap below the OOM threshold: the canary (web-a) holds its soak, the
  // second wave (web-b, web-c) rolls out, web-c's new pod is OOMKilled, the wave is reverted.
  SetOomThreshold((cap_c + std::min(cap_a, cap_b)) / 2);
  CliRun run = Apply("plan", "--yes --soak 15 --poll 0.5");
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  const std::string id = RunId(run.out);
  ASSERT_FALSE(id.empty()) << run.out;
  EXPECT_THAT(run.err, HasSubstr("wave 0 held its soak of 15 s"));
  EXPECT_THAT(run.err, HasSubstr("OOMKilled"));
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");
  EXPECT_EQ(Mib(Template("web-a")["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"]), cap_a);
  EXPECT_EQ(Spec("web-b")["template"], original_["web-b"]["template"]);
  EXPECT_EQ(Spec("web-c")["template"], original_["web-c"]["template"]);
  const Json record = Record(id);
  EXPECT_EQ(record["state"], "reverted") << record.dump(1);
  EXPECT_THAT(record["verdict"].get<std::string>(), HasSubstr("web-c"));
  // The time from the OOM kill (the container's finishedAt) to the end of the revert.
  std::smatch m;
  const std::string verdict = record["verdict"];
  ASSERT_TRUE(std::regex_search(verdict, m, std::regex(R"(reverted ([0-9.]+) s after the breach)"))) << verdict;
  std::cout << "OOM to revert: " << m[1] << " s\n";
  EXPECT_LT(std::stod(m[1]), 15.0);
  const std::string events = *plane_->KubectlOk({"get", "events", "-n", "ml", "-o", "json"});
  EXPECT_THAT(events, HasSubstr("GpufitReverted"));
  EXPECT_THAT(events, HasSubstr("GpufitApplied"));

  // 3. No OOM threshold: a second run applies everything; --revert of that run returns every
  // Deployment to the spec it had before gpufit touched it.
  SetOomThreshold(0);
  CliRun all = Apply("plan", "--yes --soak 5 --poll 0.5");
  ASSERT_EQ(all.exit_code, 0) << all.out << all.err;
  const std::string second = RunId(all.out);
  for (const std::string name : {"web-a", "web-b", "web-c"})
    EXPECT_EQ(Template(name)["schedulerName"], "hami-scheduler") << name;
  EXPECT_EQ(Record(second)["state"], "applied");
  CliRun undo = Gpufit(fmt::format("apply --revert {} --kubeconfig {}", second, plane_->kubeconfig()), dir_);
  ASSERT_EQ(undo.exit_code, 0) << undo.err;
  EXPECT_THAT(undo.out, HasSubstr("2 changes reverted"));  // web-b and web-c: the rest stood from the first run
  // web-a's cap and the lending objects came from the first run (the second found them): while it
  // stands, web-a is capped; the first run's --revert undoes its canary, then every spec is
  // the one it had before gpufit.
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);
  EXPECT_EQ(Spec("web-c"), original_["web-c"]);
  CliRun first = Gpufit(fmt::format("apply --revert {} --kubeconfig {}", id, plane_->kubeconfig()), dir_);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  // Its canary wave: web-a and the five lending objects it created (the second run found them).
  EXPECT_THAT(first.out, HasSubstr("6 changes reverted"));
  for (const auto& [name, spec] : original_) EXPECT_EQ(Spec(name), spec) << name;
  EXPECT_EQ(plane_->Kubectl({"get", "priorityclass", "gpufit-night-lending"}).rc, 1);
  EXPECT_EQ(plane_->Kubectl({"get", "clusterqueue", "gpufit-night"}).rc, 1);
  CliRun again = Gpufit(fmt::format("apply --revert {} --kubeconfig {}", id, plane_->kubeconfig()), dir_);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing to revert"));
}

// The kill switch stops a run in the middle of its canary wave's soak, leaving what it applied;
// a run inside a maintenance window (the control ConfigMap's) does nothing; a workload
// annotated gpufit.io/exclude is never changed.
TEST_F(ApplyE2e, KillSwitchWindowAndOptOut) {
  ASSERT_EQ(Plan(72, "plan").exit_code, 0);
  // The kill switch, set by the test while the canary soaks (a run of 60 s soak in the background).
  const fs::path log = dir_ / "killed";
  fs::create_directories(log);
  std::thread stopper([&] {
    Eventually([&] { return Template("web-a").value("schedulerName", "") == "hami-scheduler"; }, 60);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    (void)plane_->KubectlOk({"create", "configmap", "gpufit-control", "-n", "default", "--from-literal=stop=true"});
  });
  const auto started = std::chrono::steady_clock::now();
  CliRun killed = Gpufit(fmt::format("apply {} --manifests {} --kubeconfig {} --yes --soak 60 --poll 0.5",
                                     (dir_ / "plan" / "out" / "plan.json").string(), (dir_ / "plan" / "k8s").string(),
                                     plane_->kubeconfig()),
                         log);
  stopper.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(killed.exit_code, 4) << killed.out << killed.err;
  EXPECT_THAT(killed.out, HasSubstr("stopped (by the kill switch) during wave 0's soak"));
  EXPECT_LT(took, 50.0);                                            // well before the 60 s soak ended
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");  // the canary stays
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);                     // the second wave never began
  EXPECT_EQ(Record(RunId(killed.out))["state"], "stopped");
  // With the kill switch on, a new run does nothing.
  CliRun off = Apply("plan", "--yes --soak 1");
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_THAT(off.out, HasSubstr("nothing applied: the kill switch is on"));
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);

  // A maintenance window covering every day: nothing is done. The first window is a day's that
  // is neither today nor tomorrow (UTC), so the run cannot fall into it on any day or at any
  // hour, midnight included, and the message names the second (issue 50: a fixed 'Mon' failed
  // every Monday).
  ASSERT_TRUE(Ok(plane_->KubectlOk({"delete", "configmap", "gpufit-control", "-n", "default"})));
  const std::string windows = fmt::format("{} 00:00-24:00, * 00:00-24:00", DayAfterTomorrowUtc());
  ASSERT_TRUE(Ok(plane_->KubectlOk(
      {"create", "configmap", "gpufit-control", "-n", "default", "--from-literal=maintenance-windows=" + windows})));
  CliRun window = Apply("plan", "--yes --soak 1");
  EXPECT_EQ(window.exit_code, 0) << window.err;
  EXPECT_THAT(window.out, HasSubstr("is in the maintenance window '* 00:00-24:00' (UTC)")) << windows;
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);
  EXPECT_EQ(Spec("web-c"), original_["web-c"]);

  // Opt-out: web-b annotated; the window gone: web-c alone changes.
  ASSERT_TRUE(Ok(plane_->KubectlOk({"delete", "configmap", "gpufit-control", "-n", "default"})));
  ASSERT_TRUE(Ok(plane_->KubectlOk({"annotate", "deployment", "web-b", "-n", "ml", "gpufit.io/exclude=true"})));
  CliRun rest = Apply("plan", "--yes --soak 2 --poll 0.5");
  EXPECT_EQ(rest.exit_code, 0) << rest.out << rest.err;
  EXPECT_EQ(Template("web-b"), original_["web-b"]["template"]["spec"]);
  EXPECT_EQ(Template("web-c")["schedulerName"], "hami-scheduler");
  EXPECT_THAT(Record(RunId(rest.out))["skipped"].dump(), HasSubstr("opted out (gpufit.io/exclude"));
}

// Bad input: a plan of another cluster, a plan whose backtest did not hold, and an API server
// that refuses a patch of the second wave (a ValidatingAdmissionPolicy that lets the dry run
// through): that wave is reverted and the run exits 2.
TEST_F(ApplyE2e, AnotherClusterAPlanThatDidNotHoldAndARefusedPatch) {
  ASSERT_EQ(Plan(72, "plan").exit_code, 0);
  // Another cluster: the same plan with its namespace renamed, as if planned where ml is ml-prod.
  fs::create_directories(dir_ / "other" / "out");
  fs::copy(dir_ / "plan" / "k8s", dir_ / "other" / "k8s");
  std::string other = Slurp(dir_ / "plan" / "out" / "plan.json");
  other = std::regex_replace(other, std::regex("deployment/ml/"), "deployment/ml-prod/");
  std::ofstream(dir_ / "other" / "out" / "plan.json") << other;
  CliRun foreign = Apply("other", "");
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_THAT(foreign.err,
              HasSubstr("its workload deployment/ml-prod/web-a is not in the cluster at https://127.0.0.1:"));

  // Twelve hours of telemetry: the fit part is shorter than a day, the verdict provisional.
  WriteTelemetry(12);
  ASSERT_EQ(Plan(12, "short").exit_code, 0);
  CliRun provisional = Apply("short", "--yes");
  EXPECT_EQ(provisional.exit_code, 2);
  EXPECT_THAT(provisional.err, HasSubstr("the colocation strategy provisional its backtest"));
  EXPECT_THAT(provisional.err, HasSubstr("gpufit apply applies only strategies that held"));
  for (const auto& [name, spec] : original_) EXPECT_EQ(Spec(name), spec) << name;

  // A policy that refuses web-c's real update (request.dryRun lets its dry run pass).
  const std::string policy = R"(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: refuse-web-c}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "request.dryRun == true || object.metadata.name != 'web-c'"
    message: "web-c is frozen by the test"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: refuse-web-c}
spec:
  policyName: refuse-web-c
  validationActions: [Deny]
)";
  ASSERT_TRUE(Ok(plane_->KubectlOk({"apply", "-f", "-"}, policy)));
  // The policy takes a moment to load: wait until a real update of web-c is refused.
  ASSERT_TRUE(Eventually(
      [&] {
        return plane_->Kubectl({"annotate", "deployment", "web-c", "-n", "ml", "--overwrite", "probe=1"}).rc != 0;
      },
      30));
  const Json web_c = Spec("web-c");
  CliRun refused = Apply("plan", "--yes --soak 2 --poll 0.5");
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_THAT(refused.err,
              HasSubstr("workload-ml-deployment-web-c.yaml (Deployment ml/web-c): the API server refused it"));
  EXPECT_THAT(refused.err, HasSubstr("web-c is frozen by the test"));
  EXPECT_THAT(refused.err, HasSubstr("wave 1 reverted"));
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");  // the canary wave held and stays
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);                     // applied in wave 1, then reverted
  EXPECT_EQ(Spec("web-c"), web_c);
}

// Continuous mode: `gpufit controller --once --apply` plans from the live cluster and the
// telemetry, writes the plan and its manifests, and applies them with apply's waves and soak.
TEST_F(ApplyE2e, ControllerOnceAppliesItsOwnPlan) {
  const CliRun r =
      Gpufit(fmt::format("controller --once --apply --apply-soak 3 --kubeconfig {} --telemetry {} --gpu h100-80gb "
                         "--sharing hami --search-budget 0 --emit-manifests {} --out {}",
                         plane_->kubeconfig(), (dir_ / "telemetry-72h.csv").string(), (dir_ / "ctl" / "k8s").string(),
                         (dir_ / "ctl" / "out").string()),
             dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("apply: run "));
  EXPECT_THAT(r.err, HasSubstr("applied 8 changes in 2 wave(s)"));
  EXPECT_EQ(Mib(Template("web-b")["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"]), Cap("web-b", "ctl"));
  for (const std::string name : {"web-a", "web-b", "web-c"})
    EXPECT_EQ(Template(name)["schedulerName"], "hami-scheduler") << name;
  // Run again: the plan is the same, the cluster already has it: nothing to apply.
  const CliRun again =
      Gpufit(fmt::format("controller --once --apply --apply-soak 3 --kubeconfig {} --telemetry {} --gpu h100-80gb "
                         "--sharing hami --search-budget 0 --emit-manifests {} --out {}",
                         plane_->kubeconfig(), (dir_ / "telemetry-72h.csv").string(), (dir_ / "ctl" / "k8s").string(),
                         (dir_ / "ctl" / "out").string()),
             dir_);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("apply: nothing to apply: the cluster already has every change"));
}

// One run at a time (the lock ConfigMap): a second run while the first soaks does nothing and
// names the first. SIGTERM stops a run where the kill switch would: recorded "stopped", exit 4,
// the lock released, what was applied left as it is.
TEST_F(ApplyE2e, ASecondRunAtOnceAndSigterm) {
  ASSERT_EQ(Plan(72, "plan").exit_code, 0);
  const fs::path first_dir = dir_ / "first";
  fs::create_directories(first_dir);
  // The first run, in the background, under `timeout`: SIGTERM after 20 s, during its 60 s soak.
  const std::string command = fmt::format(
      "timeout --preserve-status -s TERM 20 {} apply {} --manifests {} --kubeconfig {} --yes --soak 60 "
      "--poll 0.5 > {} 2> {}",
      gpufit::test_paths::GpufitBin(), (dir_ / "plan" / "out" / "plan.json").string(), (dir_ / "plan" / "k8s").string(),
      plane_->kubeconfig(), (first_dir / "stdout").string(), (first_dir / "stderr").string());
  int status = -1;
  std::thread first([&] { status = std::system(command.c_str()); });
  ASSERT_TRUE(Eventually([&] { return Template("web-a").value("schedulerName", "") == "hami-scheduler"; }, 30));
  const CliRun second = Apply("plan", "--yes --soak 2");
  first.join();
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("nothing applied: another run ("));
  EXPECT_THAT(second.out, HasSubstr("is in progress: ConfigMap default/gpufit-apply-lock renewed"));
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);  // the second run changed nothing
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4) << Slurp(first_dir / "stderr");
  const std::string out = Slurp(first_dir / "stdout");
  EXPECT_THAT(out, HasSubstr("stopped (on SIGTERM) during wave 0's soak"));
  EXPECT_EQ(Record(RunId(out))["state"], "stopped");
  EXPECT_EQ(plane_->Kubectl({"get", "configmap", "gpufit-apply-lock", "-n", "default"}).rc, 1);  // released
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");                               // the canary stays
}

}  // namespace
}  // namespace gpufit::e2e

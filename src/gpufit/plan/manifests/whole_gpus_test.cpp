// Issue 18, point 2: a pod on several GPUs keeps them whole in the manifests too: its workload
// patch keeps it off nodes whose "GPUs" are shares of one device. Expected YAML by hand from
// plan/manifests/whole_gpus.cpp's rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "gpufit/plan/kube_manifests.h"
#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit::manifests {
namespace {

using ::testing::HasSubstr;

// Deployment a (two replicas of one GPU, 20000 MiB at 20 %) and StatefulSet t, whose pod
// t-0 asks for nvidia.com/gpu: 2 (one series in the telemetry, as a long CSV gives it).
Telemetry Telemetry3() {
  Telemetry t;
  t.step_s = 60;
  t.samples = 10;
  for (const char* name : {"ml/a-5d8f7-x1", "ml/a-5d8f7-x2", "ml/t-0"}) {
    PodSeries p;
    p.pod = name;
    p.fb_used_mib.assign(10, 20000);
    p.gpu_util_pct.assign(10, 20);
    p.first = 0;
    p.last = 9;
    t.pods.push_back(p);
  }
  return t;
}

std::vector<KubePod> Pods() {
  std::vector<KubePod> pods;
  auto add = [&](const std::string& name, WorkloadRef owner, int gpus) {
    KubePod p;
    p.namespace_name = "ml";
    p.name = name;
    p.owner = std::move(owner);
    KubeContainer c;
    c.name = "main";
    c.resources.devices[kGpuResource] = gpus;
    p.containers = {c};
    pods.push_back(p);
  };
  add("a-5d8f7-x1", {"Deployment", "a"}, 1);
  add("a-5d8f7-x2", {"Deployment", "a"}, 1);
  add("t-0", {"StatefulSet", "t"}, 2);
  return pods;
}

Plan PlanFor(const std::string& sharing) {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.sharing = sharing;
  o.replicas_apart = false;  // a's replicas share a GPU here; replicas apart has tests of its own
  o.memory_caps = sharing == "hami";
  const Telemetry t = Telemetry3();
  for (const PodSeries& p : t.pods) {
    o.workload_by_pod[p.pod] = WorkloadKeyOf(p.pod, Pods());
    o.spec_devices[p.pod] = FindKubePod(Pods(), p.pod)->GpuDevices();
  }
  Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  EXPECT_TRUE(plan) << plan.error().message;
  return *plan;
}

YAML::Node Workload(const Manifests& m, const std::string& name) {
  for (const ManifestFile& f : m.files)
    if (f.name == name) return YAML::Load(f.yaml);
  ADD_FAILURE() << "no file " << name;
  return {};
}

TEST(WholeGpus, TimeSlicingKeepsTheTwoGpuPodOffSharedNodes) {
  const Plan plan = PlanFor("time-slicing");
  ASSERT_EQ(plan.replay.gpus.size(), 1u);  // a's two replicas share one GPU; t-0 is not packed
  EXPECT_EQ(plan.replay.gpus[0].pods.size(), 2u);
  const std::vector<KubePod> pods = Pods();
  const Result<Manifests> m = BuildManifests({.colocation = &plan, .pods = &pods, .sharing = "time-slicing"});
  ASSERT_TRUE(m) << m.error().message;
  const YAML::Node t = Workload(*m, "workload-ml-statefulset-t.yaml");
  const YAML::Node terms = t["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);  // one term: its expressions must all hold
  const YAML::Node e = terms[0]["matchExpressions"];
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]["key"].as<std::string>(), "nvidia.com/gpu.sharing-strategy");
  EXPECT_EQ(e[0]["operator"].as<std::string>(), "NotIn");
  EXPECT_EQ(e[0]["values"][0].as<std::string>(), "time-slicing");
  EXPECT_EQ(e[0]["values"][1].as<std::string>(), "mps");
  EXPECT_EQ(e[1]["key"].as<std::string>(), "nvidia.com/device-plugin.config");
  EXPECT_EQ(e[1]["values"][0].as<std::string>(), "gpufit-time-slicing");
  // Its GPU request is left as it is (2 whole GPUs): no container patched.
  EXPECT_FALSE(t["spec"]["template"]["spec"]["containers"]);
}

TEST(WholeGpus, HamiAsksForEachGpuExclusively) {
  const Plan plan = PlanFor("hami");
  const std::vector<KubePod> pods = Pods();
  const Result<Manifests> m = BuildManifests({.colocation = &plan, .pods = &pods, .sharing = "hami"});
  ASSERT_TRUE(m) << m.error().message;
  const YAML::Node c = Workload(*m, "workload-ml-statefulset-t.yaml")["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["name"].as<std::string>(), "main");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpucores"].as<std::string>(), "100");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpumem-percentage"].as<std::string>(), "100");
  EXPECT_FALSE(c["resources"]["limits"]["nvidia.com/gpumem"]);
}

// Case: the exclusive patch left a gpumem the pod already asked for. HAMi takes an absolute
// nvidia.com/gpumem over the percentage, so the pod stayed capped at 20000 MiB; the patch
// must delete it (null in a strategic merge patch).
TEST(WholeGpus, HamiExclusivePatchDeletesAGpumemThePodAlreadyHas) {
  const Plan plan = PlanFor("hami");
  std::vector<KubePod> pods = Pods();
  for (KubePod& p : pods)
    if (p.name == "t-0") p.containers[0].resources.devices["nvidia.com/gpumem"] = 20000;
  const Result<Manifests> m = BuildManifests({.colocation = &plan, .pods = &pods, .sharing = "hami"});
  ASSERT_TRUE(m) << m.error().message;
  const YAML::Node r =
      Workload(*m, "workload-ml-statefulset-t.yaml")["spec"]["template"]["spec"]["containers"][0]["resources"];
  EXPECT_EQ(r["limits"]["nvidia.com/gpumem-percentage"].as<std::string>(), "100");
  ASSERT_TRUE(r["limits"]["nvidia.com/gpumem"].IsDefined());
  EXPECT_TRUE(r["limits"]["nvidia.com/gpumem"].IsNull());
  EXPECT_TRUE(r["requests"]["nvidia.com/gpumem"].IsNull());
}

TEST(RequireNode, ExpressionsOfSeveralEmittersGoIntoOneTerm) {
  Patch p;
  Builder::RequireNode(p, "k1", "NotIn", {"x"});
  Builder::RequireNode(p, "k2", "DoesNotExist", {});
  const YAML::Node terms = p.yaml["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                                 ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 1u);
  ASSERT_EQ(terms[0]["matchExpressions"].size(), 2u);
  EXPECT_EQ(terms[0]["matchExpressions"][1]["key"].as<std::string>(), "k2");
  EXPECT_FALSE(terms[0]["matchExpressions"][1]["values"]);
}

}  // namespace
}  // namespace gpufit::manifests

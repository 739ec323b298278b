// The sharing back ends that cap memory write the plan's caps, and the check catches a cap
// that differs from the plan's. Expected values by hand from the fixture below.
#include "gpufit/plan/manifests/caps.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "gpufit/plan/manifests/four_pods_test_fixture.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit::manifests {
namespace {

using ::testing::HasSubstr;

// FourPods on an H100 80GB (81559 MiB): a-x1, a-x2 are Deployment a, solo a bare pod.
// Caps (headroom 0.10, no learned margin: constant series never surprise): 22000 for a's
// replicas and solo, 77000 for c-0. Packed by caps: {a-x1, a-x2, solo} (66000 MiB) and
// {c-0}.
using gpufit::testing::FourPods;

std::vector<KubePod> Pods() {
  std::vector<KubePod> pods;
  auto add = [&](const std::string& name, WorkloadRef owner, const std::string& container) {
    KubePod p;
    p.namespace_name = "ml";
    p.name = name;
    p.owner = std::move(owner);
    KubeContainer c;
    c.name = container;
    c.resources.devices[kGpuResource] = 1;
    p.containers = {c};
    pods.push_back(p);
  };
  add("a-5d8f7-x1", {"Deployment", "a"}, "server");
  add("a-5d8f7-x2", {"Deployment", "a"}, "server");
  add("c-0", {"StatefulSet", "c"}, "trainer");
  add("solo", {"Pod", "solo"}, "main");
  return pods;
}

Plan CappedPlan() {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.memory_caps = true;
  const Telemetry t = FourPods();
  o.replicas_apart = false;  // a's replicas share a GPU here; replicas apart has tests of its own
  for (const PodSeries& p : t.pods) o.workload_by_pod[p.pod] = WorkloadKeyOf(p.pod, Pods());
  Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  EXPECT_TRUE(plan) << plan.error().message;
  return *plan;
}

Plan UncappedPlan() {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  Result<Plan> plan = BuildPlan(FourPods(), GpuCatalog::Embedded(), o, "test");
  EXPECT_TRUE(plan) << plan.error().message;
  return *plan;
}

Manifests Emit(const Plan& plan, const std::vector<KubePod>& pods, const std::string& sharing,
               bool compute_caps = false) {
  Result<Manifests> m =
      BuildManifests({.colocation = &plan, .pods = &pods, .sharing = sharing, .compute_caps = compute_caps});
  EXPECT_TRUE(m) << m.error().message;
  return m ? *m : Manifests{};
}

const ManifestFile* Find(const Manifests& m, const std::string& name) {
  for (const ManifestFile& f : m.files)
    if (f.name == name) return &f;
  return nullptr;
}

// --compute-caps: each workload at its pods' p99 duty x (1 + headroom), never below the p99.
TEST(MemoryCaps, HamiComputeCapsOnlyWhenAskedAndAboveTheP99) {
  const Plan plan = CappedPlan();
  const std::vector<KubePod> pods = Pods();
  const Manifests m = Emit(plan, pods, "hami", true);
  const ManifestFile* a = Find(m, "workload-ml-deployment-a.yaml");
  ASSERT_NE(a, nullptr);
  const YAML::Node limits = YAML::Load(a->yaml)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  // FourPods' a replicas run at p99 duty 20: ceil(20 x 1.10) = 22.
  ASSERT_TRUE(limits["nvidia.com/gpucores"]);
  EXPECT_EQ(limits["nvidia.com/gpucores"].as<std::string>(), "22");
  EXPECT_GE(limits["nvidia.com/gpucores"].as<double>(), plan.profiles[0].gpu_util_pct.p99);
}

TEST(MemoryCaps, PlanPacksByCapsAndKeysCapsByWorkload) {
  const Plan plan = CappedPlan();
  EXPECT_EQ(plan.memory_cap_mib, (std::vector<double>{22000, 22000, 77000, 22000}));
  ASSERT_EQ(plan.replay.gpus.size(), 2U);
  EXPECT_EQ(plan.replay.gpus[0].pods, (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_EQ(plan.replay.gpus[1].pods, (std::vector<std::size_t>{2}));
}

TEST(MemoryCaps, HamiWritesGpumemAndCoresAndTheCheckCatchesARaisedCap) {
  const Plan plan = CappedPlan();
  const std::vector<KubePod> pods = Pods();
  Manifests m = Emit(plan, pods, "hami");
  const ManifestFile* a = Find(m, "workload-ml-deployment-a.yaml");
  ASSERT_NE(a, nullptr);
  const YAML::Node spec = YAML::Load(a->yaml)["spec"]["template"]["spec"];
  EXPECT_EQ(spec["schedulerName"].as<std::string>(), "hami-scheduler");
  const YAML::Node limits = spec["containers"][0]["resources"]["limits"];
  EXPECT_EQ(spec["containers"][0]["name"].as<std::string>(), "server");
  EXPECT_EQ(limits["nvidia.com/gpu"].as<std::string>(), "1");
  EXPECT_EQ(limits["nvidia.com/gpumem"].as<std::string>(), "22000");  // ceil(20000 x 1.1)
  // Compute is not capped unless asked: a hard cap binds even while the neighbours idle.
  EXPECT_FALSE(limits["nvidia.com/gpucores"]);
  EXPECT_THAT(m.notes, ::testing::Contains(HasSubstr("hami: compute is not capped")));
  const Result<CapCheck> ok = CheckMemoryCaps(plan, **FindSharingBackend("hami"), pods, m.files);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->capped_pods, 2U);         // a's two replicas
  EXPECT_EQ(ok->uncapped_pods, 1U);       // solo: a bare pod, no patch
  EXPECT_EQ(ok->largest_sum_mib, 77000);  // c-0 alone; the shared GPU holds 3 x 22000 = 66000

  for (ManifestFile& f : m.files)
    if (f.name == a->name) f.yaml.replace(f.yaml.find("22000"), 5, "40000");
  const Result<CapCheck> raised = CheckMemoryCaps(plan, **FindSharingBackend("hami"), pods, m.files);
  ASSERT_FALSE(raised);
  EXPECT_THAT(raised.error().message, HasSubstr("cap of 40000 MiB, the plan's is 22000 MiB"));
}

TEST(MemoryCaps, TheCheckCatchesCapsThatOverfillAGpu) {
  Plan plan = CappedPlan();
  const std::vector<KubePod> pods = Pods();
  const Manifests m = Emit(plan, pods, "hami");
  plan.memory_cap_mib[3] = 50000;  // solo, unpatched: 22000 + 22000 + 50000 > 81559
  const Result<CapCheck> over = CheckMemoryCaps(plan, **FindSharingBackend("hami"), pods, m.files);
  ASSERT_FALSE(over);
  EXPECT_THAT(over.error().message, HasSubstr("add up to 94000 MiB, over its 81559 MiB"));
}

TEST(MemoryCaps, KaiAnnotatesGpuMemoryAndDropsTheWholeGpu) {
  const Plan plan = CappedPlan();
  const std::vector<KubePod> pods = Pods();
  Result<Manifests> m = BuildManifests({.colocation = &plan, .pods = &pods, .sharing = "kai", .kai_queue = "team-a"});
  ASSERT_TRUE(m) << m.error().message;
  const ManifestFile* a = Find(*m, "workload-ml-deployment-a.yaml");
  ASSERT_NE(a, nullptr);
  const YAML::Node tpl = YAML::Load(a->yaml)["spec"]["template"];
  EXPECT_EQ(tpl["metadata"]["annotations"]["gpu-memory"].as<std::string>(), "22000");
  EXPECT_EQ(tpl["metadata"]["labels"]["kai.scheduler/queue"].as<std::string>(), "team-a");
  EXPECT_EQ(tpl["spec"]["schedulerName"].as<std::string>(), "kai-scheduler");
  EXPECT_TRUE(tpl["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].IsNull());
  EXPECT_TRUE(CheckMemoryCaps(plan, **FindSharingBackend("kai"), pods, m->files));
}

TEST(MemoryCaps, DraMpsSharesOneClaimPerPlannedGpu) {
  const Plan plan = CappedPlan();
  const std::vector<KubePod> pods = Pods();
  const Manifests m = Emit(plan, pods, "dra-mps");
  const ManifestFile* claim = Find(m, "resourceclaim-ml-gpufit-gpu-0.yaml");
  ASSERT_NE(claim, nullptr);
  const YAML::Node c = YAML::Load(claim->yaml);
  EXPECT_EQ(c["apiVersion"].as<std::string>(), "resource.k8s.io/v1");
  EXPECT_EQ(c["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"].as<std::string>(), "gpu.nvidia.com");
  const YAML::Node params = c["spec"]["devices"]["config"][0]["opaque"]["parameters"];
  EXPECT_EQ(params["kind"].as<std::string>(), "GpuConfig");
  EXPECT_EQ(params["sharing"]["strategy"].as<std::string>(), "MPS");
  EXPECT_EQ(params["sharing"]["mpsConfig"]["defaultPinnedDeviceMemoryLimit"].as<std::string>(), "22000Mi");
  EXPECT_EQ(params["sharing"]["mpsConfig"]["defaultActiveThreadPercentage"].as<int>(), 100);
  const YAML::Node spec = YAML::Load(Find(m, "workload-ml-deployment-a.yaml")->yaml)["spec"]["template"]["spec"];
  EXPECT_EQ(spec["resourceClaims"][0]["resourceClaimName"].as<std::string>(), "gpufit-gpu-0");
  EXPECT_EQ(spec["containers"][0]["resources"]["claims"][0]["name"].as<std::string>(), "gpufit-gpu");
  EXPECT_EQ(spec["containers"][0]["env"][0]["value"].as<std::string>(), "0=22000M");
  EXPECT_TRUE(CheckMemoryCaps(plan, **FindSharingBackend("dra-mps"), pods, m.files));
}

TEST(MemoryCaps, TimeSlicingRenamesTheSharedResourceAndSaysNothingCapsMemory) {
  const Plan plan = UncappedPlan();
  const std::vector<KubePod> pods = Pods();
  const Manifests m = Emit(plan, pods, "time-slicing");
  const YAML::Node cm = YAML::Load(Find(m, "configmap-gpu-operator-gpufit-device-plugin-config.yaml")->yaml);
  const YAML::Node ts = YAML::Load(cm["data"]["gpufit-time-slicing"].as<std::string>())["sharing"]["timeSlicing"];
  EXPECT_TRUE(ts["renameByDefault"].as<bool>());
  EXPECT_TRUE(ts["failRequestsGreaterThanOne"].as<bool>());
  const YAML::Node limits = YAML::Load(Find(m, "workload-ml-deployment-a.yaml")
                                           ->yaml)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu.shared"].as<std::string>(), "1");
  EXPECT_TRUE(limits["nvidia.com/gpu"].IsNull());
  bool said = false;
  for (const std::string& n : m.notes) said |= n.find("enforces NO memory limit") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(MemoryCaps, CappedBackEndsRefuseAPlanWithoutCaps) {
  const Plan plan = UncappedPlan();
  const std::vector<KubePod> pods = Pods();
  const Result<Manifests> m = BuildManifests({.colocation = &plan, .pods = &pods, .sharing = "hami"});
  ASSERT_FALSE(m);
  EXPECT_THAT(m.error().message, HasSubstr("no memory caps"));
  EXPECT_FALSE(BuildManifests({.colocation = &plan, .pods = &pods, .sharing = "gpushare"}));
}

// dra-mps packs a workload's pods together: Deployments a and b of two pods at 30000 MiB
// (caps 33000) and c, one pod at 10000 (cap 11000). Two of a's or b's caps fit a GPU
// (66000), three do not (99000 > 81559): whole workloads give {a, a, c}, {b, b} or
// {a, a}, {b, b, c}: every workload on one GPU, so each names one claim.
TEST(MemoryCaps, DraMpsKeepsEachWorkloadOnOneGpu) {
  Telemetry t;
  t.step_s = 60;
  t.samples = 10;
  std::vector<KubePod> pods;
  auto pod = [&](const std::string& name, const std::string& owner, float mib) {
    PodSeries p;
    p.pod = "ml/" + name;
    p.fb_used_mib.assign(10, mib);
    p.gpu_util_pct.assign(10, 10);
    p.last = 9;
    t.pods.push_back(p);
    KubePod k;
    k.namespace_name = "ml";
    k.name = name;
    k.owner = {"StatefulSet", owner};
    KubeContainer c;
    c.name = "main";
    c.resources.devices[kGpuResource] = 1;
    k.containers = {c};
    pods.push_back(k);
  };
  pod("a-0", "a", 30000);
  pod("b-0", "b", 30000);
  pod("a-1", "a", 30000);
  pod("b-1", "b", 30000);
  pod("c-0", "c", 10000);
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.memory_caps = true;
  o.whole_workloads = true;
  for (const PodSeries& p : t.pods) o.workload_by_pod[p.pod] = WorkloadKeyOf(p.pod, pods);
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->replay.gpus.size(), 2U);
  for (const GpuReplay& g : plan->replay.gpus) {
    std::set<char> workloads;
    for (std::size_t p : g.pods) workloads.insert(plan->pod_names[p][3]);  // "ml/<w>-i"
    const auto count = [&](char w) {
      return std::count_if(g.pods.begin(), g.pods.end(), [&](std::size_t p) { return plan->pod_names[p][3] == w; });
    };
    for (char w : {'a', 'b'}) EXPECT_TRUE(count(w) == 0 || count(w) == 2) << "workload " << w << " split";
  }
  const Manifests m = Emit(*plan, pods, "dra-mps");
  for (const char* w : {"a", "b", "c"})
    EXPECT_NE(Find(m, fmt::format("workload-ml-statefulset-{}.yaml", w)), nullptr) << w;
  const Result<CapCheck> check = CheckMemoryCaps(*plan, **FindSharingBackend("dra-mps"), pods, m.files);
  ASSERT_TRUE(check) << check.error().message;
  EXPECT_EQ(check->capped_pods, 5U);
  EXPECT_EQ(check->uncapped_pods, 0U);
}

}  // namespace
}  // namespace gpufit::manifests

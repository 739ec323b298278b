#include "gpufit/plan/kube_manifests.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/plan/manifests/four_pods_test_fixture.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

// Four pods, ten one-minute samples, constant use. On an H100 80GB (81559 MiB) the
// smallest packing is {a-1, a-2, solo} (3 x 20000 MiB, duty 3 x 20 %) and {c-0} (70000 MiB
// fits with nothing else): two GPUs, one of them shared by three pods.
using gpufit::testing::FourPods;

KubeContainer GpuContainer(const std::string& name) {
  KubeContainer c;
  c.name = name;
  c.resources.devices[kGpuResource] = 1;
  return c;
}

std::vector<KubePod> Pods() {
  std::vector<KubePod> pods;
  auto add = [&](const std::string& name, WorkloadRef owner, std::vector<KubeContainer> containers) {
    KubePod p;
    p.namespace_name = "ml";
    p.name = name;
    p.owner = std::move(owner);
    p.containers = std::move(containers);
    pods.push_back(p);
  };
  KubeContainer proxy;
  proxy.name = "istio-proxy";
  add("a-5d8f7-x1", {"Deployment", "a"}, {GpuContainer("server"), proxy});
  add("a-5d8f7-x2", {"Deployment", "a"}, {GpuContainer("server"), proxy});
  add("c-0", {"StatefulSet", "c"}, {GpuContainer("trainer")});
  add("solo", {"Pod", "solo"}, {GpuContainer("main")});
  return pods;
}

std::vector<KubeNode> Nodes() {
  std::vector<KubeNode> nodes(3);
  nodes[0].name = "cpu-0";
  nodes[1].name = "gpu-a100-0";
  nodes[1].gpu_count = 8;
  nodes[1].gpu_product = "NVIDIA-A100-SXM4-80GB";
  nodes[2].name = "gpu-h100-0";
  nodes[2].gpu_count = 8;
  nodes[2].gpu_product = "NVIDIA-H100-80GB-HBM3";
  return nodes;
}

Plan MakePlan(bool mig) {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.current_gpu = "a100-80gb";
  o.mig_isolation = mig;
  Result<Plan> plan = BuildPlan(FourPods(), GpuCatalog::Embedded(), o, "test");
  EXPECT_TRUE(plan) << plan.error().message;
  return *plan;
}

const ManifestFile& File(const Manifests& m, const std::string& name) {
  for (const ManifestFile& f : m.files)
    if (f.name == name) return f;
  ADD_FAILURE() << "no file " << name;
  return m.files.front();
}

void ExpectObjects(const Manifests& m) {
  for (const ManifestFile& f : m.files) {
    const YAML::Node n = YAML::Load(f.yaml);
    EXPECT_TRUE(n["apiVersion"].IsScalar()) << f.name;
    EXPECT_TRUE(n["kind"].IsScalar()) << f.name;
    EXPECT_TRUE(n["metadata"]["name"].IsScalar()) << f.name;
  }
}

TEST(BuildManifests, TimeSlicingForTheSharedGpu) {
  const Plan plan = MakePlan(false);
  ASSERT_EQ(plan.replay.gpus.size(), 2u);
  const std::vector<KubePod> pods = Pods();
  const std::vector<KubeNode> nodes = Nodes();
  const Result<Manifests> m =
      BuildManifests({.colocation = &plan, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  ExpectObjects(*m);
  std::vector<std::string> names;
  for (const ManifestFile& f : m->files) names.push_back(f.name);
  EXPECT_THAT(names, ::testing::ElementsAre("clusterpolicy-cluster-policy.yaml",
                                            "configmap-gpu-operator-gpufit-device-plugin-config.yaml",
                                            "node-gpu-h100-0.yaml", "workload-ml-deployment-a.yaml"));

  const YAML::Node config_map = YAML::Load(File(*m, "configmap-gpu-operator-gpufit-device-plugin-config.yaml").yaml);
  EXPECT_EQ(config_map["metadata"]["namespace"].as<std::string>(), "gpu-operator");
  const YAML::Node plugin = YAML::Load(config_map["data"]["gpufit-time-slicing"].as<std::string>());
  EXPECT_EQ(plugin["version"].as<std::string>(), "v1");
  EXPECT_EQ(plugin["sharing"]["timeSlicing"]["resources"][0]["name"].as<std::string>(), "nvidia.com/gpu");
  EXPECT_EQ(plugin["sharing"]["timeSlicing"]["resources"][0]["replicas"].as<int>(), 3);

  const YAML::Node node = YAML::Load(File(*m, "node-gpu-h100-0.yaml").yaml);
  EXPECT_EQ(node["kind"].as<std::string>(), "Node");
  EXPECT_EQ(node["metadata"]["labels"]["nvidia.com/device-plugin.config"].as<std::string>(), "gpufit-time-slicing");

  const YAML::Node deployment = YAML::Load(File(*m, "workload-ml-deployment-a.yaml").yaml);
  EXPECT_EQ(deployment["apiVersion"].as<std::string>(), "apps/v1");
  EXPECT_EQ(deployment["metadata"]["namespace"].as<std::string>(), "ml");
  const YAML::Node selector = deployment["spec"]["template"]["spec"]["nodeSelector"];
  EXPECT_EQ(selector["nvidia.com/device-plugin.config"].as<std::string>(), "gpufit-time-slicing");
  EXPECT_EQ(selector["nvidia.com/gpu.product"].as<std::string>(), "NVIDIA-H100-80GB-HBM3");

  // The bare pod cannot be patched; c-0 keeps its GPU alone: no patch.
  ASSERT_EQ(m->notes.size(), 3u);
  EXPECT_THAT(m->notes[0], HasSubstr("pod ml/solo: no controller owns it; recreate it with the change"));
  EXPECT_THAT(m->notes[1], HasSubstr("the scheduler, not gpufit, picks which pods share each GPU"));
  // The pods run on A100 80GB today and serve (latency-bound: no slower model). By hand, the
  // same two groups (60000 and 70000 MiB) on A100s cost 2 x 3.4309 x 730 = 5009 USD a month;
  // one H200 for both costs 7.912 x 730 = 5776, more. The same-model plan: 2 x 6.88 x 730 = 10045.
  EXPECT_EQ(m->notes[2],
            "these files carry out the same-model plan on h100-80gb (2 GPUs, 10045 USD per month), not the "
            "recommended mixed fleet (2 x a100-80gb; 5009 USD per month; each pod's model in plan.json fleet.pods), "
            "which needs nodes of those models and is not emitted");
  EXPECT_THAT(File(*m, "workload-ml-deployment-a.yaml").why,
              HasSubstr("2 of its pods share a GPU in the plan (ml/a-5d8f7-x1, ml/a-5d8f7-x2); the largest summed "
                        "peak of those GPUs is 60000 of 81559 MiB"));
  const std::string readme = ManifestsReadme(*m, {{"svc-hpa.yaml", "HPA"}});
  EXPECT_THAT(readme, HasSubstr("| `node-gpu-h100-0.yaml` | node gpu-h100-0: label "
                                "nvidia.com/device-plugin.config=gpufit-time-slicing |"));
  EXPECT_THAT(readme, HasSubstr("`kubectl patch node gpu-h100-0 --type strategic --patch-file node-gpu-h100-0.yaml`"));
  EXPECT_THAT(readme, HasSubstr("`kubectl apply -f svc-hpa.yaml`"));
}

TEST(BuildManifests, MigIsolationReplacesTheGpuResource) {
  const Plan plan = MakePlan(true);
  ASSERT_TRUE(plan.mig);
  const std::vector<KubePod> pods = Pods();
  const std::vector<KubeNode> nodes = Nodes();
  const Result<Manifests> m =
      BuildManifests({.colocation = &plan, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  ExpectObjects(*m);

  // Each replica of Deployment a needs 22000 MiB (20000 x 1.1): the MIG resource must hold that.
  const MigGpu& h100 = **MigCatalog::Embedded().Find("h100-80gb");
  const YAML::Node deployment = YAML::Load(File(*m, "workload-ml-deployment-a.yaml").yaml);
  const YAML::Node container = deployment["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["name"].as<std::string>(), "server");
  EXPECT_TRUE(container["resources"]["limits"]["nvidia.com/gpu"].IsNull());
  std::string resource;
  for (const auto& kv : container["resources"]["limits"])
    if (kv.first.as<std::string>() != "nvidia.com/gpu") resource = kv.first.as<std::string>();
  ASSERT_EQ(resource.rfind("nvidia.com/mig-", 0), 0u) << resource;
  EXPECT_EQ(container["resources"]["limits"][resource].as<int>(), 1);
  EXPECT_EQ(container["resources"]["requests"][resource].as<int>(), 1);
  const MigProfile& profile = **h100.Profile(resource.substr(std::string("nvidia.com/mig-").size()));
  EXPECT_GE(profile.memory.value, 22000);
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["containers"].size(), 1u);  // not the sidecar

  // StatefulSet c (77000 MiB needed) gets the whole-GPU profile 7g.80gb.
  const YAML::Node statefulset = YAML::Load(File(*m, "workload-ml-statefulset-c.yaml").yaml);
  EXPECT_EQ(statefulset["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-7g.80gb"]
                .as<int>(),
            1);

  // The node's mig-parted config holds exactly the plan's instances, one entry per layout.
  const YAML::Node node = YAML::Load(File(*m, "node-gpu-h100-0.yaml").yaml);
  EXPECT_EQ(node["metadata"]["labels"]["nvidia.com/mig.config"].as<std::string>(), "gpufit-gpu-h100-0");
  const YAML::Node cm = YAML::Load(File(*m, "configmap-gpu-operator-gpufit-mig-parted-config.yaml").yaml);
  const YAML::Node parted = YAML::Load(cm["data"]["config.yaml"].as<std::string>());
  EXPECT_EQ(parted["version"].as<std::string>(), "v1");
  int instances = 0, devices = 0;
  for (const auto& e : parted["mig-configs"]["gpufit-gpu-h100-0"]) {
    const int n = static_cast<int>(e["devices"].size());
    devices += n;
    if (!e["mig-enabled"].as<bool>()) continue;
    // mig-parted creates the mig-devices on each listed GPU.
    for (const auto& kv : e["mig-devices"]) instances += n * kv.second.as<int>();
  }
  EXPECT_EQ(devices, 8);  // every GPU of the node, the unused ones with MIG off
  int planned = 0;
  for (const MigGpuPlan& g : plan.mig->gpu_plans) planned += static_cast<int>(g.instances.size());
  EXPECT_EQ(instances, planned);
  EXPECT_GE(planned, 4);
}

TEST(BuildManifests, WithoutClusterFilesSaysWhatIsMissing) {
  const Plan plan = MakePlan(false);
  const Result<Manifests> m =
      BuildManifests({.colocation = &plan, .training = nullptr, .nodes = nullptr, .pods = nullptr});
  ASSERT_TRUE(m) << m.error().message;
  ExpectObjects(*m);
  EXPECT_EQ(m->files.size(), 2u);  // the ConfigMap and the ClusterPolicy
  std::string notes;
  for (const std::string& n : m->notes) notes += n + "\n";
  EXPECT_THAT(notes, HasSubstr("no --nodes file"));
  EXPECT_THAT(notes, HasSubstr("no --pods file"));
}

std::string Notes(const Manifests& m) {
  std::string all;
  for (const std::string& n : m.notes) all += n + "\n";
  return all;
}

TEST(BuildManifests, MigPatchesTheContainerThatHoldsTheGpuAndSaysWhatItSkips) {
  const Plan plan = MakePlan(true);
  std::vector<KubePod> pods = Pods();
  // Deployment a: its GPU is held by an init-style sidecar; StatefulSet c: two GPU containers.
  for (KubePod& p : pods) {
    if (p.owner.name == "a") {
      p.containers[0].kind = KubeContainer::Kind::kSidecar;
      p.containers[0].name = "gpu-sidecar";
    }
    if (p.owner.name == "c") p.containers.push_back(GpuContainer("second"));
  }
  std::vector<KubeNode> nodes = Nodes();
  nodes[2].name = std::string(60, 'n');  // a 60-character node name: the label value must stay <= 63
  const Result<Manifests> m =
      BuildManifests({.colocation = &plan, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  ExpectObjects(*m);
  const YAML::Node a = YAML::Load(File(*m, "workload-ml-deployment-a.yaml").yaml);
  EXPECT_FALSE(a["spec"]["template"]["spec"]["containers"]);
  EXPECT_EQ(a["spec"]["template"]["spec"]["initContainers"][0]["name"].as<std::string>(), "gpu-sidecar");
  EXPECT_THAT(Notes(*m), HasSubstr("pod ml/c-0: asks for 2 GPUs; co-location plans pods of one GPU"));
  for (const ManifestFile& f : m->files) EXPECT_NE(f.name, "workload-ml-statefulset-c.yaml");

  const YAML::Node policy = YAML::Load(File(*m, "clusterpolicy-cluster-policy.yaml").yaml);
  EXPECT_EQ(policy["spec"]["mig"]["strategy"].as<std::string>(), "mixed");
  EXPECT_EQ(policy["spec"]["migManager"]["config"]["default"].as<std::string>(), "all-disabled");
  const YAML::Node cm = YAML::Load(File(*m, "configmap-gpu-operator-gpufit-mig-parted-config.yaml").yaml);
  const YAML::Node parted = YAML::Load(cm["data"]["config.yaml"].as<std::string>());
  EXPECT_FALSE(parted["mig-configs"]["all-disabled"][0]["mig-enabled"].as<bool>());
  const YAML::Node node = YAML::Load(File(*m, "node-" + nodes[2].name + ".yaml").yaml);
  const std::string label = node["metadata"]["labels"]["nvidia.com/mig.config"].as<std::string>();
  EXPECT_LE(label.size(), 63u);
  EXPECT_TRUE(parted["mig-configs"][label].IsSequence()) << label;
}

TEST(BuildManifests, MigNamesTheSingleStrategyNodeWhoseLayoutsBreakIt) {
  const Plan plan = MakePlan(true);
  ASSERT_TRUE(plan.mig);
  const std::vector<KubePod> pods = Pods();
  std::vector<KubeNode> nodes = Nodes();
  nodes[2].mig_strategy = "single";  // gpu-h100-0: 8 GPUs, the plan's MIG GPUs first, the rest spare
  const Result<Manifests> m =
      BuildManifests({.colocation = &plan, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  // The plan's GPUs take GPU 0..k-1 of the node; GPU k and later stay MIG-disabled, which the
  // single strategy refuses next to MIG GPUs.
  const std::size_t k = plan.mig->gpu_plans.size();
  ASSERT_LT(k, 8u);
  EXPECT_THAT(Notes(*m), HasSubstr(fmt::format("node gpu-h100-0 runs the single MIG strategy and its planned layouts "
                                               "break it (node gpu-h100-0: GPU {} has MIG disabled but GPU 0 has MIG "
                                               "instances; the single MIG strategy needs MIG enabled on every GPU",
                                               k)));
  EXPECT_THAT(Notes(*m), ::testing::Not(HasSubstr("nodes gpu-h100-0 run the single MIG strategy")));
}

TEST(BuildManifests, MigGivesEveryReplicaTheProfileOfTheLargestAndTheLayoutHoldsThem) {
  // Deployment a's replicas need 5500 and 22000 MiB: both get the profile for 22000 MiB.
  Telemetry t = FourPods();
  t.pods[0].fb_used_mib.assign(10, 5000);
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.mig_isolation = true;
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  ASSERT_TRUE(plan) << plan.error().message;
  const std::vector<KubePod> pods = Pods();
  const std::vector<KubeNode> nodes = Nodes();
  const Result<Manifests> m =
      BuildManifests({.colocation = &*plan, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  const MigGpu& h100 = **MigCatalog::Embedded().Find("h100-80gb");
  const MigProfile* expected = SmallestProfile(h100, MiB{22000});
  ASSERT_NE(expected, nullptr);
  const YAML::Node a = YAML::Load(File(*m, "workload-ml-deployment-a.yaml").yaml);
  EXPECT_EQ(a["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-" + expected->name]
                .as<std::string>(),
            "1");
  const YAML::Node cm = YAML::Load(File(*m, "configmap-gpu-operator-gpufit-mig-parted-config.yaml").yaml);
  const YAML::Node parted = YAML::Load(cm["data"]["config.yaml"].as<std::string>());
  int of_expected = 0;
  for (const auto& e : parted["mig-configs"]["gpufit-gpu-h100-0"])
    if (e["mig-enabled"].as<bool>() && e["mig-devices"][expected->name])
      of_expected += static_cast<int>(e["devices"].size()) * e["mig-devices"][expected->name].as<int>();
  EXPECT_GE(of_expected, 2);  // both replicas of a (solo may ask for the same profile too)
}

TEST(BuildManifests, TimeSlicingSkipsWhatItCannotServe) {
  const Plan plan = MakePlan(false);
  std::vector<KubePod> pods = Pods();
  for (KubePod& p : pods) p.namespace_name = "123";  // a valid name YAML would read as a number
  std::vector<KubeNode> nodes = Nodes();
  KubeNode tainted = nodes[2], mig = nodes[2], other = nodes[2];
  tainted.name = "gpu-h100-a";
  tainted.taints.push_back({.key = "dedicated", .value = "infra", .effect = "NoSchedule"});
  mig.name = "gpu-h100-b";
  mig.mig_config = "all-1g.10gb";
  other.name = "gpu-h100-c";
  other.labels["nvidia.com/device-plugin.config"] = "team-a";
  nodes[2].gpu_count = 0;  // the original H100 node out of the way
  nodes.insert(nodes.end(), {tainted, mig, other});
  Telemetry t = FourPods();
  for (PodSeries& p : t.pods) p.pod.replace(0, 2, "123");
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  const Result<Plan> p123 = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  ASSERT_TRUE(p123);
  const Result<Manifests> m =
      BuildManifests({.colocation = &*p123, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  ExpectObjects(*m);
  const std::string notes = Notes(*m);
  EXPECT_THAT(notes, HasSubstr("node gpu-h100-a: not used, its taint dedicated:NoSchedule"));
  EXPECT_THAT(notes, HasSubstr("node gpu-h100-b: not used for time-slicing, its GPUs are in MIG mode"));
  EXPECT_THAT(notes, HasSubstr("nodes already use device plugin configs (team-a)"));
  EXPECT_THAT(notes, ::testing::Not(HasSubstr("gpu-a100-0")));  // another model: silently not a target
  for (const ManifestFile& f : m->files) EXPECT_NE(f.name, "clusterpolicy-cluster-policy.yaml");
  // The only usable node is gpu-h100-c; the namespace "123" stays a string.
  File(*m, "node-gpu-h100-c.yaml");
  const ManifestFile& a = File(*m, "workload-123-deployment-a.yaml");
  EXPECT_THAT(a.yaml, HasSubstr("namespace: \"123\""));
  EXPECT_EQ(YAML::Load(a.yaml)["metadata"]["namespace"].Tag(), "!");  // quoted: a string
}

TEST(BuildManifests, CordonedNodesAndBareReplicaSetsAreNoted) {
  const Plan plan = MakePlan(false);
  std::vector<KubePod> pods = Pods();
  for (KubePod& p : pods)
    if (p.owner.name == "a") p.owner = {"ReplicaSet", "a-5d8f7"};  // no pod-template-hash: the reader keeps it
  std::vector<KubeNode> nodes = Nodes();
  KubeNode cordoned = nodes[2];
  cordoned.name = "gpu-h100-0a";
  cordoned.unschedulable = true;
  nodes.insert(nodes.begin() + 2, cordoned);
  const Result<Manifests> m =
      BuildManifests({.colocation = &plan, .training = nullptr, .nodes = &nodes, .pods = &pods});
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_THAT(Notes(*m), HasSubstr("node gpu-h100-0a: not used, it is cordoned"));
  EXPECT_THAT(Notes(*m), HasSubstr("ReplicaSet ml/a-5d8f7: its pods carry no pod-template-hash label"));
  File(*m, "workload-ml-replicaset-a-5d8f7.yaml");
  File(*m, "node-gpu-h100-0.yaml");
}

TEST(NormalizedGpuProduct, MatchesGfdLabelsToCatalogNames) {
  EXPECT_EQ(NormalizedGpuProduct("NVIDIA H100 80GB HBM3"), "H100-80GB-HBM3");
  EXPECT_EQ(NormalizedGpuProduct("NVIDIA-H100-80GB-HBM3"), "H100-80GB-HBM3");
  EXPECT_EQ(NormalizedGpuProduct("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED"), "A100-SXM4-40GB");
  EXPECT_EQ(NormalizedGpuProduct("Tesla-T4-SHARED"), "T4");
}

}  // namespace
}  // namespace gpufit

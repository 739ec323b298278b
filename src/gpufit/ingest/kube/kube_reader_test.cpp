#include "gpufit/ingest/kube/kube_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/core/test_support.h"
#include "kube_fixture.h"

namespace gpufit {
namespace {

using Json = nlohmann::json;
using testing::Container;
using ::testing::HasSubstr;
using testing::List;
using testing::MakeCluster;
using testing::Node;
using testing::Pod;
using testing::PodArgs;
using testing::Sidecar;
using testing::TestCluster;

// The test cluster, written once and read back.
struct ReadCluster {
  TestCluster written;
  std::vector<KubeNode> nodes;
  std::vector<KubePod> pods;
};

const ReadCluster& Cluster() {
  static const ReadCluster read = [] {
    ReadCluster r{.written = MakeCluster(), .nodes = {}, .pods = {}};
    const testing::TempDir dir;
    const auto nodes = ReadKubeNodes(dir.Write("nodes.json", List(r.written.nodes).dump(2)));
    const auto pods = ReadKubePods(dir.Write("pods.json", List(r.written.pods).dump(2)));
    EXPECT_TRUE(nodes) << nodes.error().message;
    EXPECT_TRUE(pods) << pods.error().message;
    if (nodes) r.nodes = *nodes;
    if (pods) r.pods = *pods;
    return r;
  }();
  return read;
}

const KubeNode& NodeNamed(const std::string& name) {
  const auto& nodes = Cluster().nodes;
  const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const KubeNode& n) { return n.name == name; });
  EXPECT_NE(it, nodes.end()) << name;
  return *it;
}

// The first pod whose key starts with `prefix`.
const KubePod& PodStarting(const std::string& prefix) {
  const auto& pods = Cluster().pods;
  const auto it = std::find_if(pods.begin(), pods.end(), [&](const KubePod& p) { return p.Key().starts_with(prefix); });
  EXPECT_NE(it, pods.end()) << prefix;
  return *it;
}

// ---------------------------------------------------------------------------------------

TEST(KubeReaderTest, ReadsEveryNodeSortedByName) {
  const auto& c = Cluster();
  ASSERT_EQ(c.nodes.size(), c.written.nodes.size());
  ASSERT_EQ(c.nodes.size(), 24u);  // 6 CPU + 4 H100 + 4 MIG + 4 time-sliced + 5 T4 + 1 MPS
  EXPECT_TRUE(std::is_sorted(c.nodes.begin(), c.nodes.end(),
                             [](const KubeNode& a, const KubeNode& b) { return a.name < b.name; }));
  EXPECT_EQ(c.nodes.front().name, "a100-mig-0");
  EXPECT_EQ(c.nodes.back().name, "t4-4");
  const auto gpu_nodes =
      std::count_if(c.nodes.begin(), c.nodes.end(), [](const KubeNode& n) { return !n.gpu_product.empty(); });
  EXPECT_EQ(gpu_nodes, 18);
  EXPECT_EQ(static_cast<std::size_t>(gpu_nodes), c.written.gpu_nodes.size());
}

TEST(KubeReaderTest, CpuNodeResources) {
  const KubeNode& n = NodeNamed("cpu-0");
  EXPECT_EQ(n.cpu_capacity, MilliCpu{32000});
  EXPECT_EQ(n.cpu_allocatable, MilliCpu{31850});
  EXPECT_EQ(n.memory_capacity, MiB{131072});     // 134217728Ki
  EXPECT_EQ(n.memory_allocatable, MiB{126976});  // 130023424Ki
  EXPECT_TRUE(n.devices_capacity.empty());       // pods, ephemeral-storage, hugepages-* dropped
  EXPECT_TRUE(n.devices_allocatable.empty());
  EXPECT_TRUE(n.unschedulable);
  EXPECT_FALSE(NodeNamed("cpu-1").unschedulable);
  EXPECT_EQ(n.gpu_count, 0);
  EXPECT_EQ(n.gpu_product, "");
  EXPECT_FALSE(n.gpu_memory.has_value());
  EXPECT_EQ(n.labels.at("node.kubernetes.io/instance-type"), "m6i.8xlarge");
  EXPECT_TRUE(n.taints.empty());
}

TEST(KubeReaderTest, H100NodeResourcesAndGpuLabels) {
  const KubeNode& n = NodeNamed("h100-2");
  EXPECT_EQ(n.cpu_capacity, MilliCpu{192000});
  EXPECT_EQ(n.cpu_allocatable, MilliCpu{191450});
  EXPECT_EQ(n.memory_capacity, MiB{2064100});     // 2113638400Ki / 1024
  EXPECT_EQ(n.memory_allocatable, MiB{2048000});  // 2097152000Ki / 1024
  EXPECT_EQ(n.devices_capacity, (std::map<std::string, int>{{"nvidia.com/gpu", 8}}));
  EXPECT_EQ(n.devices_allocatable, (std::map<std::string, int>{{"nvidia.com/gpu", 8}}));
  EXPECT_EQ(n.gpu_product, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(n.gpu_memory, MiB{81559});
  EXPECT_EQ(n.gpu_count, 8);
  EXPECT_EQ(n.gpu_replicas, 8);
  EXPECT_EQ(n.sharing_strategy, "none");
  EXPECT_EQ(n.mig_strategy, "single");
  EXPECT_EQ(n.mig_config, "all-disabled");
  EXPECT_EQ(n.taints, (std::vector<NodeTaint>{{.key = "nvidia.com/gpu", .value = "present", .effect = "NoSchedule"}}));
}

TEST(KubeReaderTest, MixedMigNodeKeepsEachProfileAsADevice) {
  const KubeNode& n = NodeNamed("a100-mig-3");
  EXPECT_EQ(n.cpu_allocatable, MilliCpu{95690});
  // A node's memory rounds down (what it has; a pod's request rounds up): k8s_quantity.h.
  EXPECT_EQ(n.memory_capacity, MiB{1031990});     // 1056758636Ki = 1031990.86 MiB
  EXPECT_EQ(n.memory_allocatable, MiB{1020507});  // 1045000000Ki = 1020507.81 MiB
  EXPECT_EQ(n.devices_capacity,
            (std::map<std::string, int>{
                {"nvidia.com/gpu", 4}, {"nvidia.com/mig-1g.10gb", 16}, {"nvidia.com/mig-3g.40gb", 4}}));
  EXPECT_EQ(n.devices_allocatable,
            (std::map<std::string, int>{
                {"nvidia.com/gpu", 4}, {"nvidia.com/mig-1g.10gb", 15}, {"nvidia.com/mig-3g.40gb", 4}}));
  EXPECT_EQ(NodeNamed("a100-mig-0").devices_allocatable.at("nvidia.com/mig-1g.10gb"), 16);
  EXPECT_EQ(n.mig_strategy, "mixed");
  EXPECT_EQ(n.mig_config, "gpufit-a100-mixed");
  EXPECT_EQ(n.gpu_product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(n.gpu_memory, MiB{81920});
  EXPECT_EQ(n.gpu_count, 8);  // the label (physical GPUs), not capacity nvidia.com/gpu (4 without MIG)
  EXPECT_EQ(n.sharing_strategy, "");
  EXPECT_EQ(n.gpu_replicas, 0);
}

TEST(KubeReaderTest, TimeSlicedAndMpsNodes) {
  const KubeNode& ts = NodeNamed("l4-ts-0");
  EXPECT_EQ(ts.sharing_strategy, "time-slicing");
  EXPECT_EQ(ts.gpu_replicas, 32);
  EXPECT_EQ(ts.gpu_count, 4);
  EXPECT_EQ(ts.devices_capacity.at("nvidia.com/gpu"), 32);
  EXPECT_EQ(ts.cpu_allocatable, MilliCpu{47500});  // "47.5"
  EXPECT_EQ(ts.memory_capacity, MiB{196608});      // 192Gi
  EXPECT_EQ(ts.memory_allocatable, MiB{192512});   // 188Gi
  EXPECT_EQ(ts.gpu_product, "NVIDIA-L4-SHARED");
  EXPECT_EQ(ts.taints.size(), 2u);
  const KubeNode& mps = NodeNamed("l4-mps-0");
  EXPECT_EQ(mps.sharing_strategy, "mps");
  EXPECT_EQ(mps.gpu_replicas, 40);
  EXPECT_EQ(mps.devices_allocatable.at("nvidia.com/gpu"), 40);
  const KubeNode& t4 = NodeNamed("t4-0");
  EXPECT_EQ(t4.gpu_count, 1);  // no gpu.count label: capacity nvidia.com/gpu
  EXPECT_EQ(t4.gpu_memory, MiB{15360});
  EXPECT_EQ(t4.sharing_strategy, "");
  EXPECT_EQ(t4.cpu_allocatable, MilliCpu{7910});
}

TEST(KubeReaderTest, CapacityTypeFromEachProvidersLabel) {
  const std::map<std::string, std::string> expected = {{"cpu-0", "on-demand"},
                                                       {"cpu-1", "on-demand"},
                                                       {"cpu-2", "on-demand"},  // Karpenter
                                                       {"cpu-3", "spot"},
                                                       {"cpu-4", "spot"},
                                                       {"cpu-5", "spot"},  // Karpenter
                                                       {"h100-0", "on-demand"},
                                                       {"h100-1", "on-demand"},  // EKS ON_DEMAND
                                                       {"h100-2", "spot"},
                                                       {"h100-3", "reserved"},  // EKS SPOT, CAPACITY_BLOCK
                                                       {"a100-mig-0", "spot"},
                                                       {"a100-mig-1", "spot"},  // GKE gke-spot
                                                       {"a100-mig-2", "spot"},
                                                       {"a100-mig-3", ""},  // GKE preemptible, none
                                                       {"l4-ts-0", "spot"},
                                                       {"l4-ts-1", "spot"},  // AKS spot
                                                       {"l4-ts-2", "on-demand"},
                                                       {"l4-ts-3", "on-demand"},  // AKS regular
                                                       {"t4-0", ""},
                                                       {"t4-1", ""},
                                                       {"t4-2", ""},
                                                       {"t4-3", ""},
                                                       {"t4-4", ""},
                                                       {"l4-mps-0", "reserved"}};  // Karpenter reserved
  std::map<std::string, std::string> got;
  for (const KubeNode& n : Cluster().nodes) got[n.name] = n.capacity_type;
  EXPECT_EQ(got, expected);
}

TEST(KubeReaderTest, ReadsEveryPodSortedByKey) {
  const auto& c = Cluster();
  ASSERT_EQ(c.pods.size(), c.written.pods.size());
  // 24 kube-proxy + 18 dcgm-exporter + 20 web + 8 llm-serve + 2 legacy + 4 llm-ft + 6 batch-train
  // + 1 debug-shell + 10 embed + 30 notebook + 2 ray-tune.
  ASSERT_EQ(c.pods.size(), 125u);
  EXPECT_TRUE(std::is_sorted(c.pods.begin(), c.pods.end(),
                             [](const KubePod& a, const KubePod& b) { return a.Key() < b.Key(); }));
  EXPECT_EQ(c.pods.front().Key(), "default/debug-shell");
}

TEST(KubeReaderTest, PodsPerWorkloadKind) {
  const auto& c = Cluster();
  std::map<std::string, int> by_kind, by_workload;
  for (const KubePod& p : c.pods) {
    ++by_kind[p.owner.kind];
    ++by_workload[p.owner.kind + "/" + p.owner.name];
  }
  EXPECT_EQ(by_kind, c.written.pods_by_owner_kind);
  EXPECT_EQ(by_workload, c.written.pods_by_workload);
  EXPECT_EQ(by_kind, (std::map<std::string, int>{{"DaemonSet", 42},
                                                 {"Deployment", 68},
                                                 {"Job", 6},
                                                 {"Pod", 1},
                                                 {"RayCluster", 2},
                                                 {"ReplicaSet", 2},
                                                 {"StatefulSet", 4}}));
  EXPECT_EQ(by_workload.at("Deployment/web"), 20);  // ReplicaSet web-7d9f8b6c5d -> Deployment web
  EXPECT_EQ(by_workload.at("Deployment/llm-serve"), 8);
  EXPECT_EQ(by_workload.at("Deployment/notebook"), 30);
  EXPECT_EQ(by_workload.at("ReplicaSet/legacy-rs"), 2);  // no or a different pod-template-hash
  EXPECT_EQ(by_workload.at("DaemonSet/nvidia-dcgm-exporter"), 18);
  EXPECT_EQ(by_workload.at("StatefulSet/llm-ft"), 4);
  EXPECT_EQ(by_workload.at("Job/batch-train"), 6);
  EXPECT_EQ(by_workload.at("Pod/debug-shell"), 1);
  EXPECT_EQ(by_workload.at("RayCluster/ray-tune"), 2);  // the controller ref, or the first without one
}

TEST(KubeReaderTest, ClassicSidecarIsASecondAppContainer) {
  // web: init istio-init (100m, 128Mi); app web (500m, 512Mi) + istio-proxy (100m, 128Mi).
  const KubePod& p = PodStarting("shop/web-");
  ASSERT_EQ(p.containers.size(), 3u);
  EXPECT_EQ(p.containers[0].name, "istio-init");
  EXPECT_EQ(p.containers[0].kind, KubeContainer::Kind::kInit);
  EXPECT_EQ(p.containers[1].name, "web");
  EXPECT_EQ(p.containers[2].name, "istio-proxy");
  EXPECT_EQ(p.containers[2].kind, KubeContainer::Kind::kApp);
  EXPECT_EQ(p.CpuRequest(), MilliCpu{600});                     // max(100, 500 + 100)
  EXPECT_EQ(p.MemoryRequest(), MiB{640});                       // max(128, 512 + 128)
  EXPECT_EQ(p.containers[1].resources.memory_limit, MiB{954});  // "1G" = 953.67 MiB, rounded up
  EXPECT_EQ(p.containers[2].resources.cpu_limit, MilliCpu{2000});
  EXPECT_FALSE(p.containers[1].resources.cpu_limit.has_value());
  EXPECT_EQ(p.Devices("nvidia.com/gpu"), 0);
}

TEST(KubeReaderTest, NativeSidecarAddsToAppsAndToLaterInitContainers) {
  // llm-serve: sidecar istio-proxy (250m, 256Mi), then init model-download (6, 8Gi), then
  // app server (4, 32Gi, 1 GPU) and app log-shipper (100m, 64Mi). CPU: max(4000 + 100 + 250,
  // 6000 + 250) = 6250 (init wins); memory: max(32768 + 64 + 256, 8192 + 256) = 33088 (apps win).
  const KubePod& p = PodStarting("ml/llm-serve-");
  ASSERT_EQ(p.containers.size(), 4u);
  EXPECT_EQ(p.containers[0].kind, KubeContainer::Kind::kSidecar);
  EXPECT_EQ(p.containers[1].kind, KubeContainer::Kind::kInit);
  EXPECT_EQ(p.containers[2].kind, KubeContainer::Kind::kApp);
  EXPECT_EQ(p.containers[2].image, "vllm/vllm-openai:v0.6.3");
  EXPECT_EQ(p.CpuRequest(), MilliCpu{6250});
  EXPECT_EQ(p.MemoryRequest(), MiB{33088});
  EXPECT_EQ(p.Devices("nvidia.com/gpu"), 1);
  EXPECT_EQ(p.owner, (WorkloadRef{.kind = "Deployment", .name = "llm-serve"}));
  EXPECT_EQ(p.node_selector, (std::map<std::string, std::string>{{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}));
  EXPECT_EQ(p.node_name, "h100-3");
}

TEST(KubeReaderTest, RequestsDefaultToLimits) {
  // batch-train: app has limits only (2, 16Gi, 1 mig-3g.40gb); init fetch-data requests 3 CPUs.
  const KubePod& job = PodStarting("research/batch-train-");
  const ContainerResources& r = job.containers.back().resources;
  EXPECT_EQ(r.cpu_request, MilliCpu{2000});
  EXPECT_EQ(r.memory_request, MiB{16384});
  EXPECT_EQ(r.devices, (std::map<std::string, int>{{"nvidia.com/mig-3g.40gb", 1}}));
  EXPECT_EQ(job.CpuRequest(), MilliCpu{3000});  // the init container is larger
  EXPECT_EQ(job.MemoryRequest(), MiB{16384});
  EXPECT_EQ(job.Devices("nvidia.com/mig-3g.40gb"), 1);
  // dcgm-exporter: cpu 100m requested, memory 256Mi from the limit; init 10m / 16Mi.
  const KubePod& dcgm = PodStarting("gpu-operator/nvidia-dcgm-exporter-");
  EXPECT_EQ(dcgm.CpuRequest(), MilliCpu{100});
  EXPECT_EQ(dcgm.MemoryRequest(), MiB{256});
  // notebook: "1.5" CPUs, "129e6" bytes = 123.02 MiB rounded up; the GPU from limits.
  const KubePod& nb = PodStarting("research/notebook-");
  EXPECT_EQ(nb.CpuRequest(), MilliCpu{1500});
  EXPECT_EQ(nb.MemoryRequest(), MiB{124});
  EXPECT_EQ(nb.Devices("nvidia.com/gpu"), 1);
  EXPECT_EQ(nb.Devices("nvidia.com/mig-1g.10gb"), 0);
}

TEST(KubeReaderTest, ClusterTotalsOfRequestsAndDevices) {
  // By hand, per workload: pods x effective request.
  //   CPU (m): 24x100 + 18x100 + 20x600 + 8x6250 + 2x250 + 4x64000 + 6x3000 + 0 + 10x2000
  //            + 30x1500 + 2x2000 = 409700.
  //   (llm-serve: max(250 + 6000, 250 + 4000 + 100) = 6250.)
  //   Memory (MiB): 0 + 18x256 + 20x640 + 8x33088 + 2x256 + 4x524288 + 6x16384 + 0 + 10x16384
  //            + 30x124 + 2x256 = 2646152. (llm-serve: 256 + 32768 + 64.)
  //   nvidia.com/gpu: 8x1 (llm-serve) + 4x8 (llm-ft) + 30x1 (notebook) + 2x1 (ray) = 72.
  std::int64_t cpu = 0, memory = 0;
  int gpus = 0, mig_1g = 0, mig_3g = 0;
  for (const KubePod& p : Cluster().pods) {
    cpu += p.CpuRequest().value;
    memory += p.MemoryRequest().value;
    gpus += p.Devices("nvidia.com/gpu");
    mig_1g += p.Devices("nvidia.com/mig-1g.10gb");
    mig_3g += p.Devices("nvidia.com/mig-3g.40gb");
  }
  EXPECT_EQ(cpu, 409700);
  EXPECT_EQ(memory, 2646152);
  EXPECT_EQ(gpus, 72);
  EXPECT_EQ(mig_1g, 10);
  EXPECT_EQ(mig_3g, 6);
}

TEST(KubeReaderTest, PodMetadataAndStatus) {
  const KubePod& bare = PodStarting("default/debug-shell");
  EXPECT_EQ(bare.owner, (WorkloadRef{.kind = "Pod", .name = "debug-shell"}));
  EXPECT_EQ(bare.CpuRequest(), MilliCpu{0});
  EXPECT_EQ(bare.MemoryRequest(), MiB{0});
  EXPECT_EQ(bare.qos_class, "BestEffort");
  EXPECT_EQ(bare.created_s, 20454.0 * 86400);  // 2026-01-01T00:00:00Z
  EXPECT_FALSE(bare.deleted_s.has_value());
  EXPECT_EQ(bare.node_name, "cpu-2");
  EXPECT_EQ(bare.uid.substr(0, 9), "7c2d7c6e-");
  const KubePod& pending = PodStarting("ml/llm-ft-3");
  EXPECT_EQ(pending.node_name, "");
  EXPECT_EQ(pending.phase, "Pending");
  EXPECT_EQ(pending.Devices("nvidia.com/gpu"), 8);
  EXPECT_EQ(pending.owner, (WorkloadRef{.kind = "StatefulSet", .name = "llm-ft"}));
  EXPECT_EQ(pending.labels.at("app"), "llm-ft");
  const auto& pods = Cluster().pods;
  EXPECT_EQ(std::count_if(pods.begin(), pods.end(), [](const KubePod& p) { return p.phase == "Succeeded"; }), 2);
}

// ---------------------------------------------------------------------------------------
// Small hand-written files.

Json MinimalPod(const std::string& name, Json containers, Json init = Json::array()) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", "ml"}}},
              {"spec", {{"containers", std::move(containers)}}}};
  if (!init.empty()) pod["spec"]["initContainers"] = std::move(init);
  return pod;
}

TEST(KubeReaderTest, SidecarsCountForInitContainersStartedAfterThem) {
  // init-a (1), sidecar-1 (500m), init-b (2), sidecar-2 (300m); app main (1).
  // Apps + sidecars: 1000 + 500 + 300 = 1800. Init peaks: init-a 1000, sidecar-1 500,
  // init-b 2000 + 500 = 2500, sidecar-2 800. Effective: 2500. Plus overhead 250m.
  const testing::TempDir dir;
  Json pod = MinimalPod("p", Json::array({Container("main", "m", {{"cpu", "1"}})}),
                        Json::array({Container("init-a", "i", {{"cpu", "1"}}),
                                     Sidecar(Container("sidecar-1", "s", {{"cpu", "500m"}, {"memory", "100Mi"}})),
                                     Container("init-b", "i", {{"cpu", "2"}}),
                                     Sidecar(Container("sidecar-2", "s", {{"cpu", "300m"}, {"memory", "1Gi"}}))}));
  const auto plain = ReadKubePods(dir.Write("a.json", pod.dump()));
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->at(0).CpuRequest(), MilliCpu{2500});
  EXPECT_EQ(plain->at(0).MemoryRequest(), MiB{1124});
  pod["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "120Mi"}};
  const auto with_overhead = ReadKubePods(dir.Write("b.json", pod.dump()));
  ASSERT_TRUE(with_overhead) << with_overhead.error().message;
  EXPECT_EQ(with_overhead->at(0).CpuRequest(), MilliCpu{2750});
  EXPECT_EQ(with_overhead->at(0).MemoryRequest(), MiB{1244});
}

TEST(KubeReaderTest, AnnotationsAndStartTime) {
  const testing::TempDir dir;
  Json pod = MinimalPod("p", Json::array({Container("main", "m", {{"cpu", "1"}})}), Json::array());
  pod["metadata"]["annotations"] = {{"gpufit.io/work-hours", "20"}};
  pod["status"] = {{"phase", "Running"}, {"startTime", "2026-01-01T01:00:00Z"}};
  const auto read = ReadKubePods(dir.Write("a.json", pod.dump()));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->at(0).annotations.at("gpufit.io/work-hours"), "20");
  EXPECT_EQ(read->at(0).started_s, 1767225600.0 + 3600);
  pod["status"]["startTime"] = "yesterday";
  const auto bad = ReadKubePods(dir.Write("b.json", pod.dump()));
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr(".status.startTime"));
}

TEST(KubeReaderTest, AcceptsSingleObjectsTypedListsAndItemsWithoutKind) {
  const testing::TempDir dir;
  Json pod = MinimalPod("solo", Json::array({Container("c", "i", {{"cpu", 2}, {"memory", "256Mi"}})}));
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T02:30:00.5+02:00";
  const auto single = ReadKubePods(dir.Write("pod.json", pod.dump()));
  ASSERT_TRUE(single) << single.error().message;
  ASSERT_EQ(single->size(), 1u);
  EXPECT_EQ(single->at(0).Key(), "ml/solo");
  EXPECT_EQ(single->at(0).CpuRequest(), MilliCpu{2000});  // a bare JSON number
  EXPECT_EQ(single->at(0).deleted_s, 20454.0 * 86400 + 1800.5);

  Json bare_item = pod;
  bare_item.erase("kind");
  bare_item.erase("apiVersion");
  bare_item["metadata"]["name"] = "other";
  const Json pod_list = {{"apiVersion", "v1"}, {"kind", "PodList"}, {"items", Json::array({pod, bare_item})}};
  const auto list = ReadKubePods(dir.Write("podlist.json", pod_list.dump()));
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_EQ(list->size(), 2u);

  const Json node_list = {{"kind", "NodeList"}, {"items", Json::array({Node({.name = "n1"})})}};
  const auto nodes = ReadKubeNodes(dir.Write("nodelist.json", node_list.dump()));
  ASSERT_TRUE(nodes) << nodes.error().message;
  EXPECT_EQ(nodes->at(0).cpu_capacity, MilliCpu{0});
  const auto one_node = ReadKubeNodes(dir.Write("node.json", Node({.name = "n2"}).dump()));
  ASSERT_TRUE(one_node) << one_node.error().message;
  EXPECT_EQ(one_node->at(0).name, "n2");
  const auto empty = ReadKubePods(dir.Write("empty.json", List(Json::array()).dump()));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->empty());
}

struct ErrorCase {
  std::string name{};
  std::string text{};                   // the file's contents
  bool nodes = false;                   // read as nodes, else as pods
  std::vector<std::string> expected{};  // substrings of the message
};

TEST(KubeReaderTest, BadInputNamesTheFileItemAndField) {
  const Json ok_container = Container("c", "i", {{"cpu", "1"}});
  const auto pods_with = [&](Json second) {
    return List(Json::array({MinimalPod("fine", Json::array({ok_container})), std::move(second)})).dump();
  };
  Json no_name = MinimalPod("x", Json::array({ok_container}));
  no_name["metadata"].erase("name");
  Json bad_time = MinimalPod("t", Json::array({ok_container}));
  bad_time["metadata"]["creationTimestamp"] = "2026-01-01 00:00:00";
  Json bad_labels = MinimalPod("l", Json::array({ok_container}));
  bad_labels["metadata"]["labels"] = {{"app", 3}};
  Json no_containers = MinimalPod("n", Json::array());
  const std::vector<ErrorCase> cases = {
      {.name = "malformed JSON", .text = "{\"kind\": \"List\", \"items\": [", .expected = {"malformed JSON at byte"}},
      // Issue 40: kubectl's YAML said "malformed JSON" without a word of YAML.
      {.name = "pods as kubectl YAML",
       .text = "apiVersion: v1\nitems:\n- kind: Pod\n  metadata:\n    name: p\nkind: List\n",
       .expected = {"this is YAML (kubectl -o yaml); gpufit reads kubectl's JSON: write it with kubectl get pods -A -o "
                    "json"}},
      {.name = "nodes as kubectl YAML after a comment",
       .text = "# kubectl get nodes -o yaml\n---\napiVersion: v1\nkind: List\n",
       .nodes = true,
       .expected = {"this is YAML (kubectl -o yaml); gpufit reads kubectl's JSON: write it with kubectl get nodes -o "
                    "json"}},
      {.name = "pods file read as nodes",
       .text = List(Json::array({MinimalPod("p", Json::array({ok_container}))})).dump(),
       .nodes = true,
       .expected = {"items[0] (p): .kind: expected Node, got 'Pod'"}},
      {.name = "PodList read as nodes",
       .text = Json{{"kind", "PodList"}, {"items", Json::array()}}.dump(),
       .nodes = true,
       .expected = {".kind: expected Node, NodeList or List, got 'PodList'"}},
      {.name = "bad quantity",
       .text = pods_with(MinimalPod("llm-ft-0", Json::array({ok_container, Container("d", "i", {{"cpu", "abc"}})}))),
       .expected = {"items[1] (ml/llm-ft-0): .spec.containers[1].resources.requests.cpu: quantity 'abc'"}},
      {.name = "negative quantity",
       .text = pods_with(MinimalPod("neg", Json::array({Container("d", "i", {}, {{"memory", "-1Gi"}})}))),
       .expected = {"items[1] (ml/neg): .spec.containers[0].resources.limits.memory: quantity '-1Gi'"}},
      {.name = "fractional GPU",
       .text = pods_with(MinimalPod("half", Json::array({Container("d", "i", {}, {{"nvidia.com/gpu", "500m"}})}))),
       .expected = {"(ml/half): .spec.containers[0].resources.limits[\"nvidia.com/gpu\"]"}},
      {.name = "GPU requests != limits",
       .text = pods_with(
           MinimalPod("gpu", Json::array({Container("d", "i", {{"nvidia.com/gpu", "1"}}, {{"nvidia.com/gpu", "2"}})}))),
       .expected = {"(ml/gpu): .spec.containers[0].resources.requests[\"nvidia.com/gpu\"]", "requests 1 != limits 2"}},
      {.name = "request above limit",
       .text = pods_with(MinimalPod("big", Json::array({Container("d", "i", {{"cpu", "2"}}, {{"cpu", "1"}})}))),
       .expected = {"(ml/big): .spec.containers[0].resources.requests.cpu: request 2000m is above the limit 1000m"}},
      {.name = "bad init container quantity",
       .text = pods_with(
           MinimalPod("init", Json::array({ok_container}), Json::array({Container("i", "i", {{"memory", "12Qi"}})}))),
       .expected = {"(ml/init): .spec.initContainers[0].resources.requests.memory: quantity '12Qi'"}},
      {.name = "duplicate pod",
       .text = pods_with(MinimalPod("fine", Json::array({ok_container}))),
       .expected = {"items[1] (ml/fine): .metadata.name: Pod 'ml/fine' appears again (first at items[0])"}},
      {.name = "missing name", .text = pods_with(no_name), .expected = {"items[1]: .metadata.name: missing"}},
      {.name = "missing containers",
       .text = pods_with(no_containers),
       .expected = {"items[1] (ml/n): .spec.containers: missing"}},
      {.name = "bad timestamp",
       .text = pods_with(bad_time),
       .expected = {"items[1] (ml/t): .metadata.creationTimestamp: expected an RFC 3339 time"}},
      {.name = "label not a string",
       .text = pods_with(bad_labels),
       .expected = {"items[1] (ml/l): .metadata.labels.app: expected a string, got number"}},
      {.name = "bad gpu.memory label",
       .text = List(Json::array({Node({.name = "g", .labels = {{"nvidia.com/gpu.memory", "80GB"}}})})).dump(),
       .nodes = true,
       .expected =
           {"items[0] (g): .metadata.labels[\"nvidia.com/gpu.memory\"]: expected a whole number >= 0, got '80GB'"}},
      {.name = "bad node capacity",
       .text = List(Json::array({Node({.name = "g", .capacity = {{"cpu", "lots"}}})})).dump(),
       .nodes = true,
       .expected = {"items[0] (g): .status.capacity.cpu: quantity 'lots'"}},
      {.name = "duplicate node",
       .text = List(Json::array({Node({.name = "g"}), Node({.name = "g"})})).dump(),
       .nodes = true,
       .expected = {"items[1] (g): .metadata.name: Node 'g' appears again (first at items[0])"}},
      {.name = "not an object", .text = "[1, 2]", .expected = {"top level: expected a JSON object, got array"}},
  };
  const testing::TempDir dir;
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.Write("bad.json", c.text);
    const auto error_of = [](const auto& result) {
      return result ? Error{.code = Code::kInternal, .message = "no error"} : result.error();
    };
    const Error error = c.nodes ? error_of(ReadKubeNodes(path)) : error_of(ReadKubePods(path));
    EXPECT_EQ(error.code, Code::kInvalidArgument);
    EXPECT_THAT(error.message, HasSubstr(path + ": ")) << error.message;
    for (const std::string& s : c.expected) EXPECT_THAT(error.message, HasSubstr(s));
  }
}

TEST(KubeReaderTest, MissingFileIsNotFound) {
  const testing::TempDir dir;
  const auto pods = ReadKubePods(dir.path() + "/absent.json");
  ASSERT_FALSE(pods);
  EXPECT_EQ(pods.error().code, Code::kNotFound);
  EXPECT_THAT(pods.error().message, HasSubstr("absent.json"));
  const auto nodes = ReadKubeNodes(dir.path() + "/absent.json");
  ASSERT_FALSE(nodes);
  EXPECT_EQ(nodes.error().code, Code::kNotFound);
}

}  // namespace
}  // namespace gpufit

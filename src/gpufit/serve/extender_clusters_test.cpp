// The extender on real clusters' shapes: reservations across snapshots that change only the
// nodes, replicas of one workload kept apart, GPU memory used outside pods, time-sliced nodes
// and nodes with more GPUs than placement counts. Every expected figure is worked out by hand
// from the case's numbers in the comment above it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/serve/extender.h"
#include "serve_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::HasSubstr;
using testing::NodeJson;
using testing::PodJson;

std::vector<KubeNode> Nodes(const std::vector<Json>& items) {
  Result<std::vector<KubeNode>> n = ParseKubeNodes(testing::ListOf(items, "NodeList"), "nodes");
  EXPECT_TRUE(n) << n.error().message;
  return n ? *n : std::vector<KubeNode>{};
}

std::vector<KubePod> Pods(const std::vector<Json>& items) {
  std::vector<KubePod> out;
  for (const Json& item : items) {
    Result<KubePod> p = ParseKubePod(item, "pods");
    EXPECT_TRUE(p) << p.error().message;
    if (p) out.push_back(std::move(*p));
  }
  return out;
}

ExtenderArgs Args(const Json& pod, std::vector<std::string> names) {
  Result<ExtenderArgs> a = ParseExtenderArgs(Json{{"Pod", pod}, {"NodeNames", names}}.dump(), "request");
  EXPECT_TRUE(a) << a.error().message;
  return a ? *a : ExtenderArgs{};
}

std::unique_ptr<Extender> Make(const std::vector<Json>& nodes, const std::vector<Json>& pods,
                               const ExtenderOptions& options = {}) {
  Result<std::unique_ptr<Extender>> e = Extender::FromSnapshot(Nodes(nodes), Pods(pods), options);
  EXPECT_TRUE(e) << e.error().message;
  return e ? std::move(*e) : nullptr;
}

BindingArgs BindOf(const std::string& pod, const std::string& node) {
  return {.pod_name = pod, .pod_namespace = "ml", .pod_uid = "uid-" + pod, .node = node};
}

// A 1-core pod sharing one GPU by open-gpu-share's annotation (`milli` of it), bound to `node`
// when it is not empty.
Json SharePod(const std::string& name, int milli, const std::string& node = "") {
  Json pod = PodJson(name, "1", "1Gi", 0, node);
  pod["metadata"]["annotations"] = {{"alibabacloud.com/gpu-milli", std::to_string(milli)},
                                    {"alibabacloud.com/gpu-count", "1"}};
  return pod;
}

// A replica of Deployment ml/web: owned by its ReplicaSet web-7d9f (pod-template-hash 7d9f).
Json WebReplica(Json pod) {
  pod["metadata"]["labels"] = {{"pod-template-hash", "7d9f"}};
  pod["metadata"]["ownerReferences"] = {
      {{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web-7d9f"}, {"uid", "rs-1"}, {"controller", true}}};
  return pod;
}

// A node whose device plugin time-slices each of `gpus` A100s `replicas` ways: allocatable
// nvidia.com/gpu is gpus x replicas, with GPU feature discovery's labels.
Json TimeSlicedNode(const std::string& name, int gpus, int replicas) {
  Json node = NodeJson(name, 32, "128Gi", gpus * replicas, "NVIDIA-A100-SXM4-40GB-SHARED");
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = std::to_string(gpus);
  node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = std::to_string(replicas);
  node["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] = "time-slicing";
  return node;
}

// gpufit binds "a" (600 milli of n1's one GPU). The sidecar writes nodes.json before pods.json:
// the first snapshot taken in after the bind has a pods listing made before it (a still
// Pending), the second only a new nodes.json (n1's memory changed), the same pods listing.
// Neither shows a ended or bound elsewhere, so its reservation stays: 600 of 1000 milli-GPU
// taken, and "b" (600) finds no room (400 left).
TEST(ExtenderSnapshots, ANodesOnlyChangeNeverFreesALiveReservation) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 1, "A100")}, {});
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->Filter(Args(SharePod("a", 600), {"n1"})));
  const Result<Reservation> a = e->Reserve(BindOf("a", "n1"));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->gpus, GpuSet{1});
  const std::vector<KubePod> listed_before_bind = Pods({SharePod("a", 600)});
  Result<SnapshotStats> r = e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 1, "A100")}), listed_before_bind);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reservations_kept, 1);
  r = e->Reconcile(Nodes({NodeJson("n1", 8, "60Gi", 1, "A100")}), listed_before_bind);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reservations_kept, 1);
  EXPECT_EQ(r->reservations_dropped, 0);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.6);
  const Result<FilterResult> b = e->Filter(Args(SharePod("b", 600), {"n1"}));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->kept.empty());
  EXPECT_THAT(b->failed, ElementsAre(FieldsAre(0, "no GPU with enough free share")));
  EXPECT_FALSE(e->Reserve(BindOf("b", "n1")));
  // A new pods listing that shows a bound takes it over: counted once, still 600.
  r = e->Reconcile(Nodes({NodeJson("n1", 8, "60Gi", 1, "A100")}), Pods({SharePod("a", 600, "n1")}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reservations_in_snapshot, 1);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.6);
}

// gpufit binds "a" (6 of n1's 8 cores, 1 of its 2 GPUs). The next listing does not show a yet
// but shows "x" (4 cores, no GPU) bound to n1 by another scheduler: a no longer fits beside it,
// yet its pod may be running there. Its reservation stays, counted: 1 of 2 GPUs allocated, 10 of
// 8 cores taken, so "b" (1 core, 1 GPU) finds no CPU on n1.
TEST(ExtenderSnapshots, ASnapshotThatFillsTheNodeKeepsTheReservationCounted) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100")}, {});
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->Filter(Args(PodJson("a", "6", "8Gi", 1), {"n1"})));
  ASSERT_TRUE(e->Reserve(BindOf("a", "n1")));
  const Result<SnapshotStats> r =
      e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 2, "A100")}), Pods({PodJson("x", "4", "8Gi", 0, "n1")}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reservations_kept, 1) << ::testing::PrintToString(r->warnings);
  EXPECT_EQ(r->reservations_dropped, 0);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
  const Result<FilterResult> b = e->Filter(Args(PodJson("b", "1", "1Gi", 1), {"n1"}));
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->kept.empty());
  EXPECT_THAT(b->failed, ElementsAre(FieldsAre(0, "insufficient cpu")));
}

// Deployment ml/web's first replica runs on GPU 0 of n1 (2 GPUs), 300 milli of it; n2's one GPU
// has 800 of 1000 taken by "x". The second replica (300) fits n1's GPU 0 (700 free) and GPU 1,
// n2 not at all (200 free): it must go to GPU 1, apart from its sibling. A third then finds a
// replica on both of n1's GPUs: refused there. A pod of no workload still shares GPU 0.
TEST(ExtenderReplicas, TwoReplicasOfOneDeploymentNeverShareAGpu) {
  const auto e = Make({NodeJson("n1", 16, "64Gi", 2, "A100"), NodeJson("n2", 16, "64Gi", 1, "A100")},
                      {WebReplica(SharePod("web-1", 300, "n1")), SharePod("x", 800, "n2")});
  ASSERT_NE(e, nullptr);
  const Result<FilterResult> two = e->Filter(Args(WebReplica(SharePod("web-2", 300)), {"n1", "n2"}));
  ASSERT_TRUE(two);
  EXPECT_THAT(two->kept, ElementsAre(0));
  const Result<Reservation> placed = e->Reserve(BindOf("web-2", "n1"));
  ASSERT_TRUE(placed) << placed.error().message;
  EXPECT_EQ(placed->gpus, GpuSet{0b10});
  const Result<FilterResult> three = e->Filter(Args(WebReplica(SharePod("web-3", 300)), {"n1", "n2"}));
  ASSERT_TRUE(three);
  EXPECT_TRUE(three->kept.empty());
  EXPECT_THAT(three->failed, ElementsAre(FieldsAre(0, "a replica of the same workload already uses each GPU with room"),
                                         FieldsAre(1, "no GPU with enough free share")));
  const Result<std::vector<HostPriority>> p = e->Prioritize(Args(WebReplica(SharePod("web-3", 300)), {"n1", "n2"}));
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0].score, kMinExtenderPriority);
  EXPECT_FALSE(e->Reserve(BindOf("web-3", "n1")));
  const Result<FilterResult> other = e->Filter(Args(SharePod("other", 300), {"n1"}));
  ASSERT_TRUE(other);
  EXPECT_THAT(other->kept, ElementsAre(0));
}

// With replicas kept off one node: web-1 runs on n1 (GPU 0 of 2, 300 milli), so web-2 may not
// go to n1 even though its GPU 1 is idle; n2 (one idle GPU) keeps it.
TEST(ExtenderReplicas, TheNodeOptionKeepsReplicasOffOneNode) {
  const auto e =
      Make({NodeJson("n1", 16, "64Gi", 2, "A100"), NodeJson("n2", 16, "64Gi", 1, "A100")},
           {WebReplica(SharePod("web-1", 300, "n1"))}, {.replicas_apart = ExtenderOptions::ReplicasApart::kNode});
  ASSERT_NE(e, nullptr);
  const Result<FilterResult> f = e->Filter(Args(WebReplica(SharePod("web-2", 300)), {"n1", "n2"}));
  ASSERT_TRUE(f);
  EXPECT_THAT(f->kept, ElementsAre(1));
  EXPECT_THAT(f->failed, ElementsAre(FieldsAre(0, "a replica of the same workload already runs on this node")));
  const Result<Reservation> r = e->Reserve(BindOf("web-2", "n1"));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("deployment/ml/web"));
}

// 24 GiB GPUs (the GFD memory label); on g1's GPU 0, 10,240 MiB are used outside any pod
// (plan.json reserved_gpus). A 16 GiB share (667 milli: 16,384 / 24,576) needs 16,384 MiB, and
// 24,576 - 10,240 = 14,336 are left: never on g1, fine on g2. A 4 GiB share (167 milli, 4,104
// MiB) is taken of the 14,336 MiB there: ceil(167 x 24,576 / 14,336) = ceil(286.3) = 287
// milli of g1's GPU, so bound there it puts 287 of 2,000 milli-GPU in use.
TEST(ExtenderOutsideMemory, ADeclaredShareMustFitBesideMemoryUsedOutsidePods) {
  auto gpu24 = [](const std::string& name) {
    Json n = NodeJson(name, 16, "64Gi", 1, "NVIDIA-L4");
    n["metadata"]["labels"]["nvidia.com/gpu.memory"] = "24576";
    return n;
  };
  const auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{}, 0.0, 0.0,
      std::vector<OutsideMemory>{{.host = "g1", .gpu = "g1/gpu0", .index = 0, .peak_mib = 10240}});
  const auto e = Make({gpu24("g1"), gpu24("g2")}, {}, {.profiles = book});
  ASSERT_NE(e, nullptr);
  const Result<FilterResult> big = e->Filter(Args(SharePod("big", 667), {"g1", "g2"}));
  ASSERT_TRUE(big);
  EXPECT_THAT(big->kept, ElementsAre(1));
  ASSERT_EQ(big->failed_and_unresolvable.size(), 1u);
  EXPECT_EQ(big->failed_and_unresolvable[0].node, 0u);
  EXPECT_THAT(big->failed_and_unresolvable[0].reason, HasSubstr("GPU memory used outside pods"));
  EXPECT_FALSE(e->Reserve(BindOf("big", "g1")));
  ASSERT_TRUE(e->Filter(Args(SharePod("small", 167), {"g1"})));
  ASSERT_TRUE(e->Reserve(BindOf("small", "g1")));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 287.0 / 2000.0);
}

// A 4-GPU node time-sliced 4 ways advertises nvidia.com/gpu: 16; it has 4 GPUs. With one
// unhealthy GPU the device plugin advertises 12: 3 GPUs.
TEST(ExtenderTimeSlicing, ATimeSlicedNodeHasItsPhysicalGpus) {
  EXPECT_EQ(NodeSpecOf(Nodes({TimeSlicedNode("ts", 4, 4)})[0]).gpu_count, 4);
  Json sick = TimeSlicedNode("ts", 4, 4);
  sick["status"]["allocatable"]["nvidia.com/gpu"] = "12";
  EXPECT_EQ(NodeSpecOf(Nodes({sick})[0]).gpu_count, 3);
}

// A HAMi node registers 2 A100s split 10 ways and advertises nvidia.com/gpu: 20 (2 x 10): it has
// 2 GPUs, each shared by 10 pods; a malformed registration falls back to what it advertises.
TEST(ExtenderTimeSlicing, AHamiNodeHasTheGpusItRegisters) {
  Json hami = NodeJson("hami", 32, "128Gi", 20, "NVIDIA-A100-SXM4-80GB");
  hami["metadata"]["annotations"]["hami.io/node-nvidia-register"] =
      "GPU-a,10,81920,100,NVIDIA-NVIDIA A100-SXM4-80GB,0,true:GPU-b,10,81920,100,NVIDIA-NVIDIA A100-SXM4-80GB,0,true:";
  const NodeGpus gpus = NodeGpusOf(Nodes({hami})[0]);
  EXPECT_EQ(gpus.physical, 2);
  EXPECT_EQ(gpus.replicas, 10);
  hami["metadata"]["annotations"]["hami.io/node-nvidia-register"] = "GPU-a,10:";
  EXPECT_EQ(NodeGpusOf(Nodes({hami})[0]).physical, 16);  // 20 advertised, capped and warned
}

// A pod asking 2 whole GPUs: a time-sliced node can never give it 2 GPUs of its own (two
// replicas may be one GPU); the node of 8 whole GPUs can.
TEST(ExtenderTimeSlicing, APodOfTwoWholeGpusStaysOffTimeSlicedNodes) {
  const auto e = Make({TimeSlicedNode("ts", 4, 4), NodeJson("whole", 32, "128Gi", 8, "A100")}, {});
  ASSERT_NE(e, nullptr);
  const Json pod = PodJson("two", "2", "8Gi", 2);
  const Result<FilterResult> f = e->Filter(Args(pod, {"ts", "whole"}));
  ASSERT_TRUE(f);
  EXPECT_THAT(f->kept, ElementsAre(1));
  EXPECT_THAT(f->failed_and_unresolvable,
              ElementsAre(FieldsAre(0, "needs whole GPUs; this node shares each GPU (time-slicing or MPS replicas)")));
  const Result<std::vector<HostPriority>> p = e->Prioritize(Args(pod, {"ts", "whole"}));
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0].score, kMinExtenderPriority);
  EXPECT_EQ((*p)[1].score, kMaxExtenderPriority);
  EXPECT_FALSE(e->Reserve(BindOf("two", "ts")));
}

// On a node of one GPU time-sliced 4 ways, a pod asking one nvidia.com/gpu and 600 milli by
// annotation takes 600 of the GPU (more than one replica's 250); a second such pod finds 400
// left and is refused, though the device plugin still has 3 replicas to give. A plain
// 1-GPU pod takes one replica (250) and fits.
TEST(ExtenderTimeSlicing, AnAnnotatedShareOnAReplicaIsThatShare) {
  auto annotated = [](const std::string& name, const std::string& node) {
    Json pod = PodJson(name, "1", "1Gi", 1, node);
    pod["metadata"]["annotations"] = {{"alibabacloud.com/gpu-milli", "600"}};
    return pod;
  };
  const auto e = Make({TimeSlicedNode("ts", 1, 4)}, {annotated("a", "ts")});
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.6);
  const Result<FilterResult> b = e->Filter(Args(annotated("b", ""), {"ts"}));
  ASSERT_TRUE(b);
  EXPECT_THAT(b->failed, ElementsAre(FieldsAre(0, "no GPU with enough free share")));
  const Result<FilterResult> plain = e->Filter(Args(PodJson("plain", "1", "1Gi", 1), {"ts"}));
  ASSERT_TRUE(plain);
  EXPECT_THAT(plain->kept, ElementsAre(0));
  ASSERT_TRUE(e->Reserve(BindOf("plain", "ts")));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.85);
}

// A node advertising 20 GPUs is counted with placement's 16: the snapshot's warnings say so,
// naming the node.
TEST(ExtenderNodes, ANodeWithMoreGpusThanPlacementCountsIsAWarning) {
  const auto e = Make({NodeJson("big", 64, "512Gi", 20, "A100")}, {});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(NodeSpecOf(Nodes({NodeJson("big", 64, "512Gi", 20, "A100")})[0]).gpu_count, 16);
  EXPECT_THAT(e->snapshot().warnings,
              ElementsAre("node big: 20 GPUs, placement counts 16 (kMaxGpusPerNode); the other 4 are never offered"));
}

}  // namespace
}  // namespace gpufit::serve

#include "gpufit/serve/extender.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpufit/core/rng.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/placement/registry.h"
#include "gpufit/serve/restart_recovery.h"
#include "serve_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::FieldsAre;
using ::testing::HasSubstr;
using testing::NodeJson;
using ::testing::Pair;
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
                               const std::string& policy = "gpufit") {
  Result<std::unique_ptr<Extender>> e = Extender::FromSnapshot(Nodes(nodes), Pods(pods), {.policy = policy});
  EXPECT_TRUE(e) << e.error().message;
  return e ? std::move(*e) : nullptr;
}

// n1 has 8 cores and 2 GPUs, 6 cores and 1 GPU of them taken by a running pod; n2 has 4 cores and
// 1 T4, all taken; n3 has no GPU. The reasons are the placement filters' (placement/filters.cpp).
TEST(Extender, FilterSeparatesNotNowFromNeverAndUnknownNodes) {
  const auto e = Make(
      {NodeJson("n1", 8, "64Gi", 2, "A100"), NodeJson("n2", 4, "32Gi", 1, "T4"), NodeJson("n3", 16, "64Gi", 0, "")},
      {PodJson("busy", "6", "8Gi", 1, "n1"), PodJson("other", "4", "8Gi", 1, "n2")});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->snapshot().pods_placed, 2);
  // A 4-core, 1-GPU pod: n1 has 2 cores left (it would fit once "busy" leaves); n2's one GPU is
  // taken (the gpu filter runs before the cpu one); n3 has no GPU at all; "ghost" is not in the snapshot.
  const Result<FilterResult> r = e->Filter(Args(PodJson("p", "4", "8Gi", 1), {"n1", "n2", "n3", "ghost"}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->kept.empty());
  EXPECT_THAT(r->failed, ElementsAre(FieldsAre(0, "insufficient cpu"), FieldsAre(1, "too few idle GPUs")));
  EXPECT_THAT(r->failed_and_unresolvable, ElementsAre(FieldsAre(2, "too few GPUs on the node"),
                                                      FieldsAre(3, "not in gpufit's snapshot of the cluster")));
  // A 2-core pod with one GPU fits n1 only (n2's 4 cores are all taken).
  const Result<FilterResult> small = e->Filter(Args(PodJson("q", "2", "8Gi", 1), {"n2", "n1"}));
  ASSERT_TRUE(small);
  EXPECT_THAT(small->kept, ElementsAre(1));
}

TEST(Extender, FinishedPodsAndPendingPodsTakeNothing) {
  Json done = PodJson("done", "8", "8Gi", 1, "n1");
  done["status"]["phase"] = "Succeeded";
  const auto e = Make({NodeJson("n1", 8, "64Gi", 1, "A100")}, {done, PodJson("waiting", "8", "8Gi", 1)});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->snapshot().pods_placed, 0);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.0);
  const Result<FilterResult> r = e->Filter(Args(PodJson("p", "8", "8Gi", 1), {"n1"}));
  ASSERT_TRUE(r);
  EXPECT_THAT(r->kept, ElementsAre(0));
}

TEST(Extender, SnapshotPodsThatDoNotFitAreCountedNotPlaced) {
  const auto e =
      Make({NodeJson("n1", 8, "64Gi", 1, "A100")},
           {PodJson("a", "6", "8Gi", 1, "n1"), PodJson("b", "6", "8Gi", 1, "n1"), PodJson("c", "1", "1Gi", 0, "gone")});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->snapshot().pods_placed, 1);
  EXPECT_EQ(e->snapshot().pods_not_fitting, 2);
  EXPECT_THAT(e->snapshot().warnings,
              ElementsAre(HasSubstr("pod ml/b: does not fit node n1"), HasSubstr("pod ml/c: node gone is not in")));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 1.0);
}

// A node whose allocatable nvidia.com/gpu is 0 (every device unhealthy) has no GPU, whatever
// its capacity and labels say; without the allocatable key, the GFD count label counts.
TEST(Extender, NodeGpusFromAllocatableEvenWhenZero) {
  Json sick = NodeJson("sick", 16, "64Gi", 4, "A100");
  sick["status"]["allocatable"]["nvidia.com/gpu"] = "0";
  sick["metadata"]["labels"]["nvidia.com/gpu.count"] = "4";
  EXPECT_EQ(NodeSpecOf(Nodes({sick})[0]).gpu_count, 0);
  Json labelled = NodeJson("labelled", 16, "64Gi", 0, "A100");
  labelled["metadata"]["labels"]["nvidia.com/gpu.count"] = "2";
  EXPECT_EQ(NodeSpecOf(Nodes({labelled})[0]).gpu_count, 2);
  EXPECT_EQ(NodeSpecOf(Nodes({NodeJson("ok", 16, "64Gi", 8, "A100")})[0]).gpu_count, 8);
}

// best-fit (placement/baseline_scores.cpp): score = trunc(100 * (1 - waste)), waste = 0.5 * CPU
// left / 128,000 m + 0.5 * milli-GPU left / 8,000. For an 8-core, 1-GPU pod:
//   a (64 cores, 4 GPUs): waste 0.5*56000/128000 + 0.5*3000/8000 = 0.40625 -> 59
//   b (32 cores, 2 GPUs): 0.09375 + 0.0625 = 0.15625 -> 84
//   c (16 cores, 1 GPU):  0.03125 + 0 -> 96
// c, the choice, gets 10; the others are mapped onto 0..9: a 0, b round(9 * 25 / 37) = 6; the
// CPU-only node and the unknown 0.
TEST(Extender, PrioritizeMapsPolicyValuesOntoZeroToTen) {
  const auto e = Make({NodeJson("a", 64, "256Gi", 4, "A100"), NodeJson("b", 32, "128Gi", 2, "A100"),
                       NodeJson("c", 16, "64Gi", 1, "A100"), NodeJson("cpu", 16, "64Gi", 0, "")},
                      {}, "best-fit");
  ASSERT_NE(e, nullptr);
  const Result<std::vector<HostPriority>> p =
      e->Prioritize(Args(PodJson("p", "8", "8Gi", 1), {"a", "b", "c", "cpu", "x"}));
  ASSERT_TRUE(p) << p.error().message;
  std::vector<std::pair<std::string, std::int64_t>> got;
  for (const HostPriority& h : *p) got.emplace_back(h.host, h.score);
  EXPECT_THAT(got, ElementsAre(Pair("a", 0), Pair("b", 6), Pair("c", 10), Pair("cpu", 0), Pair("x", 0)));
}

// The node the simulator's policy would choose (Policy::Place over the same state, with the
// node order simulate draws for the same seed) is the one prioritize ranks 10, alone.
TEST(Extender, TopPriorityIsThePoliciesOwnChoice) {
  const std::vector<Json> nodes = {NodeJson("a", 64, "256Gi", 4, "A100"), NodeJson("b", 32, "128Gi", 2, "A100"),
                                   NodeJson("c", 96, "384Gi", 8, "A100"), NodeJson("d", 16, "64Gi", 1, "A100")};
  const std::vector<Json> pods = {PodJson("r1", "20", "8Gi", 1, "a"), PodJson("r2", "4", "8Gi", 2, "c"),
                                  PodJson("r3", "30", "8Gi", 1, "b")};
  const auto e = Make(nodes, pods);
  ASSERT_NE(e, nullptr);
  const Json pod = PodJson("p", "8", "8Gi", 1);
  const Result<std::vector<HostPriority>> p = e->Prioritize(Args(pod, {"a", "b", "c", "d"}));
  ASSERT_TRUE(p);

  // The oracle: the same cluster built by hand from NodeSpecOf / DeclaredRequest, and the
  // registry's gpufit policy deciding as `simulate` does.
  std::vector<NodeSpec> specs;
  for (const KubeNode& n : Nodes(nodes)) specs.push_back(NodeSpecOf(n));
  ClusterState cluster = *ClusterState::FromSpecs(specs);
  std::vector<PodSpec> running;
  for (const KubePod& k : Pods(pods)) running.push_back(*DeclaredRequest(k));
  auto target = std::make_shared<const std::vector<TypicalPod>>(TypicalPods(running, cluster));
  Policy policy = *MakePolicy("gpufit", PolicyContext{target});
  Rng order_rng(42);  // ExtenderOptions::seed's default, drawn as sim/engine.cpp draws it
  std::vector<int> order = {0, 1, 2, 3};
  order_rng.Shuffle(order);
  policy.SetNodeOrder(order);
  for (std::size_t i = 0; i < running.size(); ++i) {
    const Workload w = cluster.WorkloadFor(running[i]);
    const int id = static_cast<int>(std::string("acb").at(i) - 'a');  // r1 on a, r2 on c, r3 on b
    ASSERT_EQ(cluster.node_name(id), std::string(1, "acb"[i]));
    GpuSet gpus = 0;  // the lowest idle GPUs, as the extender assumes
    for (int g = 0, left = w.gpu_count; left > 0; ++g) {
      if (cluster.node(id).gpu_free[static_cast<std::size_t>(g)].value == 1000) {
        gpus |= GpuSet{1} << g;
        --left;
      }
    }
    cluster.Place(id, w, gpus);
  }
  Rng rng(1);
  const Policy::Decision d = policy.Place(cluster.WorkloadFor(*DeclaredRequest(Pods({pod})[0])), cluster, rng);
  ASSERT_GE(d.node, 0);
  const std::string chosen = cluster.node_name(d.node);
  int tens = 0;
  std::int64_t chosen_score = -1;
  for (const HostPriority& h : *p) {
    tens += h.score == kMaxExtenderPriority ? 1 : 0;
    if (h.host == chosen) chosen_score = h.score;
  }
  EXPECT_EQ(tens, 1);
  EXPECT_EQ(chosen_score, kMaxExtenderPriority) << "the policy chose " << chosen;
  EXPECT_EQ(p->size(), 4u);
}

BindingArgs BindOf(const std::string& pod, const std::string& node) {
  return {.pod_name = pod, .pod_namespace = "ml", .pod_uid = "uid-" + pod, .node = node};
}

// A refreshed snapshot: n1 (2 GPUs) runs "old" from the first snapshot, and gpufit bound "a"
// and "b" there since. The second snapshot says "old" ended, shows "a" bound (kubectl caught its
// Binding) but not yet "b", and adds n2. By hand: "old" frees its GPU; "a" is counted once (the
// snapshot's), "b" keeps its reservation on its GPU; so n1 has 2 of 2 GPUs taken and n2 none:
// 2 of 3 GPUs allocated. A pod on n2 is now possible; a third reservation on n1 is not.
TEST(Extender, ReconcileFreesEndedPodsAndKeepsReservationsTheSnapshotLacks) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100")}, {PodJson("old", "2", "8Gi", 1, "n1")});
  ASSERT_NE(e, nullptr);
  for (const std::string pod : {"a", "b"}) ASSERT_TRUE(e->Filter(Args(PodJson(pod, "2", "8Gi", 1), {"n1"})));
  const Result<Reservation> a = e->Reserve(BindOf("a", "n1"));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->gpus, GpuSet{2});                // GPU 0 is old's (the snapshot's lowest idle GPU)
  EXPECT_FALSE(e->Reserve(BindOf("b", "n1")));  // both GPUs taken
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 1.0);

  Json old = PodJson("old", "2", "8Gi", 1, "n1");
  old["status"]["phase"] = "Succeeded";
  Result<SnapshotStats> r =
      e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 2, "A100")}), Pods({old, PodJson("a", "2", "8Gi", 1, "n1")}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pods_placed, 1);  // a
  EXPECT_EQ(r->reservations_in_snapshot, 1);
  EXPECT_EQ(r->reservations_kept, 0);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);  // old's GPU is free again
  const Result<Reservation> b = e->Reserve(BindOf("b", "n1"));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->gpus, GpuSet{2});  // a holds GPU 0 in the new snapshot's reading

  r = e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 2, "A100"), NodeJson("n2", 8, "64Gi", 1, "A100")}),
                   Pods({PodJson("a", "2", "8Gi", 1, "n1")}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->snapshots, 3);
  EXPECT_EQ(r->reservations_kept, 1);  // b: not in this snapshot yet
  EXPECT_EQ(r->nodes, 2);
  EXPECT_NEAR(e->GpuAllocationRatio(), 2.0 / 3.0, 1e-12);
  ASSERT_TRUE(e->Filter(Args(PodJson("c", "2", "8Gi", 1), {"n1", "n2"})));
  const Result<FilterResult> f = e->Filter(Args(PodJson("c", "2", "8Gi", 1), {"n1", "n2"}));
  ASSERT_TRUE(f);
  EXPECT_THAT(f->kept, ElementsAre(1));
  EXPECT_THAT(f->failed, ElementsAre(FieldsAre(0, "too few idle GPUs")));
  EXPECT_FALSE(e->Reserve(BindOf("c", "n1")));
  EXPECT_TRUE(e->Reserve(BindOf("c", "n2")));

  // A snapshot without n2: c's reservation has no node left; b is not shown bound by a second
  // pods listing since its bind (listed after the first was written, so after the bind; a new
  // listing, with a new pending pod e): deleted, or its Binding never took. Both are dropped,
  // with warnings: only a's GPU is taken (1 of 2).
  r = e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 2, "A100")}),
                   Pods({PodJson("a", "2", "8Gi", 1, "n1"), PodJson("e", "1", "1Gi", 0)}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->reservations_dropped, 2);
  EXPECT_THAT(r->warnings,
              ::testing::UnorderedElementsAre(
                  "reservation of ml/c on node n2 dropped: the node is not in the new snapshot",
                  "reservation of ml/b on node n1 dropped: two snapshots taken after its bind do not show it bound "
                  "(deleted, or its Binding never took)"));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
  // A snapshot that cannot be read as a cluster (no nodes) is an error and changes nothing.
  EXPECT_FALSE(e->Reconcile({}, {}));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
  EXPECT_EQ(e->snapshot().snapshots, 4);

  // d is bound, then the snapshot shows a new pod ml/d (another UID): the old one is gone.
  ASSERT_TRUE(e->Filter(Args(PodJson("d", "2", "8Gi", 1), {"n1"})));
  ASSERT_TRUE(e->Reserve(BindOf("d", "n1")));
  Json again = PodJson("d", "2", "8Gi", 1);
  again["metadata"]["uid"] = "uid-d-2";
  r = e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 2, "A100")}), Pods({PodJson("a", "2", "8Gi", 1, "n1"), again}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_THAT(r->warnings, ElementsAre("reservation of ml/d on node n1 dropped: the snapshot has a pod of that name "
                                       "with another UID (uid-d-2)"));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
}

// The bind reserves the API server's pod's request, not the filter request's: a filter that said
// 1 GPU for a pod that asks 4 does not get it onto a 2-GPU node; the API's 1-GPU pod goes there.
TEST(Extender, ReserveTakesTheApiServersPodNotTheFilters) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100")}, {});
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->Filter(Args(PodJson("p", "2", "8Gi", 1), {"n1"})));  // forged: 1 GPU
  const KubePod real = Pods({PodJson("p", "2", "8Gi", 4)})[0];
  ReserveFailure why = ReserveFailure::kNone;
  const Result<Reservation> r = e->Reserve(BindOf("p", "n1"), &why, &real);
  ASSERT_FALSE(r);
  EXPECT_EQ(why, ReserveFailure::kNoRoom);
  EXPECT_THAT(r.error().message, HasSubstr("bind ml/p: node n1 can no longer take the pod: too few GPUs on the node"));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.0);
  // The other way round: the filter said 2 GPUs, the API's pod asks 1, which takes 1 of 2.
  ASSERT_TRUE(e->Filter(Args(PodJson("q", "2", "8Gi", 2), {"n1"})));
  const KubePod one = Pods({PodJson("q", "2", "8Gi", 1)})[0];
  ASSERT_TRUE(e->Reserve(BindOf("q", "n1"), nullptr, &one));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
}

// Restart recovery: the files (listed before) show n1 idle; the API server shows a and b bound
// there since and c still pending. a and b are adopted (2 of 2 GPUs taken, by hand), c is not,
// and a pod the files already show bound is not counted twice.
TEST(Extender, AdoptBoundPodsCountsWhatTheApiServerShowsBound) {
  const std::vector<KubePod> listed = Pods({PodJson("old", "2", "8Gi", 1, "n2")});
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100"), NodeJson("n2", 8, "64Gi", 1, "A100")},
                      {PodJson("old", "2", "8Gi", 1, "n2")});
  ASSERT_NE(e, nullptr);
  EXPECT_NEAR(e->GpuAllocationRatio(), 1.0 / 3.0, 1e-12);
  const std::vector<KubePod> api =
      Pods({PodJson("old", "2", "8Gi", 1, "n2"), PodJson("a", "2", "8Gi", 1, "n1"), PodJson("b", "2", "8Gi", 1, "n1"),
            PodJson("c", "2", "8Gi", 1), PodJson("gone", "2", "8Gi", 1, "n9")});
  const Recovered r = AdoptBoundPods(*e, listed, api);
  EXPECT_EQ(r.adopted, 2);
  EXPECT_THAT(r.warnings, ElementsAre("pod ml/gone: bound to n9, which is not in gpufit's snapshot of the cluster"));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 1.0);  // 3 of 3
  ASSERT_TRUE(e->Filter(Args(PodJson("c", "2", "8Gi", 1), {"n1", "n2"})));
  const Result<FilterResult> f = e->Filter(Args(PodJson("c", "2", "8Gi", 1), {"n1", "n2"}));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->kept.empty());
  // A snapshot that shows a and b bound takes them over: counted once.
  ASSERT_TRUE(e->Reconcile(Nodes({NodeJson("n1", 8, "64Gi", 2, "A100"), NodeJson("n2", 8, "64Gi", 1, "A100")}), api));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 1.0);
}

// A node that shrinks (8 GPUs, then 4) while gpufit's bind holds GPUs 6 and 7 of it: the
// reservation moves to GPUs the node still has, so a 4-GPU pod no longer fits beside it.
TEST(Extender, ReconcileMovesAReservationOffGpusTheNodeNoLongerHas) {
  const auto e = Make({NodeJson("a", 32, "64Gi", 8, "A100")}, {PodJson("t", "2", "8Gi", 6, "a")});
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->Filter(Args(PodJson("p", "2", "8Gi", 2), {"a"})));
  const Result<Reservation> p = e->Reserve(BindOf("p", "a"));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->gpus, GpuSet{0b11000000});
  ASSERT_TRUE(e->Reconcile(Nodes({NodeJson("a", 32, "64Gi", 4, "A100")}), {}));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);  // 2 of 4
  const Result<FilterResult> f = e->Filter(Args(PodJson("q", "2", "8Gi", 4), {"a"}));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->kept.empty());
  EXPECT_THAT(f->failed, ElementsAre(FieldsAre(0, "too few idle GPUs")));
}

// Bind takes the pod's request from its filter request, checks the node again and puts the pod
// in the state: n1 (2 GPUs, 8 cores) takes a 1-GPU pod, then a second; a third finds no idle GPU.
// Release gives the GPU back.
TEST(Extender, ReserveUpdatesTheStateAndReleaseUndoesIt) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100")}, {});
  ASSERT_NE(e, nullptr);
  for (const std::string pod : {"a", "b", "c"}) ASSERT_TRUE(e->Filter(Args(PodJson(pod, "2", "8Gi", 1), {"n1"})));
  const Result<Reservation> a = e->Reserve(BindOf("a", "n1"));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->pod, "ml/a");
  EXPECT_EQ(a->gpus, GpuSet{1});  // the picker's first idle GPU
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
  const Result<Reservation> b = e->Reserve(BindOf("b", "n1"));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->gpus, GpuSet{2});
  const Result<Reservation> c = e->Reserve(BindOf("c", "n1"));
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, Code::kFailedPrecondition);
  EXPECT_THAT(c.error().message, HasSubstr("bind ml/c: node n1 can no longer take the pod: too few idle GPUs"));
  // The filter sees the extender's own decisions.
  const Result<FilterResult> full = e->Filter(Args(PodJson("d", "1", "1Gi", 1), {"n1"}));
  ASSERT_TRUE(full);
  EXPECT_THAT(full->failed, ElementsAre(FieldsAre(0, "too few idle GPUs")));
  e->Release(BindOf("a", "n1"));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
  const Result<Reservation> again = e->Reserve(BindOf("c", "n1"));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->gpus, GpuSet{1});
}

TEST(Extender, ReserveRefusesUnknownPodsNodesAndDoubleBinds) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100")}, {});
  ASSERT_NE(e, nullptr);
  const Result<Reservation> unseen = e->Reserve(BindOf("never-filtered", "n1"));
  ASSERT_FALSE(unseen);
  EXPECT_THAT(unseen.error().message, HasSubstr("no filter request named this pod"));
  ASSERT_TRUE(e->Filter(Args(PodJson("p", "1", "1Gi", 1), {"n1"})));
  const Result<Reservation> ghost = e->Reserve(BindOf("p", "ghost"));
  ASSERT_FALSE(ghost);
  EXPECT_EQ(ghost.error().code, Code::kNotFound);
  ASSERT_TRUE(e->Reserve(BindOf("p", "n1")));
  const Result<Reservation> twice = e->Reserve(BindOf("p", "n1"));
  ASSERT_FALSE(twice);
  EXPECT_THAT(twice.error().message, HasSubstr("already bound by gpufit to node n1"));
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 0.5);
}

// A UID filtered under one name does not bind another pod's name.
TEST(Extender, ReserveChecksTheNameOfTheUid) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100")}, {});
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->Filter(Args(PodJson("u1", "1", "1Gi", 1), {"n1"})));
  const Result<Reservation> other =
      e->Reserve({.pod_name = "zzz", .pod_namespace = "ml", .pod_uid = "uid-u1", .node = "n1"});
  ASSERT_FALSE(other);
  EXPECT_THAT(other.error().message, HasSubstr("no filter request named this pod with UID uid-u1"));
  EXPECT_TRUE(e->Reserve(BindOf("u1", "n1")));
}

// A node named twice is answered once: kube-scheduler adds an extender's scores per host.
TEST(Extender, DuplicateNodeNamesAreAnsweredOnce) {
  const auto e = Make({NodeJson("n1", 8, "64Gi", 2, "A100"), NodeJson("n2", 8, "64Gi", 1, "A100")}, {});
  ASSERT_NE(e, nullptr);
  const Result<FilterResult> f = e->Filter(Args(PodJson("p", "1", "1Gi", 2), {"n1", "n2", "n1", "n2"}));
  ASSERT_TRUE(f);
  EXPECT_THAT(f->kept, ElementsAre(0));
  EXPECT_THAT(f->failed_and_unresolvable, ElementsAre(FieldsAre(1, "too few GPUs on the node")));
  const Result<std::vector<HostPriority>> p = e->Prioritize(Args(PodJson("p", "1", "1Gi", 1), {"n1", "n1"}));
  ASSERT_TRUE(p);
  ASSERT_EQ(p->size(), 2U);
  EXPECT_EQ((*p)[0].score, kMaxExtenderPriority);
  EXPECT_EQ((*p)[1].score, kMinExtenderPriority);
}

// A node's memory rounds down to whole MiB, a pod's request up: 1025Ki holds a 1Mi pod, not 2Mi.
TEST(Extender, NodeMemoryRoundsDown) {
  Json node = NodeJson("n1", 8, "1025Ki", 0, "");
  const auto e = Make({node}, {});
  ASSERT_NE(e, nullptr);
  EXPECT_THAT(e->Filter(Args(PodJson("one", "1", "1Mi", 0), {"n1"}))->kept, ElementsAre(0));
  EXPECT_THAT(e->Filter(Args(PodJson("two", "1", "2Mi", 0), {"n1"}))->failed_and_unresolvable,
              ElementsAre(FieldsAre(0, "insufficient memory")));
}

// Concurrent binds for the last free GPU: n1 has one GPU; 16 threads each bind their own 1-GPU
// pod to it at once. Exactly one wins; the state holds exactly one GPU's worth.
TEST(Extender, ConcurrentBindsForTheLastFreeGpuExactlyOneWins) {
  const auto e = Make({NodeJson("n1", 64, "256Gi", 1, "A100"), NodeJson("n2", 64, "256Gi", 1, "A100")},
                      {PodJson("busy", "1", "1Gi", 1, "n2")});
  ASSERT_NE(e, nullptr);
  constexpr int kThreads = 16;
  for (int t = 0; t < kThreads; ++t)
    ASSERT_TRUE(e->Filter(Args(PodJson("p" + std::to_string(t), "1", "1Gi", 1), {"n1"})));
  std::atomic<int> wins{0}, no_room{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      const Result<Reservation> r = e->Reserve(BindOf("p" + std::to_string(t), "n1"));
      if (r) {
        ++wins;
      } else if (r.error().message.find("too few idle GPUs") != std::string::npos) {
        ++no_room;
      }
    });
  }
  go = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(no_room.load(), kThreads - 1);
  EXPECT_DOUBLE_EQ(e->GpuAllocationRatio(), 1.0);
}

}  // namespace
}  // namespace gpufit::serve

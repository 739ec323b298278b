#include "gpufit/training/cluster_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gpufit/training/checkpoint.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

constexpr double kNow = 1767225600 + 36000;  // the end of the range
constexpr double kH = 3600;

struct PodArgs {
  std::string ns = "ml", name, node = "gpu-0";
  int gpus = 8;
  WorkloadRef owner{};
  std::map<std::string, std::string> labels{}, annotations{};
  std::string phase = "Running";
  double started_h_ago = 10;
};

KubePod MakePod(const PodArgs& a) {
  KubeContainer c{.name = "main", .image = "trainer:1", .resources = {}, .kind = KubeContainer::Kind::kApp};
  if (a.gpus > 0) c.resources.devices["nvidia.com/gpu"] = a.gpus;
  KubePod p;
  p.namespace_name = a.ns;
  p.name = a.name;
  p.node_name = a.node;
  p.phase = a.phase;
  p.labels = a.labels;
  p.annotations = a.annotations;
  p.owner = a.owner;
  p.containers = {c};
  p.started_s = kNow - a.started_h_ago * kH;
  return p;
}

KubeNode MakeNode(const std::string& name, const std::string& capacity) {
  KubeNode n;
  n.name = name;
  n.capacity_type = capacity;
  n.gpu_count = 8;
  return n;
}

ClusterJobsOptions Options() {
  ClusterJobsOptions o;
  o.now_s = kNow;
  o.pods_source = "pods.json";
  o.default_gpu_model = "a100-80gb";
  o.default_gpu_model_source = "--gpu";
  o.gpu_memory_of_model["a100-80gb"] = MiB{81920};
  return o;
}

SpotEstimate Band() { return *EstimateSpotRate(nullptr); }

const TrainingJob* Find(const TrainingWorkload& w, const std::string& name) {
  for (const TrainingJob& j : w.jobs)
    if (j.name == name) return &j;
  return nullptr;
}

TEST(TrainingWorkloadFromCluster, EachTrainingOwnerKindBecomesAJobAndServingPodsStayOut) {
  const std::vector<KubePod> pods = {
      MakePod({.name = "ft-0", .owner = {"Job", "ft"}}),
      MakePod({.name = "llm-worker-0",
               .node = "gpu-1",
               .owner = {"PyTorchJob", "llm"},
               .labels = {{"training.kubeflow.org/job-name", "llm"}}}),
      MakePod({.name = "llm-worker-1",
               .node = "gpu-2",
               .owner = {"PyTorchJob", "llm"},
               .labels = {{"training.kubeflow.org/job-name", "llm"}}}),
      MakePod({.name = "js-workers-0-0",
               .node = "gpu-3",
               .gpus = 4,
               .owner = {"Job", "js-workers-0"},
               .labels = {{"jobset.sigs.k8s.io/jobset-name", "js"}}}),
      MakePod({.name = "rl-raycluster-worker-a",
               .node = "gpu-4",
               .owner = {"RayCluster", "rl-raycluster"},
               .labels = {{"ray.io/originated-from-crd", "RayJob"},
                          {"ray.io/originated-from-cr-name", "rl"},
                          {"ray.io/cluster", "rl-raycluster"}}}),
      // Not training: a Deployment, a LeaderWorkerSet, a RayService, a finished Job pod and a CPU-only Job pod.
      MakePod({.name = "web-6c9f-x", .owner = {"Deployment", "web"}}),
      MakePod({.name = "lws-0", .owner = {"LeaderWorkerSet", "lws"}}),
      MakePod({.name = "svc-worker",
               .owner = {"RayCluster", "svc"},
               .labels = {{"ray.io/originated-from-crd", "RayService"}, {"ray.io/cluster", "svc"}}}),
      MakePod({.name = "done-0", .owner = {"Job", "done"}, .phase = "Succeeded"}),
      MakePod({.name = "prep-0", .gpus = 0, .owner = {"Job", "prep"}}),
  };
  const std::vector<KubeNode> nodes = {MakeNode("gpu-0", "spot"), MakeNode("gpu-1", "on-demand"),
                                       MakeNode("gpu-2", "spot")};
  const Result<TrainingWorkload> w = TrainingWorkloadFromCluster(pods, nodes, Band(), Options());
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->jobs.size(), 4u);
  const TrainingJob* ft = Find(*w, "ft");
  const TrainingJob* llm = Find(*w, "llm");
  const TrainingJob* js = Find(*w, "js");
  const TrainingJob* rl = Find(*w, "rl");
  ASSERT_TRUE(ft && llm && js && rl);
  EXPECT_EQ(ft->pods, 1);
  EXPECT_EQ(llm->pods, 2);
  EXPECT_EQ(llm->gpu_count, 8);
  EXPECT_EQ(js->gpu_count, 4);
  EXPECT_EQ(rl->gang, "");  // one pod
  const std::size_t l = static_cast<std::size_t>(llm - w->jobs.data());
  EXPECT_EQ(w->running[l]->nodes, (std::vector<std::string>{"gpu-1", "gpu-2"}));
  EXPECT_EQ(w->origins[l]->capacity, "mixed");
  EXPECT_EQ(w->origins[l]->owner, "PyTorchJob/llm");
  EXPECT_EQ(w->origins[static_cast<std::size_t>(ft - w->jobs.data())]->capacity, "spot");
  EXPECT_EQ(w->origins[static_cast<std::size_t>(js - w->jobs.data())]->capacity, "unknown");
  // Nodes: the five the jobs run on, spot where labelled so.
  ASSERT_EQ(w->nodes.size(), 5u);
  EXPECT_EQ(w->nodes[0].name, "gpu-0");
  EXPECT_EQ(w->nodes[0].capacity, CapacityType::kSpot);
}

TEST(TrainingWorkloadFromCluster, AnnotationsGiveTheFigures) {
  const std::map<std::string, std::string> a = {{kWorkHoursAnnotation, "30"},
                                                {kCheckpointWriteAnnotation, "90"},
                                                {kRestoreAnnotation, "300"},
                                                {kCheckpointSizeAnnotation, "100"},
                                                {kCheckpointingAnnotation, "transparent"}};
  const Result<TrainingWorkload> w = TrainingWorkloadFromCluster(
      {MakePod({.name = "ft-0", .owner = {"Job", "ft"}, .annotations = a, .started_h_ago = 10})}, {}, Band(),
      Options());
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->jobs.size(), 1u);
  const TrainingJob& j = w->jobs[0];
  EXPECT_DOUBLE_EQ(j.work.count(), 20 * kH);  // 30 h of work, 10 h done
  EXPECT_DOUBLE_EQ(j.checkpoint_write.count(), 90);
  EXPECT_DOUBLE_EQ(j.restore.count(), 300);
  EXPECT_EQ(j.checkpoint_size.value, 100 * 1024);
  EXPECT_EQ(j.checkpointing, Checkpointing::kTransparent);
  const JobOrigin& o = *w->origins[0];
  EXPECT_DOUBLE_EQ(o.runtime_so_far_h, 10);
  EXPECT_THAT(o.sources.at("work_h"), HasSubstr("annotation gpufit.io/work-hours"));
  EXPECT_EQ(o.sources.at("restore_s"), "annotation gpufit.io/restore-seconds");
  EXPECT_EQ(o.sources.at("checkpointing"), "annotation gpufit.io/checkpointing");
}

TEST(TrainingWorkloadFromCluster, WithoutAnnotationsTheAssumptionsAreStated) {
  const WorkloadRef owner{"PyTorchJob", "llm"};
  const std::vector<KubePod> pods = {MakePod({.name = "llm-0", .node = "gpu-0", .owner = owner, .started_h_ago = 5}),
                                     MakePod({.name = "llm-1", .node = "gpu-1", .owner = owner, .started_h_ago = 4})};
  // No GPU memory use known: 16 GPUs x 80 GiB = 1280 GiB; write 1280 / (16 x 0.25) = 320 s,
  // restore 120 + 1280 / (16 x 0.5) = 280 s; work = the runtime so far, 5 h.
  Result<TrainingWorkload> w = TrainingWorkloadFromCluster(pods, {}, Band(), Options());
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->jobs[0].checkpoint_size.value, 1280 * 1024);
  EXPECT_DOUBLE_EQ(w->jobs[0].checkpoint_write.count(), 320);
  EXPECT_DOUBLE_EQ(w->jobs[0].restore.count(), 280);
  EXPECT_DOUBLE_EQ(w->jobs[0].work.count(), 5 * kH);
  EXPECT_EQ(w->jobs[0].checkpointing, Checkpointing::kApplication);
  EXPECT_THAT(w->origins[0]->sources.at("work_h"), HasSubstr("assumption: remaining work = runtime so far"));
  EXPECT_THAT(w->origins[0]->sources.at("checkpoint_size_gib"), HasSubstr("16 GPUs x 80 GiB"));
  // With DCGM's peaks (40,000 + 30,000 MiB): 68.359375 GiB, written in 68.359375 / 4 s.
  ClusterJobsOptions o = Options();
  o.gpu_memory_used = {{"ml/llm-0", MiB{40000}}, {"ml/llm-1", MiB{30000}}};
  o.gpu_memory_source = "DCGM_FI_DEV_FB_USED";
  w = TrainingWorkloadFromCluster(pods, {}, Band(), o);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->jobs[0].checkpoint_size.value, 70000);
  EXPECT_NEAR(w->jobs[0].checkpoint_write.count(), 70000.0 / 1024 / 4, 1e-9);
  EXPECT_THAT(w->origins[0]->sources.at("checkpoint_size_gib"), HasSubstr("DCGM_FI_DEV_FB_USED"));
  // A job younger than an hour gets an hour of remaining work.
  w = TrainingWorkloadFromCluster({MakePod({.name = "new-0", .owner = {"Job", "new"}, .started_h_ago = 0.25})}, {},
                                  Band(), Options());
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->jobs[0].work.count(), kH);
}

TEST(TrainingWorkloadFromCluster, BadAnnotationNamesThePodAndTheKey) {
  const Result<TrainingWorkload> w = TrainingWorkloadFromCluster(
      {MakePod({.name = "ft-0", .owner = {"Job", "ft"}, .annotations = {{kWorkHoursAnnotation, "12h"}}})}, {}, Band(),
      Options());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, Code::kInvalidArgument);
  EXPECT_THAT(w.error().message, HasSubstr("pods.json: pod ml/ft-0: annotation gpufit.io/work-hours"));
  EXPECT_THAT(w.error().message, HasSubstr("'12h'"));
  const Result<TrainingWorkload> c = TrainingWorkloadFromCluster(
      {MakePod({.name = "ft-0", .owner = {"Job", "ft"}, .annotations = {{kCheckpointingAnnotation, "sometimes"}}})}, {},
      Band(), Options());
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, HasSubstr("annotation gpufit.io/checkpointing"));
}

TEST(TrainingWorkloadFromCluster, AnnotationAbovePhysicalBoundIsBadInput) {
  // Bounds by hand: 10 years = 10 x 365.25 x 24 = 87,660 h; 7 days = 604,800 s; 1 PiB = 2^20 GiB.
  const std::pair<const char*, std::string> cases[] = {
      {kWorkHoursAnnotation, "1e308"},     {kWorkHoursAnnotation, "87661"},
      {kRestoreAnnotation, "1e300"},       {kCheckpointWriteAnnotation, "604801"},
      {kCheckpointSizeAnnotation, "1e30"}, {kCheckpointSizeAnnotation, "1048577"}};
  for (const auto& [key, value] : cases) {
    const Result<TrainingWorkload> w = TrainingWorkloadFromCluster(
        {MakePod({.name = "ft-0", .owner = {"Job", "ft"}, .annotations = {{key, value}}})}, {}, Band(), Options());
    ASSERT_FALSE(w) << key << "=" << value;
    EXPECT_EQ(w.error().code, Code::kInvalidArgument);
    EXPECT_THAT(w.error().message,
                HasSubstr(fmt::format("pod ml/ft-0: annotation {}: '{}' is above the bound", key, value)));
  }
  // At the bounds: accepted.
  const Result<TrainingWorkload> ok =
      TrainingWorkloadFromCluster({MakePod({.name = "ft-0",
                                            .owner = {"Job", "ft"},
                                            .annotations = {{kWorkHoursAnnotation, "87660"},
                                                            {kRestoreAnnotation, "604800"},
                                                            {kCheckpointWriteAnnotation, "604800"},
                                                            {kCheckpointSizeAnnotation, "1048576"}}})},
                                  {}, Band(), Options());
  ASSERT_TRUE(ok) << ok.error().message;
}

TEST(EstimateSpotRate, WithoutHistoryTheCatalogBandIsUsedAndSaid) {
  const Result<SpotEstimate> e = EstimateSpotRate(nullptr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->origin.kind, "catalog band");
  EXPECT_DOUBLE_EQ(e->market.interruptions_per_hour, -std::log(1 - 0.10) / 730);  // 5-10% read at 10%
  EXPECT_THAT(e->market.basis, HasSubstr("no node history"));
}

ClusterHistory History(std::vector<NodePresence> nodes) {
  return ClusterHistory{.since_s = 0,
                        .until_s = 36000,
                        .step_s = 60,
                        .last_grid_s = 36000,
                        .nodes = std::move(nodes),
                        .karpenter_spot_reclaims = std::nullopt,
                        .karpenter_metric = ""};
}

TEST(EstimateSpotRate, ASpotNodeThatDisappearsIsOneReclaimOverTheObservedNodeHours) {
  // Spot node a for the whole 10 h (first grid sample 60 s), b gone after 5 h; the
  // on-demand node does not count. Node-hours: (36000 - 60 + 60) / 3600 + (18000 - 60 + 60) / 3600 = 15.
  ClusterHistory h = History({{.node = "a", .capacity_type = "spot", .first_s = 60, .last_s = 36000},
                              {.node = "b", .capacity_type = "spot", .first_s = 60, .last_s = 18000},
                              {.node = "c", .capacity_type = "on-demand", .first_s = 60, .last_s = 18000}});
  Result<SpotEstimate> e = EstimateSpotRate(&h);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->origin.kind, "cluster history");
  EXPECT_DOUBLE_EQ(e->origin.node_hours, 15);
  EXPECT_DOUBLE_EQ(e->origin.events, 1);
  EXPECT_DOUBLE_EQ(e->market.interruptions_per_hour, 1.0 / 15);
  EXPECT_DOUBLE_EQ(e->market.notice.count(), 120);
  // Karpenter's count wins over the disappearances.
  h.karpenter_spot_reclaims = 2;
  h.karpenter_metric = "karpenter_nodeclaims_disrupted_total";
  e = EstimateSpotRate(&h);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->market.interruptions_per_hour, 2.0 / 15);
  EXPECT_THAT(e->market.basis, HasSubstr("karpenter_nodeclaims_disrupted_total"));
}

TEST(EstimateSpotRate, NoReclaimInShortHistoryKeepsTheBandInLongHistoryTheZeroEventBound) {
  ClusterHistory h = History({{.node = "a", .capacity_type = "spot", .first_s = 60, .last_s = 36000, .gke = true}});
  Result<SpotEstimate> e = EstimateSpotRate(&h);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->origin.kind, "catalog band");  // 3.0 / 10 h is far above the band
  EXPECT_DOUBLE_EQ(e->market.interruptions_per_hour, -std::log(0.9) / 730);
  EXPECT_DOUBLE_EQ(e->market.notice.count(), 30);  // GKE
  // One spot node from 60 s to 1e8 - 60 s without a reclaim: (1e8 - 60) / 3600 = 27,777.76 node-hours,
  // bound 2.9957 / 27,777.76 h, below the band's 1.443e-4.
  h.until_s = h.last_grid_s = 1e8;
  h.nodes[0].last_s = 1e8 - 60;
  e = EstimateSpotRate(&h);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->origin.kind, "cluster history");
  EXPECT_NEAR(e->market.interruptions_per_hour, -std::log(0.05) / ((1e8 - 60) / 3600), 1e-15);
}

TEST(MergeTrainingWorkloads, TheFilesJobsAndSpotRateWin) {
  TrainingWorkload cluster =
      *TrainingWorkloadFromCluster({MakePod({.name = "ft-0", .owner = {"Job", "ft"}}),
                                    MakePod({.name = "pre-0", .node = "gpu-1", .owner = {"Job", "pre"}})},
                                   {}, Band(), Options());
  TrainingWorkload file;
  file.jobs.push_back(TrainingJob{.name = "ft", .gpu_count = 2, .work = Seconds{kH}});
  file.running.emplace_back(std::nullopt);
  file.interruptions.spot = *SpotMarketFromBand("<5%", Seconds{120});
  const TrainingWorkload w = MergeTrainingWorkloads(std::move(cluster), std::move(file));
  ASSERT_EQ(w.jobs.size(), 2u);
  EXPECT_EQ(w.jobs[0].name, "pre");
  EXPECT_TRUE(w.origins[0].has_value());
  EXPECT_EQ(w.jobs[1].name, "ft");
  EXPECT_EQ(w.jobs[1].gpu_count, 2);
  EXPECT_FALSE(w.origins[1].has_value());
  EXPECT_EQ(w.spot_origin->kind, "workload file");
  EXPECT_DOUBLE_EQ(w.interruptions.spot.interruptions_per_hour, -std::log(0.95) / 730);
}

}  // namespace
}  // namespace gpufit

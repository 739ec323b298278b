#include "gpufit/ingest/prometheus/training.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(KsmLabelName, SanitizesThenSnakeCasesAsKubeStateMetricsDoes) {
  EXPECT_EQ(KsmLabelName("label", "eks.amazonaws.com/capacityType"), "label_eks_amazonaws_com_capacity_type");
  EXPECT_EQ(KsmLabelName("label", "karpenter.sh/capacity-type"), "label_karpenter_sh_capacity_type");
  EXPECT_EQ(KsmLabelName("label", "training.kubeflow.org/job-name"), "label_training_kubeflow_org_job_name");
  EXPECT_EQ(KsmLabelName("annotation", "gpufit.io/work-hours"), "annotation_gpufit_io_work_hours");
  EXPECT_EQ(KsmLabelName("label", "nvidia.com/gpu.product"), "label_nvidia_com_gpu_product");
}

PromSeries Series(std::map<std::string, std::string> labels, std::vector<double> t, std::vector<double> v) {
  return PromSeries{.labels = std::move(labels), .time_s = std::move(t), .value = std::move(v)};
}

TEST(ClusterStateFromSeries, PodsNodesAndKarpentersCount) {
  const GridSpec grid{.start_s = 60, .step_s = 60, .samples = 10};  // grid 60..600
  ClusterStateAnswers a;
  const std::map<std::string, std::string> id = {{"namespace", "ml"}, {"pod", "llm-0"}, {"uid", "u"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    std::map<std::string, std::string> l = id;
    l.insert(extra.begin(), extra.end());
    return l;
  };
  // Two containers of 4 GPUs each; a CPU-only pod that must not appear.
  a.gpu_requests = {Series(with({{"container", "a"}, {"node", "n1"}}), {600}, {4}),
                    Series(with({{"container", "b"}, {"node", "n1"}}), {600}, {4})};
  a.running = {Series(with({{"phase", "Running"}}), {600}, {1}),
               Series({{"namespace", "ml"}, {"pod", "cpu-0"}, {"phase", "Running"}}, {600}, {1})};
  a.owner = {
      Series(with({{"owner_kind", "PyTorchJob"}, {"owner_name", "llm"}, {"owner_is_controller", "true"}}), {600}, {1})};
  a.start_time = {Series(id, {600}, {42})};
  a.labels = {Series(with({{"label_training_kubeflow_org_job_name", "llm"}}), {600}, {1})};
  a.annotations = {Series(with({{"annotation_gpufit_io_work_hours", "7"}}), {600}, {1})};
  a.node_labels = {
      Series({{"node", "n1"}, {"label_eks_amazonaws_com_capacity_type", "SPOT"}}, {60, 120, 300}, {1, 1, 1})};
  a.node_info = {Series({{"node", "n1"}}, {360}, {1})};
  // Karpenter: a series present from the start (5 -> 7, a reset to 1: +2 +1) and one created
  // in the range at 1 (counts 1): 4 reclaims.
  a.karpenter_disrupted = {Series({{"reason", "spot_interrupted"}, {"nodepool", "a"}}, {60, 120, 180}, {5, 7, 1}),
                           Series({{"reason", "spot_interrupted"}, {"nodepool", "b"}}, {300}, {1})};
  const PrometheusClusterState s = ClusterStateFromSeries(a, grid, 0, 600);
  ASSERT_EQ(s.pods.size(), 1u);
  const KubePod& p = s.pods[0];
  EXPECT_EQ(p.Key(), "ml/llm-0");
  EXPECT_EQ(p.Devices("nvidia.com/gpu"), 8);
  EXPECT_EQ(p.node_name, "n1");
  EXPECT_EQ(p.owner, (WorkloadRef{"PyTorchJob", "llm"}));
  EXPECT_EQ(p.started_s, 42);
  EXPECT_EQ(p.labels.at("training.kubeflow.org/job-name"), "llm");
  EXPECT_EQ(p.annotations.at("gpufit.io/work-hours"), "7");
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].capacity_type, "spot");
  ASSERT_EQ(s.history.nodes.size(), 1u);
  EXPECT_EQ(s.history.nodes[0].first_s, 60);
  EXPECT_EQ(s.history.nodes[0].last_s, 360);  // kube_node_info's later sample
  EXPECT_EQ(s.history.last_grid_s, 600);
  EXPECT_EQ(s.history.karpenter_spot_reclaims, 4);
  EXPECT_THAT(s.history.karpenter_metric, ::testing::HasSubstr("karpenter_nodeclaims_disrupted_total"));
}

}  // namespace
}  // namespace gpufit

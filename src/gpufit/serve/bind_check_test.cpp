// serve/bind_check.h: each case's expected verdict is read off the Kubernetes rules the header
// cites (NodeSelectorRequirement operators, ToleratesTaint, NodeUnschedulable), by hand.
#include "gpufit/serve/bind_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

const BindingArgs kArgs{.pod_name = "p", .pod_namespace = "ml", .pod_uid = "u-1", .node = "gpu-3"};

Json PendingPod() {
  return Json::parse(R"({"metadata": {"name": "p", "namespace": "ml", "uid": "u-1"},
                         "spec": {"containers": [{"name": "main"}]}, "status": {"phase": "Pending"}})");
}

Json GpuNode() {
  return Json::parse(R"({"metadata": {"name": "gpu-3", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                                                  "nvidia.com/gpu.count": "8", "zone": "a"}},
                         "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                                             {"key": "soft", "effect": "PreferNoSchedule"}]}})");
}

Json Tolerating(Json pod) {
  pod["spec"]["tolerations"] = Json::parse(R"([{"key": "nvidia.com/gpu", "operator": "Exists"}])");
  return pod;
}

std::string Why(const Result<void>& r) { return r ? "" : r.error().message; }

TEST(BindCheck, PendingPodWithTheSameUidPasses) { EXPECT_TRUE(CheckPending(PendingPod(), kArgs)); }

TEST(BindCheck, AnotherUidAnEmptyUidABoundPodAndAnEndedPodAreRefused) {
  BindingArgs other = kArgs;
  other.pod_uid = "u-2";
  EXPECT_EQ(Why(CheckPending(PendingPod(), other)),
            "bind ml/p: the API server's pod has UID 'u-1', the bind request 'u-2' (not the pod scheduled)");
  other.pod_uid = "";
  EXPECT_THAT(Why(CheckPending(PendingPod(), other)), HasSubstr("has no PodUID"));
  Json bound = PendingPod();
  bound["spec"]["nodeName"] = "gpu-1";
  EXPECT_EQ(Why(CheckPending(bound, kArgs)), "bind ml/p: the pod is already bound to 'gpu-1'");
  Json running = PendingPod();
  running["status"]["phase"] = "Running";
  EXPECT_EQ(Why(CheckPending(running, kArgs)), "bind ml/p: the pod is 'Running', not Pending");
  Json deleting = PendingPod();
  deleting["metadata"]["deletionTimestamp"] = "2026-12-06T00:00:00Z";
  EXPECT_EQ(Why(CheckPending(deleting, kArgs)), "bind ml/p: the pod is being deleted");
  Json gated = PendingPod();
  gated["spec"]["schedulingGates"] = Json::parse(R"([{"name": "example.com/quota"}])");
  EXPECT_EQ(Why(CheckPending(gated, kArgs)),
            "bind ml/p: the pod has 1 scheduling gates (it is not to be scheduled yet)");
  const Result<void> r = CheckPending(bound, kArgs);
  EXPECT_EQ(r.error().code, Code::kFailedPrecondition);
}

// Issue 51: a pod of another scheduler (HAMi's, KAI's) is not this extender's to bind, whoever
// asks; a pod without schedulerName is default-scheduler's (the API server's default).
TEST(BindCheck, OnlyPodsOfTheSchedulersItServes) {
  const std::vector<std::string> served = {"default-scheduler", "gpufit-scheduler"};
  EXPECT_TRUE(CheckSchedulerName(PendingPod(), served, kArgs));
  Json gpufit = PendingPod();
  gpufit["spec"]["schedulerName"] = "gpufit-scheduler";
  EXPECT_TRUE(CheckSchedulerName(gpufit, served, kArgs));
  Json hami = PendingPod();
  hami["spec"]["schedulerName"] = "hami-scheduler";
  EXPECT_EQ(Why(CheckSchedulerName(hami, served, kArgs)),
            "bind ml/p: the pod's schedulerName is 'hami-scheduler', not one this extender serves (default-scheduler, "
            "gpufit-scheduler: serve --scheduler-name)");
  EXPECT_FALSE(CheckSchedulerName(PendingPod(), {"gpufit-scheduler"}, kArgs));
}

TEST(BindCheck, NoSchedulePreferAndNoExecuteTaints) {
  // The NoSchedule taint untolerated: refused; PreferNoSchedule is never a refusal.
  EXPECT_EQ(Why(CheckNodeAdmits(PendingPod(), GpuNode(), kArgs)),
            "bind ml/p to gpu-3: the node's taint 'nvidia.com/gpu'='present':NoSchedule is not tolerated");
  EXPECT_TRUE(CheckNodeAdmits(Tolerating(PendingPod()), GpuNode(), kArgs));
  // Operator Equal (the default) needs the value; a wrong effect does not tolerate.
  Json pod = PendingPod();
  pod["spec"]["tolerations"] = Json::parse(R"([{"key": "nvidia.com/gpu", "value": "present"}])");
  EXPECT_TRUE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  pod["spec"]["tolerations"] = Json::parse(R"([{"key": "nvidia.com/gpu", "value": "absent"}])");
  EXPECT_FALSE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  pod["spec"]["tolerations"] =
      Json::parse(R"([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}])");
  EXPECT_FALSE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  // An empty key with Exists tolerates every taint; an empty key with Equal tolerates none.
  pod["spec"]["tolerations"] = Json::parse(R"([{"operator": "Exists"}])");
  EXPECT_TRUE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  pod["spec"]["tolerations"] = Json::parse(R"([{"operator": "Equal", "value": "present"}])");
  EXPECT_FALSE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  // NoExecute counts as NoSchedule does.
  Json node = GpuNode();
  node["spec"]["taints"] = Json::parse(R"([{"key": "maintenance", "effect": "NoExecute"}])");
  EXPECT_EQ(Why(CheckNodeAdmits(PendingPod(), node, kArgs)),
            "bind ml/p to gpu-3: the node's taint 'maintenance':NoExecute is not tolerated");
}

TEST(BindCheck, CordonedNodeNeedsTheUnschedulableToleration) {
  Json node = GpuNode();
  node["spec"] = Json::parse(R"({"unschedulable": true})");
  EXPECT_EQ(Why(CheckNodeAdmits(PendingPod(), node, kArgs)),
            "bind ml/p to gpu-3: the node is unschedulable (cordoned)");
  Json pod = PendingPod();
  pod["spec"]["tolerations"] =
      Json::parse(R"([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])");
  EXPECT_TRUE(CheckNodeAdmits(pod, node, kArgs));
}

TEST(BindCheck, NodeSelector) {
  Json pod = Tolerating(PendingPod());
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  EXPECT_TRUE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  EXPECT_EQ(Why(CheckNodeAdmits(pod, GpuNode(), kArgs)),
            "bind ml/p to gpu-3: the pod's nodeSelector 'nvidia.com/gpu.product'='NVIDIA-A100-SXM4-80GB' does not "
            "match the node (label 'NVIDIA-H100-80GB-HBM3')");
  pod["spec"]["nodeSelector"] = {{"pool", "batch"}};
  EXPECT_THAT(Why(CheckNodeAdmits(pod, GpuNode(), kArgs)), HasSubstr("(no such label)"));
}

// One required term per case; the node's labels: product H100, count "8", zone "a".
struct AffinityCase {
  const char* term;
  bool admits;
};

TEST(BindCheck, RequiredNodeAffinityOperators) {
  const AffinityCase cases[] = {
      {R"({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]})", true},
      {R"({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]})", false},
      {R"({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]})", false},
      {R"({"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["a"]}]})", true},  // absent label
      {R"({"matchExpressions": [{"key": "zone", "operator": "Exists"}]})", true},
      {R"({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]})", false},
      {R"({"matchExpressions": [{"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["4"]}]})", true},
      {R"({"matchExpressions": [{"key": "nvidia.com/gpu.count", "operator": "Gt", "values": ["8"]}]})", false},
      {R"({"matchExpressions": [{"key": "nvidia.com/gpu.count", "operator": "Lt", "values": ["9"]}]})", true},
      {R"({"matchExpressions": [{"key": "zone", "operator": "Lt", "values": ["9"]}]})", false},  // "a" is no integer
      {R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-3"]}]})", true},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["gpu-3"]}]})", false},
      // Both lists in one term must hold.
      {R"({"matchExpressions": [{"key": "zone", "operator": "Exists"}],
           "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-9"]}]})",
       false},
      {R"({})", false},  // an empty term matches no objects
  };
  for (const AffinityCase& c : cases) {
    Json pod = Tolerating(PendingPod());
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
        Json::array({Json::parse(c.term)});
    EXPECT_EQ(static_cast<bool>(CheckNodeAdmits(pod, GpuNode(), kArgs)), c.admits) << c.term;
  }
  // Terms are ORed: one matching term is enough.
  Json pod = Tolerating(PendingPod());
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      Json::parse(R"([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}])");
  EXPECT_TRUE(CheckNodeAdmits(pod, GpuNode(), kArgs));
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      Json::parse(R"([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}])");
  EXPECT_EQ(Why(CheckNodeAdmits(pod, GpuNode(), kArgs)),
            "bind ml/p to gpu-3: no term of the pod's required node affinity matches the node (1 terms)");
  // A preferred term never refuses.
  Json preferred = Tolerating(PendingPod());
  preferred["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = Json::parse(
      R"([{"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}])");
  EXPECT_TRUE(CheckNodeAdmits(preferred, GpuNode(), kArgs));
}

}  // namespace
}  // namespace gpufit::serve

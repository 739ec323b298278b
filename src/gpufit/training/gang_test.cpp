#include "gpufit/training/gang.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(GangOfTest, ReadsEachProjectsKey) {
  struct Case {
    const char* name;
    std::map<std::string, std::string> labels, annotations;
    WorkloadRef owner;
    std::string how;  // empty: no gang
  };
  const Case cases[] = {
      {"kueue pod group",
       {{"kueue.x-k8s.io/pod-group-name", "llm"}},
       {},
       {},
       "label kueue.x-k8s.io/pod-group-name=llm"},
      {"coscheduling", {{"scheduling.x-k8s.io/pod-group", "llm"}}, {}, {}, "label scheduling.x-k8s.io/pod-group=llm"},
      {"volcano podgroup annotation",
       {},
       {{"scheduling.k8s.io/group-name", "pg"}},
       {},
       "annotation scheduling.k8s.io/group-name=pg"},
      {"volcano job", {{"volcano.sh/job-name", "vc"}}, {}, {}, "label volcano.sh/job-name=vc"},
      {"jobset, owned by its child Job",
       {{"jobset.sigs.k8s.io/jobset-name", "js"}},
       {},
       {"Job", "js-workers-0"},
       "label jobset.sigs.k8s.io/jobset-name=js"},
      {"training-operator label",
       {{"training.kubeflow.org/job-name", "pt"}},
       {},
       {},
       "label training.kubeflow.org/job-name=pt"},
      {"RayJob labels",
       {{"ray.io/originated-from-crd", "RayJob"}, {"ray.io/originated-from-cr-name", "rl"}, {"ray.io/cluster", "rl-x"}},
       {},
       {"RayCluster", "rl-x"},
       "label ray.io/originated-from-cr-name=rl (RayJob)"},
      {"a Ray cluster's pods", {{"ray.io/cluster", "rc"}}, {}, {"RayCluster", "rc"}, "label ray.io/cluster=rc"},
      {"PyTorchJob owner", {}, {}, {"PyTorchJob", "pt"}, "owner PyTorchJob/pt"},
      {"Job owner", {}, {}, {"Job", "train"}, "owner Job/train"},
      {"the group label wins over the owner",
       {{"kueue.x-k8s.io/pod-group-name", "g"}},
       {},
       {"Job", "j"},
       "label kueue.x-k8s.io/pod-group-name=g"},
      {"a label key given as an annotation does not count", {}, {{"volcano.sh/job-name", "vc"}}, {}, ""},
      {"a Deployment's pods are no gang", {{"app", "web"}}, {}, {"Deployment", "web"}, ""},
      {"a bare pod", {}, {}, {"Pod", "p"}, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<GangRef> g = GangOf("ns", c.labels, c.annotations, c.owner);
    if (c.how.empty()) {
      EXPECT_FALSE(g);
      continue;
    }
    ASSERT_TRUE(g);
    EXPECT_EQ(g->how, c.how);
  }
}

TEST(GangOfTest, PodsOfDifferentNamespacesAreDifferentGangs) {
  const std::map<std::string, std::string> labels{{"volcano.sh/job-name", "vc"}};
  EXPECT_NE(GangOf("a", labels, {}, {})->key, GangOf("b", labels, {}, {})->key);
  EXPECT_EQ(GangOf("a", labels, {}, {})->key, GangOf("a", labels, {}, WorkloadRef{.kind = "Job", .name = "x"})->key);
}

}  // namespace
}  // namespace gpufit

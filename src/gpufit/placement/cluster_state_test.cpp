#include "gpufit/placement/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufit/placement/filters.h"
#include "gpufit/placement/test_cluster.h"

namespace gpufit {
namespace {

using testing::MakeCluster;
using testing::MakeWorkload;
using Kind = Verdict::Kind;

TEST(ClusterState, PlaceAndRemoveAreInverse) {
  ClusterState c = MakeCluster({{.gpus = 2}});
  const Workload half = MakeWorkload({.cpu = 4000, .memory = 100, .milli = 500});
  c.Place(0, half, 0b10);
  EXPECT_EQ(c.node(0).gpu_free[1].value, 500);
  EXPECT_EQ(c.node(0).cpu_free().value, 60000);
  EXPECT_EQ(c.gpu_allocated().value, 500);
  EXPECT_EQ(c.node(0).pods_by_gpu_kind[0], 1);
  c.Remove(0, half, 0b10);
  EXPECT_EQ(c.node(0).gpu_free[1].value, 1000);
  EXPECT_EQ(c.node(0).cpu_free().value, 64000);
  EXPECT_EQ(c.gpu_allocated().value, 0);
  const std::uint64_t after_place_and_remove = c.node(0).version;
  ClusterState copy = c;
  copy.Place(0, half, 0b01);
  c.Place(0, half, 0b10);  // the same node changed differently in two states: different stamps
  EXPECT_NE(copy.node(0).version, c.node(0).version);
  EXPECT_NE(after_place_and_remove, c.node(0).version);
}

TEST(ClusterState, PodGpuTypesMapToTheClusterModels) {
  const ClusterState c = MakeCluster({{.model = "T4"}, {.model = "A10"}});
  PodSpec p;
  p.gpu_count = 1;
  p.gpu_per_gpu = GpuMilli{1000};
  p.gpu_models = {"A10", "H100"};
  const Workload w = c.WorkloadFor(p);
  EXPECT_FALSE(w.AcceptsModel(c.ModelId("T4")));
  EXPECT_TRUE(w.AcceptsModel(c.ModelId("A10")));
}

TEST(ClusterState, RejectsAnEmptyCluster) {
  const Result<ClusterState> c = ClusterState::FromSpecs({});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code, Code::kInvalidArgument);
}

struct FilterCase {
  const char* name;
  testing::NodeArgs node;
  testing::PodArgs pod;
  Kind expected;
};

TEST(Filters, AcceptOrRejectAsTheRulesSay) {
  const FilterCase cases[] = {
      {"fits", {.gpus = 2}, {.milli = 500}, Kind::kFits},
      {"cpu busy now", {.cpu = 8000, .cpu_used = 6000}, {.cpu = 4000}, Kind::kNotNow},
      {"cpu never", {.cpu = 2000}, {.cpu = 4000}, Kind::kNever},
      {"memory never", {.memory = 10}, {.memory = 20}, Kind::kNever},
      {"share fits on a used GPU", {.gpus = 1, .gpu_used = {400}}, {.milli = 600}, Kind::kFits},
      {"share too big for the used GPU", {.gpus = 1, .gpu_used = {400}}, {.milli = 700}, Kind::kNotNow},
      {"whole GPU needs an idle one", {.gpus = 2, .gpu_used = {100, 100}}, {.milli = 1000}, Kind::kNotNow},
      {"more GPUs than the node has", {.gpus = 2}, {.gpus = 4}, Kind::kNever},
      {"CPU-only pod on a full GPU node", {.gpus = 1, .gpu_used = {1000}}, {.gpus = 0}, Kind::kFits},
  };
  const std::vector<const FilterPlugin*> filters = {new CpuFits, new MemoryFits, new GpuModelFits, new GpuFits};
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ClusterState cluster = MakeCluster({c.node});
    Kind worst = Kind::kFits;
    for (const FilterPlugin* f : filters) {
      const Verdict v = f->Filter(MakeWorkload(c.pod), cluster.node(0));
      if (v.kind == Kind::kNever || (v.kind == Kind::kNotNow && worst == Kind::kFits)) worst = v.kind;
    }
    EXPECT_EQ(worst, c.expected);
  }
  for (const FilterPlugin* f : filters) delete f;
}

TEST(Filters, GpuTypeConstraintIsNever) {
  const ClusterState c = MakeCluster({{.model = "T4"}});
  Workload w = MakeWorkload({});
  w.any_model = false;
  w.model_mask = 0;
  const Verdict v = GpuModelFits().Filter(w, c.node(0));
  EXPECT_EQ(v.kind, Kind::kNever);
  EXPECT_THAT(std::string(v.reason), ::testing::HasSubstr("gpu_spec"));
}

}  // namespace
}  // namespace gpufit

#include "gpufit/plan/reserved_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/plan/plan.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

ReservedGpuMemory Reserved(const std::string& gpu, std::int64_t mib) { return {gpu, "node-a", MiB{mib}}; }

TEST(PlaceOnReservedGpus, EachGpuFromTheLeastRoomTakesTheLargestGroupThatFits) {
  Plan plan;
  plan.capacity_mib = 80000;
  plan.memory_margin_mib = 1000;
  for (double peak : {69000.0, 49000.0, 19000.0}) {
    GpuReplay g;
    g.peak_mib = peak;
    plan.replay.gpus.push_back(g);
  }
  // Needs (peak + margin): 70,000, 50,000, 20,000 MiB. Room: a 55,000, b 75,000, c 1,000.
  const std::vector<ReservedGpu> r =
      PlaceOnReservedGpus(plan, {Reserved("GPU-a", 25000), Reserved("GPU-b", 5000), Reserved("GPU-c", 79000)});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].capacity_mib, 55000);
  EXPECT_EQ(r[1].capacity_mib, 75000);
  EXPECT_EQ(r[2].capacity_mib, 1000);
  EXPECT_EQ(r[2].group, std::nullopt);                   // c first: nothing fits 1,000 MiB
  EXPECT_EQ(r[0].group, std::optional<std::size_t>(1));  // a: 50,000 fits, 70,000 does not
  EXPECT_EQ(r[1].group, std::optional<std::size_t>(0));  // b: the 70,000 group
}

TEST(PlaceOnReservedGpus, WithMemoryCapsTheGroupNeedsItsCaps) {
  Plan plan;
  plan.capacity_mib = 80000;
  plan.options.memory_caps = true;
  plan.memory_cap_mib = {30000, 30000};
  GpuReplay g;
  g.pods = {0, 1};
  g.peak_mib = 10000;  // caps: 60,000 MiB
  plan.replay.gpus.push_back(g);
  EXPECT_EQ(PlaceOnReservedGpus(plan, {Reserved("GPU-a", 20001)})[0].group, std::nullopt);
  EXPECT_EQ(PlaceOnReservedGpus(plan, {Reserved("GPU-a", 20000)})[0].group, std::optional<std::size_t>(0));
}

// Two pods of 30,000 MiB at 40 % duty each: one shared H100 (81,559 MiB) holds both, 60,000 MiB.
Telemetry TwoPods() {
  Telemetry t;
  t.step_s = 60;
  t.samples = 10;
  for (const char* name : {"ml/a", "ml/b"}) {
    PodSeries p;
    p.pod = name;
    p.fb_used_mib.assign(10, 30000);
    p.gpu_util_pct.assign(10, 40);
    p.last = 9;
    t.pods.push_back(std::move(p));
  }
  return t;
}

PlanOptions InSample() {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.robust = false;  // no learned margin: the need is the replayed peak
  return o;
}

TEST(BuildPlan, MemoryOutsidePodsReducesThatGpusCapacity) {
  Telemetry t = TwoPods();
  // 30,000 MiB outside pods leaves 51,559 MiB: the 60,000 MiB group does not fit there;
  // 20,000 MiB leaves 61,559 MiB: it does.
  t.reserved_gpu_memory = {{"GPU-big", "node-a", MiB{30000}}, {"GPU-small", "node-b", MiB{20000}}};
  t.ended = {{"ml/a", 540, "kube_pod_completion_time", 3}};
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), InSample(), "test");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->replay.gpus.size(), 1u);
  EXPECT_EQ(plan->replay.gpus[0].peak_mib, 60000);
  ASSERT_EQ(plan->reserved_gpus.size(), 2u);
  EXPECT_EQ(plan->reserved_gpus[0].capacity_mib, 81559 - 30000);
  EXPECT_EQ(plan->reserved_gpus[0].group, std::nullopt);
  EXPECT_EQ(plan->reserved_gpus[1].capacity_mib, 81559 - 20000);
  EXPECT_EQ(plan->reserved_gpus[1].group, std::optional<std::size_t>(0));

  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  ASSERT_EQ(j["reserved_gpus"].size(), 2u);
  EXPECT_EQ(j["reserved_gpus"][0]["gpu"], "GPU-big");
  EXPECT_EQ(j["reserved_gpus"][0]["outside_pods_peak_mib"], 30000);
  EXPECT_EQ(j["reserved_gpus"][0]["capacity_for_pods_mib"], 51559);
  EXPECT_TRUE(j["reserved_gpus"][0]["group"].is_null());
  EXPECT_EQ(j["reserved_gpus"][1]["group"], 0);
  ASSERT_EQ(j["telemetry"]["ended"].size(), 1u);
  EXPECT_EQ(j["telemetry"]["ended"][0]["pod"], "ml/a");
  EXPECT_EQ(j["telemetry"]["ended"][0]["dropped_samples"], 3);
  EXPECT_EQ(j["telemetry"]["samples_dropped_after_end"], 3);

  const std::string md = PlanToMarkdown(*plan);
  EXPECT_THAT(md, HasSubstr("GPU GPU-big on node-a: 30000 MiB used outside any pod (peak), so 51559 MiB for pods; "
                            "no planned group fits it."));
  EXPECT_THAT(md, HasSubstr("GPU GPU-small on node-b: 20000 MiB used outside any pod (peak), so 61559 MiB for "
                            "pods; takes co-location GPU 0 (below)."));
  EXPECT_THAT(md, HasSubstr("Dropped 3 samples after the end of 1 finished pod ("));
  EXPECT_THAT(md, HasSubstr("ml/a (3 samples after 540 s, kube_pod_completion_time)"));
}

TEST(BuildPlan, ReservedGpusOfAnotherModelTakeNoGroup) {
  Telemetry t = TwoPods();
  t.reserved_gpu_memory = {{"GPU-small", "node-b", MiB{1000}}};
  PlanOptions o = InSample();
  o.current_gpu = "a100-80gb";
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->reserved_gpus.size(), 1u);
  EXPECT_EQ(plan->reserved_gpus[0].group, std::nullopt);
  EXPECT_THAT(PlanToMarkdown(*plan), HasSubstr("not planned on (the plan is on h100-80gb)"));
}

}  // namespace
}  // namespace gpufit

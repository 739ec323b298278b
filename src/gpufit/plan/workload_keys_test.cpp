#include "gpufit/plan/workload_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

KubePod Owned(const std::string& ns, const std::string& name, const std::string& kind, const std::string& owner) {
  return KubePod{.namespace_name = ns, .name = name, .owner = {.kind = kind, .name = owner}};
}

// Sorted by Key(), as ReadKubePods returns them.
std::vector<KubePod> Pods() {
  return {Owned("db", "pg-0", "StatefulSet", "pg"), Owned("ml", "debug", "Pod", "debug"),
          Owned("ml", "run-7-x2k9p", "Job", "run-7"), Owned("ml", "web-5d8f7c9b4-abcde", "Deployment", "web"),
          Owned("ml", "web-5d8f7c9b4-fghij", "Deployment", "web")};
}

TEST(WorkloadKeyOf, NamesTheTopLevelOwnerOrTheBarePod) {
  struct Case {
    const char* name;
    const char* telemetry_pod;
    const char* key;
  };
  for (const Case& c : {
           Case{"deployment replica", "ml/web-5d8f7c9b4-abcde", "deployment/ml/web"},
           Case{"one GPU of several", "ml/web-5d8f7c9b4-fghij[1]", "deployment/ml/web"},
           Case{"statefulset", "db/pg-0", "statefulset/db/pg"},
           Case{"job", "ml/run-7-x2k9p", "job/ml/run-7"},
           Case{"bare pod keeps its name", "ml/debug", "pod/ml/debug"},
           Case{"later pod of the name", "ml/debug@1", "pod/ml/debug"},
           Case{"gone replica of a known deployment", "ml/web-66b9f8d7c-zzzzz", "deployment/ml/web"},
           Case{"gone pod of an unknown deployment", "ml/api-66b9f8d7c-zzzzz", "pod/ml/api-66b9f8d7c-zzzzz"},
           Case{"same name in another namespace", "dev/web-66b9f8d7c-zzzzz", "pod/dev/web-66b9f8d7c-zzzzz"},
           Case{"not ReplicaSet naming", "ml/web-zzzzz", "pod/ml/web-zzzzz"},
       }) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(WorkloadKeyOf(c.telemetry_pod, Pods()), c.key);
  }
}

TEST(CountSlots, CountsEachKeyOnceByKey) {
  EXPECT_THAT(CountSlots({"pod/a/x", "deployment/a/w", "deployment/a/w"}),
              ElementsAre(WorkloadSlots{"deployment/a/w", 2}, WorkloadSlots{"pod/a/x", 1}));
}

// Three replicas of w on 4 samples (w2 starts late), one bare pod b.
Telemetry ThreeReplicas() {
  Telemetry t;
  t.samples = 4;
  t.pods = {
      {.pod = "a/w1", .fb_used_mib = {10, 40, 20, 30}, .gpu_util_pct = {50, 10, 0, 20}, .first = 0, .last = 3},
      {.pod = "a/w2", .fb_used_mib = {0, 0, 25, 35}, .gpu_util_pct = {0, 0, 60, 30}, .first = 2, .last = 3},
      {.pod = "a/w3", .fb_used_mib = {30, 5, 10, 0}, .gpu_util_pct = {20, 70, 30, 0}, .first = 0, .last = 2},
      {.pod = "a/b", .fb_used_mib = {50, 50, 50, 50}, .gpu_util_pct = {10, 10, 10, 10}, .first = 0, .last = 3},
  };
  return t;
}
const std::vector<std::string> kKeys = {"deployment/a/w", "deployment/a/w", "deployment/a/w", "pod/a/b"};

TEST(GroupByWorkload, ReplicasAreTheMostSeriesAliveAtOnce) {
  const std::vector<WorkloadReplicas> w = GroupByWorkload(ThreeReplicas(), kKeys);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].workload, "deployment/a/w");
  EXPECT_THAT(w[0].pods, ElementsAre(0u, 1u, 2u));
  EXPECT_EQ(w[0].replicas, 3u);  // sample 2: all three alive
  EXPECT_EQ(w[1].replicas, 1u);
}

TEST(GroupByWorkload, ARolloutThatReplacesAPodIsOneReplica) {
  Telemetry t;
  t.samples = 4;
  t.pods = {{.pod = "a/old", .fb_used_mib = {1, 1, 0, 0}, .gpu_util_pct = {1, 1, 0, 0}, .first = 0, .last = 1},
            {.pod = "a/new", .fb_used_mib = {0, 0, 1, 1}, .gpu_util_pct = {0, 0, 1, 1}, .first = 2, .last = 3}};
  EXPECT_EQ(GroupByWorkload(t, {"deployment/a/w", "deployment/a/w"})[0].replicas, 1u);
}

TEST(SlotEnvelope, OneSlotIsThePerSampleMaxOfEachMetric) {
  // fb: max(10,0,30)=30, max(40,0,5)=40, max(20,25,10)=25, max(30,35,0)=35;
  // duty: max(50,0,20)=50, 70, 60, 30 (memory and duty may peak on different replicas).
  const PodSeries e = SlotEnvelope(ThreeReplicas(), {0, 1, 2}, 1, "w");
  EXPECT_THAT(e.fb_used_mib, ElementsAre(30, 40, 25, 35));
  EXPECT_THAT(e.gpu_util_pct, ElementsAre(50, 70, 60, 30));
  EXPECT_EQ(e.first, 0u);
  EXPECT_EQ(e.last, 3u);
}

TEST(SlotEnvelope, KSlotsSumTheKLargest) {
  // Two slots: fb 30+10, 40+5, 25+20, 35+30; duty 50+20, 70+10, 60+30, 30+20.
  const PodSeries e = SlotEnvelope(ThreeReplicas(), {0, 1, 2}, 2, "w");
  EXPECT_THAT(e.fb_used_mib, ElementsAre(40, 45, 45, 65));
  EXPECT_THAT(e.gpu_util_pct, ElementsAre(70, 80, 90, 50));
  // More slots than replicas: every replica once, the empty slot adds nothing.
  EXPECT_THAT(SlotEnvelope(ThreeReplicas(), {0, 1, 2}, 5, "w").fb_used_mib, ElementsAre(40, 45, 55, 65));
}

TEST(ReplayByWorkload, EachSlotCarriesItsWorkloadsEnvelope) {
  // Group 0: one slot of w and the bare pod b. Memory 30+50, 40+50, 25+50, 35+50 = 80, 90,
  // 75, 85 against 85 -> one overflow (sample 1); duty 60, 80, 70, 40: no collision.
  const WorkloadPlan plan{.groups = {{{"deployment/a/w", 1}, {"pod/a/b", 1}}}, .too_big = {}, .kept = {}};
  const Result<WorkloadReplay> r = ReplayByWorkload(ThreeReplicas(), kKeys, plan, 85, 0.0, 0);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->replay.gpus.size(), 1u);
  EXPECT_EQ(r->replay.memory_overflows, 1);
  EXPECT_DOUBLE_EQ(r->replay.gpus[0].peak_mib, 90);
  EXPECT_EQ(r->replay.gpus[0].collisions, 0);
  EXPECT_FALSE(r->replay.safe);
  // w has 3 replicas and 1 slot: 2 are unplanned.
  ASSERT_EQ(r->unplanned.size(), 1u);
  EXPECT_EQ(r->unplanned[0].workload, "deployment/a/w");
  EXPECT_EQ(r->unplanned[0].replicas, 3u);
  EXPECT_EQ(r->unplanned[0].planned_slots, 1u);
  EXPECT_THAT(r->unplanned[0].pods, ElementsAre("a/w1", "a/w2", "a/w3"));
  EXPECT_TRUE(r->absent.empty());
}

TEST(ReplayByWorkload, UnknownWorkloadsAreUnplannedAndMissingOnesAbsent) {
  // w on two GPUs of 2 slots (4 >= 3 replicas); b not planned; gone/x planned but absent.
  const WorkloadPlan plan{
      .groups = {{{"deployment/a/w", 2}}, {{"deployment/a/w", 2}, {"job/a/gone", 1}}}, .too_big = {}, .kept = {}};
  const Result<WorkloadReplay> r = ReplayByWorkload(ThreeReplicas(), kKeys, plan, 100, 0.0, 0);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->unplanned.size(), 1u);
  EXPECT_EQ(r->unplanned[0].workload, "pod/a/b");
  EXPECT_EQ(r->unplanned[0].planned_slots, 0u);
  EXPECT_THAT(r->absent, ElementsAre("job/a/gone"));
  // Each GPU: the 2-slot envelope, memory peak 65 (sample 3), duty 70, 80, 90, 50: safe.
  EXPECT_DOUBLE_EQ(r->replay.gpus[1].peak_mib, 65);
  EXPECT_TRUE(r->replay.safe);
}

TEST(ReplayByWorkload, TooBigWorkloadThatFitsIsRejected) {
  const WorkloadPlan plan{.groups = {}, .too_big = {{"pod/a/b", 1}}, .kept = {}};
  const Result<WorkloadReplay> r = ReplayByWorkload(ThreeReplicas(), kKeys, plan, 100, 0.0, 60);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr("too_big_for_target_workloads: workload 'pod/a/b' peaks at 50 MiB"));
  EXPECT_TRUE(ReplayByWorkload(ThreeReplicas(), kKeys, plan, 100, 0.0, 49).has_value());
}

}  // namespace
}  // namespace gpufit

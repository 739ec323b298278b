// Telemetry profiles in the extender (serve/profiles.h, extender.h): reading them from
// plan.json, the workload key of a pod object, a profiled pod's share of each node's GPU,
// the fallback for a pod without a profile, and duty-curve complementarity.
#include "gpufit/serve/profiles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/plan/workload_keys.h"
#include "gpufit/serve/extender.h"
#include "serve_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::PodJson;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

Json Hours(double day, double night) {  // day: hours 8..19; night: the rest
  Json h = Json::array();
  for (int i = 0; i < 24; ++i) h.push_back(i >= 8 && i < 20 ? day : night);
  return h;
}

Json PlanJson(const Json& workloads, double margin = 0, double reserve = 0) {
  return {{"options", {{"reserve_mib", reserve}}},
          {"workload_profiles", {{"duty_quantile", 0.99}, {"margin_mib", margin}, {"workloads", workloads}}}};
}

Json Profile(const std::string& workload, double peak, const Json& hours, double duty = 50) {
  return {{"workload", workload}, {"memory_peak_mib", peak}, {"duty_pct", duty}, {"duty_pct_by_hour", hours}};
}

TEST(ProfileBook, ReadsPlanJsonAndFillsHoursNotObserved) {
  Json hours = Hours(80, 5);
  hours[3] = nullptr;
  const std::string path =
      WriteTemp("gpufit_profiles_ok.json",
                PlanJson(Json::array({Profile("statefulset/ml/day", 20000, hours, 77)}), 512, 256).dump());
  const Result<ProfileBook> book = ProfileBook::FromPlanJson(path);
  ASSERT_TRUE(book) << book.error().message;
  EXPECT_EQ(book->size(), 1u);
  EXPECT_EQ(book->margin_mib(), 512);
  EXPECT_EQ(book->reserve_mib(), 256);
  const ServeProfile* p = book->Find("statefulset/ml/day");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->memory_peak_mib, 20000);
  EXPECT_EQ(p->duty_pct[3], 77);  // null: the overall figure
  EXPECT_EQ(p->duty_pct[10], 80);
  EXPECT_EQ(p->duty_pct[22], 5);
  EXPECT_EQ(book->Find("statefulset/ml/night"), nullptr);
  EXPECT_TRUE(book->outside().empty());  // no reserved_gpus
}

TEST(ProfileBook, ReservedGpusNameTheirIndexOnlyByHostAndNumber) {
  Json plan = PlanJson(Json::array());
  plan["reserved_gpus"] = Json::array({{{"gpu", "n1/gpu3"}, {"host", "n1"}, {"outside_pods_peak_mib", 2048}},
                                       {{"gpu", "GPU-8f6e"}, {"host", "n2"}, {"outside_pods_peak_mib", 512}},
                                       {{"gpu", "n1/gpux"}, {"host", "n1"}, {"outside_pods_peak_mib", 1}}});
  const Result<ProfileBook> book = ProfileBook::FromPlanJson(WriteTemp("gpufit_profiles_reserved.json", plan.dump()));
  ASSERT_TRUE(book) << book.error().message;
  ASSERT_EQ(book->outside().size(), 3u);
  EXPECT_EQ(book->outside()[0].index, 3);
  EXPECT_EQ(book->outside()[0].peak_mib, 2048);
  EXPECT_EQ(book->outside()[1].host, "n2");
  EXPECT_FALSE(book->outside()[1].index.has_value());
  EXPECT_FALSE(book->outside()[2].index.has_value());
  plan["reserved_gpus"][1]["outside_pods_peak_mib"] = "512";
  const std::string bad = WriteTemp("gpufit_profiles_reserved_bad.json", plan.dump());
  EXPECT_THAT(ProfileBook::FromPlanJson(bad).error().message,
              HasSubstr(bad + ": reserved_gpus[1].outside_pods_peak_mib: expected a number, got string"));
}

TEST(ProfileBook, BadFieldsAreNamed) {
  struct Case {
    const char* name;
    Json plan;
    const char* message;
  };
  Json short_hours = Hours(1, 1);
  short_hours.erase(23);
  Json bad_hour = Hours(1, 1);
  bad_hour[5] = 120;
  for (const Case& c : {
           Case{"no section", Json{{"options", {{"reserve_mib", 0}}}}, "workload_profiles: missing"},
           Case{"negative peak", PlanJson(Json::array({Profile("pod/a/x", -1, Hours(1, 1))})),
                "workload_profiles.workloads[0].memory_peak_mib: expected a number in 0.."},
           Case{"23 hours", PlanJson(Json::array({Profile("pod/a/x", 1, short_hours)})),
                "workloads[0].duty_pct_by_hour: expected 24 entries"},
           Case{"duty over 100", PlanJson(Json::array({Profile("pod/a/x", 1, bad_hour)})),
                "workloads[0].duty_pct_by_hour[5]: expected a percent in 0..100 or null, got 120"},
           Case{"named twice", PlanJson({Profile("pod/a/x", 1, Hours(1, 1)), Profile("pod/a/x", 2, Hours(1, 1))}),
                "workloads[1].workload: 'pod/a/x' is also workloads[0]"},
           Case{"string margin", Json{{"options", {{"reserve_mib", 0}}}, {"workload_profiles", {{"margin_mib", "1"}}}},
                "workload_profiles.margin_mib: expected a number, got string"},
       }) {
    SCOPED_TRACE(c.name);
    const std::string path = WriteTemp("gpufit_profiles_bad.json", c.plan.dump());
    const Result<ProfileBook> book = ProfileBook::FromPlanJson(path);
    ASSERT_FALSE(book);
    EXPECT_THAT(book.error().message, HasSubstr(path));
    EXPECT_THAT(book.error().message, HasSubstr(c.message));
  }
  EXPECT_EQ(ProfileBook::FromPlanJson("/nonexistent/plan.json").error().code, Code::kNotFound);
}

TEST(ProfileBook, ShareOfAGpuKeepsTheReserveAndMarginFree) {
  const ProfileBook book({}, 9000, 1000);  // 80,000 MiB GPU: C = 70,000
  ServeProfile p{.workload = "w", .memory_peak_mib = 17500};
  EXPECT_EQ(book.MilliOn(p.memory_peak_mib, 80000), 250);  // 17,500 / 70,000 exactly
  p.memory_peak_mib = 17501;
  EXPECT_EQ(book.MilliOn(p.memory_peak_mib, 80000), 251);  // rounded up
  p.memory_peak_mib = 0;
  EXPECT_EQ(book.MilliOn(p.memory_peak_mib, 80000), 1);
  p.memory_peak_mib = 70000;
  EXPECT_EQ(book.MilliOn(p.memory_peak_mib, 80000), 1000);  // does not fit beside anything
  EXPECT_EQ(book.MilliOn(p.memory_peak_mib, 9000), 1000);   // C <= 0
}

// A pod of `owner_kind`/`owner` sharing one GPU by open-gpu-share's annotation.
Json SharingPod(const std::string& name, const std::string& owner_kind, const std::string& owner, int milli,
                const std::string& node = "") {
  Json pod = PodJson(name, "1", "1Gi", 0, node);
  pod["metadata"]["annotations"] = {{"alibabacloud.com/gpu-milli", std::to_string(milli)},
                                    {"alibabacloud.com/gpu-count", "1"}};
  if (!owner_kind.empty())
    pod["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "apps/v1"},
                                                       {"kind", owner_kind},
                                                       {"name", owner},
                                                       {"uid", "o-" + owner},
                                                       {"controller", true}}});
  return pod;
}

KubePod PodOf(const Json& j) {
  Result<KubePod> p = ParseKubePod(j, "pods");
  EXPECT_TRUE(p) << p.error().message;
  return p ? *p : KubePod{};
}

TEST(WorkloadKeyOfPod, AgreesWithThePlansRule) {
  Json rs = SharingPod("web-5d8f7c9b4-abcde", "ReplicaSet", "web-5d8f7c9b4", 100);
  rs["metadata"]["labels"] = {{"pod-template-hash", "5d8f7c9b4"}};
  for (const Json& j : {rs, SharingPod("day-0", "StatefulSet", "day", 100), SharingPod("solo", "", "", 100),
                        SharingPod("run-x", "Job", "run", 100)}) {
    const KubePod pod = PodOf(j);
    EXPECT_EQ(WorkloadKeyOfPod(pod), WorkloadKeyOf(pod.Key(), {pod})) << pod.Key();
  }
  EXPECT_EQ(WorkloadKeyOfPod(PodOf(rs)), "deployment/ml/web");
}

Json GpuNode(const std::string& name, int gpus, int memory_mib) {
  Json n = testing::NodeJson(name, 64, "256Gi", gpus, "NVIDIA-A100-SXM4-80GB");
  n["metadata"]["labels"]["nvidia.com/gpu.memory"] = std::to_string(memory_mib);
  return n;
}

ExtenderArgs Args(const Json& pod, std::vector<std::string> names) {
  Result<ExtenderArgs> a = ParseExtenderArgs(Json{{"Pod", pod}, {"NodeNames", names}}.dump(), "request");
  EXPECT_TRUE(a) << a.error().message;
  return a ? *a : ExtenderArgs{};
}

std::unique_ptr<Extender> Make(const std::vector<Json>& nodes, const std::vector<Json>& pods,
                               std::shared_ptr<const ProfileBook> book, const std::string& policy = "gpufit") {
  Result<std::vector<KubeNode>> n = ParseKubeNodes(testing::ListOf(nodes, "NodeList"), "nodes");
  EXPECT_TRUE(n) << n.error().message;
  std::vector<KubePod> p;
  for (const Json& j : pods) p.push_back(PodOf(j));
  Result<std::unique_ptr<Extender>> e =
      Extender::FromSnapshot(*n, p, {.policy = policy, .seed = 42, .profiles = std::move(book)});
  EXPECT_TRUE(e) << e.error().message;
  return e ? std::move(*e) : nullptr;
}

// One GPU of 80,000 MiB (no reserve, no margin). The tenant declares 500 milli but its profile
// peaks at 60,000 MiB (750 milli); the new pod declares 100 and peaks at 30,000 (375).
TEST(ExtenderProfiles, FilterTakesTheEnvelopeNotTheDeclaredShare) {
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{{.workload = "statefulset/ml/old", .memory_peak_mib = 60000, .duty_pct = {}},
                                {.workload = "statefulset/ml/new", .memory_peak_mib = 30000, .duty_pct = {}}},
      0, 0);
  const std::vector<Json> nodes = {GpuNode("n1", 1, 80000)};
  const std::vector<Json> pods = {SharingPod("old-0", "StatefulSet", "old", 500, "n1")};
  const Json pod = SharingPod("new-0", "StatefulSet", "new", 100);

  const auto declared = Make(nodes, pods, nullptr);
  const Result<FilterResult> d = declared->Filter(Args(pod, {"n1"}));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kept.size(), 1u);  // 500 + 100 <= 1000
  EXPECT_EQ(d->request_from, "");  // without --profiles the log says nothing more

  const auto profiled = Make(nodes, pods, book);
  const Result<FilterResult> f = profiled->Filter(Args(pod, {"n1"}));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->kept.empty());  // 750 + 375 > 1000
  ASSERT_EQ(f->failed.size(), 1u);
  EXPECT_THAT(f->request_from, HasSubstr("telemetry profile of statefulset/ml/new"));
  EXPECT_NEAR(profiled->GpuAllocationRatio(), 0.75, 1e-9);  // the tenant counts at its envelope
  EXPECT_NEAR(profiled->GpuMemoryOvercommitRatio(), 0.5, 1e-9);  // and declares 500 of 1000
  // FGD fragmentation for the target workload (the tenant's declared shape: 1 GPU at 500 milli):
  // the 250 milli left cannot take 500, so all of it is fragment; ratio 250 / 250 free.
  EXPECT_NEAR(profiled->GpuFragmentation().milli, 250, 1e-9);
  EXPECT_NEAR(profiled->GpuFragmentation().ratio, 1.0, 1e-9);
  EXPECT_NEAR(declared->GpuFragmentation().milli, 0, 1e-9);  // 500 free takes 500
}

TEST(ExtenderProfiles, APodWithoutAProfileFallsBackToItsDeclaredRequestAndSaysSo) {
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{{.workload = "statefulset/ml/other", .memory_peak_mib = 1, .duty_pct = {}}}, 0, 0);
  const std::vector<Json> nodes = {GpuNode("n1", 2, 80000), GpuNode("n2", 1, 80000)};
  const std::vector<Json> pods = {SharingPod("t-0", "StatefulSet", "t", 600, "n1")};
  const Json pod = SharingPod("lone-0", "StatefulSet", "lone", 300);
  const auto with = Make(nodes, pods, book);
  const auto without = Make(nodes, pods, nullptr);
  const Result<FilterResult> f = with->Filter(Args(pod, {"n1", "n2"}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->request_from, "declared requests: no telemetry profile for workload statefulset/ml/lone");
  const Result<FilterResult> g = without->Filter(Args(pod, {"n1", "n2"}));
  EXPECT_EQ(f->kept, g->kept);
  const auto a = with->Prioritize(Args(pod, {"n1", "n2"}));
  const auto b = without->Prioritize(Args(pod, {"n1", "n2"}));
  ASSERT_TRUE(a && b);
  for (std::size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].score, (*b)[i].score) << (*a)[i].host;
  // A whole-GPU pod of a profiled workload keeps its whole GPU.
  const Result<FilterResult> whole = with->Filter(Args(PodJson("other-0", "1", "1Gi", 1), {"n1"}));
  ASSERT_TRUE(whole);
  EXPECT_THAT(whole->request_from, HasSubstr("declared requests"));
}

// A peak larger than one GPU's memory (less the reserve) can never be held there: the node is
// unresolvable, scores 0, and bind refuses it. 30,000 MiB fits 81,920 but not 16,384.
TEST(ExtenderProfiles, APeakAboveAGpusMemoryNeverFits) {
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{{.workload = "statefulset/ml/big", .memory_peak_mib = 30000, .duty_pct = {}}}, 0, 0);
  const auto e = Make({GpuNode("small", 1, 16384), GpuNode("a80", 1, 81920)}, {}, book);
  const Json pod = SharingPod("big-0", "StatefulSet", "big", 100, "");
  const Result<FilterResult> f = e->Filter(Args(pod, {"small", "a80"}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kept, std::vector<std::size_t>{1});
  ASSERT_EQ(f->failed_and_unresolvable.size(), 1u);
  EXPECT_EQ(f->failed_and_unresolvable[0].reason,
            "the workload's memory peak (telemetry profile) exceeds this node's GPU memory");
  const auto p = e->Prioritize(Args(pod, {"small", "a80"}));
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0].score, 0);
  EXPECT_EQ((*p)[1].score, kMaxExtenderPriority);
  const Result<Reservation> r =
      e->Reserve({.pod_name = "big-0", .pod_namespace = "ml", .pod_uid = "uid-big-0", .node = "small"});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("can never take the pod: the workload's peak of 30000 MiB does not fit "
                                           "this node's GPU (16384 MiB, 0 reserved)"));
}

// Two running replicas whose profile (50,000 of 80,000 MiB: 625 milli each) does not fit one
// GPU together: the second is counted at the 375 left rather than left out, so the GPU stays
// full and a 300-milli pod is refused, as it is by the declared shares (400 + 400 + 300).
TEST(ExtenderProfiles, ARunningPodWhoseProfileDoesNotFitTakesWhatIsLeft) {
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{{.workload = "statefulset/ml/big", .memory_peak_mib = 50000, .duty_pct = {}}}, 0, 0);
  const auto e =
      Make({GpuNode("n1", 1, 80000)},
           {SharingPod("big-0", "StatefulSet", "big", 400, "n1"), SharingPod("big-1", "StatefulSet", "big", 400, "n1")},
           book);
  EXPECT_EQ(e->snapshot().pods_placed, 2);
  EXPECT_EQ(e->snapshot().pods_not_fitting, 0);
  EXPECT_THAT(e->snapshot().warnings, ::testing::Contains(HasSubstr("counted at the 375 left")));
  EXPECT_NEAR(e->GpuAllocationRatio(), 1.0, 1e-9);
  const Result<FilterResult> f = e->Filter(Args(SharingPod("other", "", "", 300, ""), {"n1"}));
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->kept.empty());
}

TEST(ExtenderProfiles, WhyAProfileIsNotUsedIsSaid) {
  std::array<double, 24> flat{};
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{
          {.workload = "statefulset/ml/cpu", .memory_peak_mib = 1, .duty_pct = flat},
          {.workload = "statefulset/ml/brief", .memory_peak_mib = 1, .duty_pct = flat, .observed_hours = 0},
          {.workload = "pod/00800b6d", .memory_peak_mib = 1, .duty_pct = flat}},
      0, 0);
  Json cpu = PodJson("cpu-0", "1", "1Gi", 0);
  cpu["metadata"]["ownerReferences"] = Json::array(
      {{{"apiVersion", "apps/v1"}, {"kind", "StatefulSet"}, {"name", "cpu"}, {"uid", "o"}, {"controller", true}}});
  EXPECT_EQ(RequestOf(PodOf(cpu), book.get())->from, "declared requests: statefulset/ml/cpu asks for no GPU");
  const Result<PodRequest> brief = RequestOf(PodOf(SharingPod("brief-0", "StatefulSet", "brief", 100)), book.get());
  EXPECT_EQ(brief->profile, nullptr);
  EXPECT_THAT(brief->from, HasSubstr("vouches for no hour"));
  EXPECT_EQ(book->Unmatchable(), std::vector<std::string>{"pod/00800b6d"});
}

TEST(GpuMemoryMibOf, LabelThenCatalogButNotAMigSlice) {
  auto node = [](const std::string& product, const std::string& memory) {
    Json n = testing::NodeJson("n", 8, "64Gi", 1, product);
    if (!memory.empty()) n["metadata"]["labels"]["nvidia.com/gpu.memory"] = memory;
    return (*ParseKubeNodes(testing::ListOf({n}, "NodeList"), "nodes"))[0];
  };
  EXPECT_EQ(GpuMemoryMibOf(node("NVIDIA-A100-SXM4-80GB", "81920")), 81920);
  EXPECT_GT(GpuMemoryMibOf(node("NVIDIA-A100-SXM4-80GB", "")), 80000);  // the catalog's a100-80gb
  EXPECT_EQ(GpuMemoryMibOf(node("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "")), 0);
  EXPECT_EQ(GpuMemoryMibOf(node("NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", "9728")), 9728);
  EXPECT_EQ(GpuMemoryMibOf(node("Some-Unknown-GPU", "")), 0);
}

// Memory used outside pods (40,000 of 80,000 MiB on some GPU of n1 and of n2) comes off the
// memory profiled shares are taken of there: a 30,000 MiB peak takes 750 milli on n1 and n2
// and 375 on n3. Every GPU has 400 milli free (two running 600-milli pods a node), so only n3
// keeps the pod. Declared shares are taken of the memory left too: a 600-milli share is 48,000
// MiB, 1,200 milli of the 40,000 left on n1 and n2, so each of their running pods counts as a
// whole GPU there: 2,000 + 2,000 + 1,200 = 5,200 of 6,000 milli-GPU allocated.
TEST(ExtenderProfiles, MemoryOutsidePodsComesOffProfiledShares) {
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{{.workload = "statefulset/ml/web", .memory_peak_mib = 30000, .duty_pct = {}}}, 0, 0,
      std::vector<OutsideMemory>{{.host = "n1", .gpu = "n1/gpu1", .index = 1, .peak_mib = 40000},
                                 {.host = "n2", .gpu = "GPU-8f6e", .index = std::nullopt, .peak_mib = 40000},
                                 {.host = "gone", .gpu = "gone/gpu0", .index = 0, .peak_mib = 40000}});
  std::vector<Json> pods;
  for (const std::string n : {"n1", "n2", "n3"})
    for (int k = 0; k < 2; ++k) pods.push_back(SharingPod("t" + n + std::to_string(k), "", "", 600, n));
  const auto e = Make({GpuNode("n1", 2, 80000), GpuNode("n2", 2, 80000), GpuNode("n3", 2, 80000)}, pods, book);
  EXPECT_EQ(e->snapshot().nodes_with_outside_memory, 2);
  EXPECT_THAT(e->snapshot().warnings,
              ::testing::Contains(HasSubstr("1 reserved_gpus entries name hosts that are not nodes of the snapshot "
                                            "(e.g. gone)")));
  EXPECT_NEAR(e->GpuAllocationRatio(), 5200.0 / 6000.0, 1e-9);
  const Result<FilterResult> f =
      e->Filter(Args(SharingPod("web-0", "StatefulSet", "web", 100, ""), {"n1", "n2", "n3"}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kept, std::vector<std::size_t>{2});
  EXPECT_EQ(f->failed.size(), 2u);
}

// Day: busy 80% in hours 8..19, 5% otherwise; night the reverse.
std::shared_ptr<const ProfileBook> DayNight() {
  auto curve = [](double day, double night) {
    std::array<double, 24> c{};
    for (int h = 0; h < 24; ++h) c[static_cast<std::size_t>(h)] = h >= 8 && h < 20 ? day : night;
    return c;
  };
  return std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{
          {.workload = "statefulset/ml/day", .memory_peak_mib = 8000, .duty_pct = curve(80, 5)},
          {.workload = "statefulset/ml/night", .memory_peak_mib = 8000, .duty_pct = curve(5, 80)}},
      0, 0);
}

TEST(ExtenderProfiles, PrioritizeSendsANightPodToTheDayTenantsNode) {
  // a: a night tenant; b: a day tenant; c: a tenant without a profile. Each GPU 80,000 MiB.
  const std::vector<Json> nodes = {GpuNode("a", 1, 80000), GpuNode("b", 1, 80000), GpuNode("c", 1, 80000)};
  const std::vector<Json> pods = {SharingPod("night-0", "StatefulSet", "night", 100, "a"),
                                  SharingPod("day-0", "StatefulSet", "day", 100, "b"),
                                  SharingPod("x-0", "", "", 100, "c")};
  const auto e = Make(nodes, pods, DayNight());
  const Json pod = SharingPod("night-1", "StatefulSet", "night", 100);
  const auto p = e->Prioritize(Args(pod, {"a", "b", "c"}));
  ASSERT_TRUE(p);
  // Only b keeps every hour within 100% (80 + 5): it alone is in the upper rank, and the choice.
  EXPECT_EQ((*p)[1].score, kMaxExtenderPriority);
  EXPECT_LT((*p)[0].score, kMaxExtenderPriority);
  EXPECT_LT((*p)[2].score, kMaxExtenderPriority);
  // Bind takes b's GPU and counts the pod's curve there. A day pod then suits only a (its
  // night tenant leaves the day free), not b (80 + 5 + 80 by day) nor c.
  ASSERT_TRUE(e->Filter(Args(pod, {"a", "b", "c"})));
  const Result<Reservation> r =
      e->Reserve({.pod_name = "night-1", .pod_namespace = "ml", .pod_uid = "uid-night-1", .node = "b"});
  ASSERT_TRUE(r) << r.error().message;
  const auto q = e->Prioritize(Args(SharingPod("day-1", "StatefulSet", "day", 100), {"a", "b", "c"}));
  ASSERT_TRUE(q);
  EXPECT_EQ((*q)[0].score, kMaxExtenderPriority);
  EXPECT_LT((*q)[1].score, kMaxExtenderPriority);
  EXPECT_LT((*q)[2].score, kMaxExtenderPriority);
}

TEST(ExtenderProfiles, BindChoosesTheGpuWhoseTenantsComplementThePod) {
  // One node, two GPUs of 80,000 MiB; snapshot pods take the first GPU with room. GPU 0: a
  // tenant without a profile declaring 850 milli (150 free). GPU 1: the day tenant, whose
  // profile peaks at 48,000 MiB (600 milli, 400 free: it did not fit GPU 0).
  auto book = std::make_shared<const ProfileBook>(
      std::vector<ServeProfile>{{.workload = "statefulset/ml/day",
                                 .memory_peak_mib = 48000,
                                 .duty_pct = DayNight()->Find("statefulset/ml/day")->duty_pct},
                                {.workload = "statefulset/ml/night",
                                 .memory_peak_mib = 8000,
                                 .duty_pct = DayNight()->Find("statefulset/ml/night")->duty_pct}},
      0, 0);
  const std::vector<Json> nodes = {GpuNode("n", 2, 80000)};
  const std::vector<Json> pods = {SharingPod("filler", "", "", 850, "n"),
                                  SharingPod("day-0", "StatefulSet", "day", 100, "n")};
  // best-fit's picker takes the GPU with the least room that fits: GPU 0, as the pod without a
  // profile shows. The night pod (100 milli) goes to GPU 1, where every hour stays within 100%.
  const auto e = Make(nodes, pods, book, "best-fit");
  auto bind = [&](const std::string& name, const Json& pod) {
    EXPECT_TRUE(e->Filter(Args(pod, {"n"})));
    const Result<Reservation> r =
        e->Reserve({.pod_name = name, .pod_namespace = "ml", .pod_uid = "uid-" + name, .node = "n"});
    EXPECT_TRUE(r) << r.error().message;
    return r ? r->gpus : GpuSet{0};
  };
  EXPECT_EQ(bind("night-1", SharingPod("night-1", "StatefulSet", "night", 100)), GpuSet{0b10});
  // Released, night-1's curve leaves GPU 1 (were it still counted, 85 + 80 at night would not
  // suit, and best fit would take GPU 0).
  e->Release({.pod_name = "night-1", .pod_namespace = "ml", .pod_uid = "uid-night-1", .node = "n"});
  EXPECT_EQ(bind("night-2", SharingPod("night-2", "StatefulSet", "night", 100)), GpuSet{0b10});
  // The picker alone: a pod without a profile goes to GPU 0.
  EXPECT_EQ(bind("x-1", SharingPod("x-1", "", "", 100)), GpuSet{0b01});
}

}  // namespace
}  // namespace gpufit::serve

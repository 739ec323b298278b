#include "gpufit/ingest/prometheus/telemetry.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "dcgm_fixture.h"
#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "prometheus_server.h"

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

PromSeries Series(std::map<std::string, std::string> labels, std::vector<double> t, std::vector<double> v) {
  return {.labels = std::move(labels), .time_s = std::move(t), .value = std::move(v)};
}

std::map<std::string, std::string> Gpu(const std::string& uuid, const std::string& pod,
                                       const std::string& host_label = "Hostname") {
  return {{"UUID", uuid}, {host_label, "node-a"}, {"gpu", "0"}, {"namespace", "ml"}, {"pod", pod}};
}

const PodSeries& Find(const Telemetry& t, const std::string& pod) {
  for (const PodSeries& p : t.pods)
    if (p.pod == pod) return p;
  ADD_FAILURE() << "no pod " << pod;
  return t.pods.front();
}

TEST(TelemetryFromDcgmSeries, MapsLabelsToPodsAndGpus) {
  // trainer-0 holds two GPUs; server-0 one GPU whose host label was renamed mid-way.
  const std::vector<PromSeries> fb = {
      Series(Gpu("GPU-a", "trainer-0"), {0, 60, 120}, {100, 200, 300}),
      Series(Gpu("GPU-b", "trainer-0"), {0, 60, 120}, {10, 20, 30}),
      Series(Gpu("GPU-c", "server-0", "Hostname"), {0, 60}, {5, 6}),
      Series(Gpu("GPU-c", "server-0", "hostname"), {120}, {7}),
      Series(Gpu("GPU-idle", ""), {0, 60, 120}, {0, 0, 0}),
  };
  const std::vector<PromSeries> util = {
      Series(Gpu("GPU-a", "trainer-0"), {0, 60, 120}, {50, 60, 70}),
      Series(Gpu("GPU-b", "trainer-0"), {0, 60, 120}, {1, 2, 3}),
      Series(Gpu("GPU-c", "server-0", "Hostname"), {0, 60}, {9, 8}),
      Series(Gpu("GPU-c", "server-0", "hostname"), {120}, {7}),
  };
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 3u);
  EXPECT_EQ(t->step_s, 60);
  EXPECT_THAT(Find(*t, "ml/server-0").fb_used_mib, ElementsAre(5, 6, 7));
  EXPECT_THAT(Find(*t, "ml/server-0").gpu_util_pct, ElementsAre(9, 8, 7));
  // The pod on two GPUs is one series per GPU, in UUID order (plans keep it whole).
  EXPECT_EQ(Find(*t, "ml/trainer-0[0]").device, "GPU-a");
  EXPECT_THAT(Find(*t, "ml/trainer-0[0]").fb_used_mib, ElementsAre(100, 200, 300));
  EXPECT_EQ(Find(*t, "ml/trainer-0[1]").device, "GPU-b");
  EXPECT_THAT(Find(*t, "ml/trainer-0[1]").gpu_util_pct, ElementsAre(1, 2, 3));
  ASSERT_EQ(t->skipped.size(), 1u);
  EXPECT_THAT(t->skipped[0], HasSubstr("GPU-idle on node-a: DCGM series without a pod label"));
}

// Issue 18: dcgm-exporter sends DCGM_FI_DEV_GPU_UTIL = 0 for MIG instances (unsupported
// there); the instance at 60 % engine activity must not be planned idle. A full GPU with
// both fields takes the engine activity too; one without it (pre-Volta) GPU_UTIL.
TEST(TelemetryFromDcgmSeries, MigInstanceTakesEngineActivityEvenWhereGpuUtilIsZero) {
  auto mig = Gpu("GPU-m", "infer-0");
  mig["GPU_I_ID"] = "2";
  mig["GPU_I_PROFILE"] = "2g.20gb";
  const auto volta = Gpu("GPU-v", "volta-0"), pascal = Gpu("GPU-p", "pascal-0");
  const std::vector<PromSeries> fb = {Series(mig, {0, 60}, {1000, 1000}), Series(volta, {0, 60}, {10, 10}),
                                      Series(pascal, {0, 60}, {10, 10})};
  const std::vector<PromSeries> util = {Series(mig, {0, 60}, {0, 0}), Series(volta, {0, 60}, {90, 90}),
                                        Series(pascal, {0, 60}, {40, 30})};
  const std::vector<PromSeries> engine = {Series(mig, {0, 60}, {0.6, 0.5}), Series(volta, {0, 60}, {0.25, 0.5})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, engine, {}, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  const PodSeries& m = Find(*t, "ml/infer-0");
  EXPECT_THAT(m.gpu_util_pct, ElementsAre(60, 50));
  EXPECT_EQ(m.util_field, kDcgmGrEngineActive);
  EXPECT_EQ(m.device, "GPU-m/gi2");
  EXPECT_EQ(m.mig_profile, "2g.20gb");  // dcgm-exporter's GPU_I_PROFILE
  EXPECT_EQ(Find(*t, "ml/volta-0").mig_profile, "");
  EXPECT_THAT(Find(*t, "ml/volta-0").gpu_util_pct, ElementsAre(25, 50));
  EXPECT_EQ(Find(*t, "ml/volta-0").util_field, kDcgmGrEngineActive);
  EXPECT_THAT(Find(*t, "ml/pascal-0").gpu_util_pct, ElementsAre(40, 30));
  EXPECT_EQ(Find(*t, "ml/pascal-0").util_field, kDcgmGpuUtil);
}

TEST(TelemetryFromDcgmSeries, EngineActiveStandsInForUtilAndNoDataIsDropped) {
  auto mig = Gpu("GPU-m", "infer-0");
  mig["GPU_I_ID"] = "2";
  mig["GPU_I_PROFILE"] = "2g.20gb";
  mig["GPU_I_PROFILE"] = "3g.40gb";
  const double blank = 9223372036854775794.0;  // DCGM's sentinel for a field it has no value of
  const std::vector<PromSeries> fb = {Series(mig, {0, 60, 120, 180}, {1000, blank, 1200, blank})};
  const std::vector<PromSeries> engine = {Series(mig, {0, 60, 120, 180}, {0.25, 0.5, 0.75, 1})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, {}, engine, {}, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  const PodSeries& p = Find(*t, "ml/infer-0");
  // 60 s and 180 s have no memory sample: 60 is a gap (filled with the larger neighbour),
  // 180 is after the last memory sample but the duty sample keeps the pod alive.
  EXPECT_THAT(p.gpu_util_pct, ElementsAre(25, 50, 75, 100));
  EXPECT_THAT(p.fb_used_mib, ElementsAre(1000, 1200, 1200, 1200));
}

TEST(TelemetryFromDcgmSeries, SmActiveWhereEnabled) {
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-a", "p"), {0, 60, 120}, {1, 1, 1}),
                                      Series(Gpu("GPU-b", "q"), {0, 60, 120}, {1, 1, 1})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "p"), {0, 60, 120}, {90, 90, 90}),
                                        Series(Gpu("GPU-b", "q"), {0, 60, 120}, {5, 5, 5})};
  const std::vector<PromSeries> sm = {Series(Gpu("GPU-a", "p"), {0, 120}, {0.25, 0.5})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, sm, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  const PodSeries& p = Find(*t, "ml/p");
  ASSERT_EQ(p.sm_active_pct.size(), 3u);
  EXPECT_EQ(p.sm_active_pct[0], 25);
  EXPECT_TRUE(std::isnan(p.sm_active_pct[1]));
  EXPECT_EQ(p.sm_active_pct[2], 50);
  EXPECT_TRUE(Find(*t, "ml/q").sm_active_pct.empty());
}

TEST(TelemetryFromDcgmSeries, ClipsSamplesToThePodsLife) {
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-a", "db-0"), {0, 60, 120, 180, 240}, {1, 2, 3, 4, 5}),
                                      Series(Gpu("GPU-b", "keep"), {0, 240}, {1, 1})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "db-0"), {0, 60, 120, 180, 240}, {1, 1, 1, 1, 1}),
                                        Series(Gpu("GPU-b", "keep"), {0, 240}, {1, 1})};
  // db-0 was created at 50 s and last seen by kube-state-metrics at 180 s.
  const std::vector<PromSeries> created = {
      Series({{"namespace", "ml"}, {"pod", "db-0"}, {"uid", "u1"}}, {60, 120, 180}, {50, 50, 50})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, created, "srv");
  ASSERT_TRUE(t) << t.error().message;
  const PodSeries& p = Find(*t, "ml/db-0");
  EXPECT_EQ(t->start_s, 0);
  EXPECT_EQ(p.first, 1u);
  EXPECT_EQ(p.last, 3u);
  EXPECT_THAT(p.fb_used_mib, ElementsAre(0, 2, 3, 4, 0));
}

TEST(TelemetryFromDcgmSeries, AReusedPodNameIsAnotherPod) {
  // db-0 lives 0..60 s (uid u1), then again 180..240 s (uid u2): two pods, no bridged gap.
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-a", "db-0"), {0, 60, 180, 240}, {1, 2, 7, 8})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "db-0"), {0, 60, 180, 240}, {1, 1, 1, 1})};
  const std::vector<PromSeries> created = {
      Series({{"namespace", "ml"}, {"pod", "db-0"}, {"uid", "u2"}}, {180, 240}, {180, 180}),
      Series({{"namespace", "ml"}, {"pod", "db-0"}, {"uid", "u1"}}, {0, 60}, {0, 0})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, created, "srv");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 2u);
  EXPECT_THAT(Find(*t, "ml/db-0").fb_used_mib, ElementsAre(1, 2, 0, 0, 0));
  EXPECT_THAT(Find(*t, "ml/db-0@2").fb_used_mib, ElementsAre(0, 0, 0, 7, 8));
}

TEST(TelemetryFromDcgmSeries, RejectsOutOfRangeValuesNamingTheSeries) {
  const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "p"), {0}, {130})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries({Series(Gpu("GPU-a", "p"), {0}, {1})}, util, {}, {}, {}, "srv");
  ASSERT_FALSE(t);
  EXPECT_THAT(t.error().message, HasSubstr("DCGM_FI_DEV_GPU_UTIL{pod=\"ml/p\", UUID/gpu=\"GPU-a\"} at 0"));
  EXPECT_THAT(t.error().message, HasSubstr("out of range [0, 100]"));
}

// Issue 40: NaN and +/-Inf were dropped and the gap filled, where the CSV reader refuses them.
TEST(TelemetryFromDcgmSeries, NonFiniteSamplesAreErrorsNamingTheSeriesAndTime) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    double fb, util;
    std::string message;
  } cases[] = {
      {"NaN memory", std::numeric_limits<double>::quiet_NaN(), 1,
       "DCGM_FI_DEV_FB_USED{pod=\"ml/p\", UUID/gpu=\"GPU-a\"} at 60: value NaN is not a finite number (a "
       "broken exporter or recording rule; a telemetry CSV with it is refused too)"},
      {"+Inf duty", 1, inf,
       "DCGM_FI_DEV_GPU_UTIL{pod=\"ml/p\", UUID/gpu=\"GPU-a\"} at 60: value +Inf is not a finite number (a "
       "broken exporter or recording rule; a telemetry CSV with it is refused too)"},
      {"-Inf memory", -inf, 1,
       "DCGM_FI_DEV_FB_USED{pod=\"ml/p\", UUID/gpu=\"GPU-a\"} at 60: value -Inf is not a finite number (a "
       "broken exporter or recording rule; a telemetry CSV with it is refused too)"},
      {"1e308 memory (above 1 TiB)", 1e308, 1,
       "DCGM_FI_DEV_FB_USED{pod=\"ml/p\", UUID/gpu=\"GPU-a\"} at 60: value 1e+308 is out of range [0, "
       "1048576]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<PromSeries> fb = {Series(Gpu("GPU-a", "p"), {0, 60}, {1, c.fb})};
    const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "p"), {0, 60}, {1, c.util})};
    const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code, Code::kInvalidArgument);
    EXPECT_EQ(t.error().message, c.message);
  }
}

TEST(GridFor, StepsCoverTheRangeFromSinceOn) {
  // 6 h at 2 h: steps end at since + 2 h, + 4 h, + 6 h.
  const Result<TelemetryGrid> g = GridFor({.since_s = 0, .until_s = 6 * 3600, .step_s = 7200});
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->grid.start_s, 7200);
  EXPECT_EQ(g->grid.samples, 3u);
  EXPECT_EQ(g->window, "[7199999ms]");
  // 5 h at 2 h: two steps; the last hour is not a whole step and is not read.
  EXPECT_EQ(GridFor({.since_s = 0, .until_s = 5 * 3600, .step_s = 7200})->grid.samples, 2u);
  EXPECT_THAT(GridFor({.since_s = 0, .until_s = 3600, .step_s = 7200}).error().message, HasSubstr("longer than"));
  EXPECT_THAT(GridFor({.since_s = 0, .until_s = 3600, .step_s = 0.5}).error().message, HasSubstr("at least 1 s"));
  EXPECT_THAT(GridFor({.since_s = 0, .until_s = 1e9, .step_s = 1}).error().message, HasSubstr("more than 1000000"));
}

TEST(TelemetryFromDcgmSeries, FixedGridDropsSamplesOutsideTheRange) {
  const GridSpec grid{.start_s = 60, .step_s = 60, .samples = 5};  // 60 .. 300
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-a", "p"), {0, 120, 180, 600}, {9, 1, 2, 9})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "p"), {0, 120, 180, 600}, {9, 3, 4, 9})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv", grid);
  ASSERT_TRUE(t) << t.error().message;
  // Outside the range: dropped; the grid then spans the samples (120, 180) at the query step.
  EXPECT_EQ(t->start_s, 120);
  EXPECT_EQ(t->step_s, 60);
  EXPECT_EQ(t->samples, 2u);
  EXPECT_THAT(Find(*t, "ml/p").fb_used_mib, ElementsAre(1, 2));
}

TEST(TelemetryFromDcgmSeries, PodsReportingOneGpuTogetherAreLeftOut) {
  // a and b on GPU-s at the same times (time-slicing): DCGM gives each the whole GPU.
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-s", "a"), {0, 60, 120, 180}, {500, 500, 500, 500}),
                                      Series(Gpu("GPU-s", "b"), {60, 120, 180, 240}, {500, 500, 500, 500}),
                                      Series(Gpu("GPU-t", "c"), {0, 60}, {5, 5})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-s", "a"), {0, 60, 120, 180}, {50, 50, 50, 50}),
                                        Series(Gpu("GPU-s", "b"), {60, 120, 180, 240}, {50, 50, 50, 50}),
                                        Series(Gpu("GPU-t", "c"), {0, 60}, {5, 5})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].pod, "ml/c");
  ASSERT_EQ(t->skipped.size(), 1u);
  EXPECT_THAT(t->skipped[0], HasSubstr("ml/a, ml/b, GPU-s: these pods report GPU GPU-s at the same times"));
}

TEST(TelemetryFromDcgmSeries, AHandOffOnOneGpuIsNotSharing) {
  // old-0 leaves GPU-s as new-0 arrives: one step has both (a 60 s step over 30 s scrapes).
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-s", "old-0"), {0, 60, 120}, {100, 100, 100}),
                                      Series(Gpu("GPU-s", "new-0"), {120, 180, 240}, {200, 200, 200})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-s", "old-0"), {0, 60, 120}, {10, 10, 10}),
                                        Series(Gpu("GPU-s", "new-0"), {120, 180, 240}, {20, 20, 20})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->pods.size(), 2u);
  EXPECT_TRUE(t->skipped.empty());
  // Only shared pods: the error says why.
  const std::vector<PromSeries> both = {Series(Gpu("GPU-s", "a"), {0, 60, 120}, {1, 1, 1}),
                                        Series(Gpu("GPU-s", "b"), {0, 60, 120}, {1, 1, 1})};
  const Result<Telemetry> none = TelemetryFromDcgmSeries(both, both, {}, {}, {}, "srv");
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("no pod to plan; ml/a, ml/b, GPU-s: these pods report"));
}

TEST(PodKeyFromLabels, ExportedLabelsWin) {
  EXPECT_EQ(PodKeyFromLabels({{"namespace", "ml"}, {"pod", "p"}}), "ml/p");
  EXPECT_EQ(PodKeyFromLabels({{"pod", "p"}}), "p");
  EXPECT_EQ(PodKeyFromLabels({{"namespace", "gpu-operator"},
                              {"pod", "nvidia-dcgm-exporter-x7k2p"},
                              {"exported_namespace", "ml"},
                              {"exported_pod", "trainer-0"}}),
            "ml/trainer-0");
  // An idle GPU scraped that way carries only the exporter's own pod label.
  EXPECT_EQ(PodKeyFromLabels({{"namespace", "gpu-operator"}, {"pod", "nvidia-dcgm-exporter-x7k2p"}}), "");
}

// dcgm-exporter 1.x's labels on one GPU: pod_name, pod_namespace and container_name
// instead of pod, namespace and container.
std::map<std::string, std::string> GpuV1(const std::string& uuid, const std::string& pod) {
  return {{"UUID", uuid},
          {"Hostname", "node-a"},
          {"gpu", "0"},
          {"modelName", "NVIDIA A100-SXM4-80GB"},
          {"pod_name", pod},
          {"pod_namespace", "ml"},
          {"container_name", "main"}};
}

TEST(TelemetryFromDcgmSeries, SeriesWithoutThePodLabelAreDiagnosedWithTheirLabelsAndTheFix) {
  // One GPU, its memory and duty series (2 series), none with a `pod` label.
  const std::vector<PromSeries> fb = {Series(GpuV1("GPU-a", "trainer-0"), {0, 60, 120}, {100, 200, 300})};
  const std::vector<PromSeries> util = {Series(GpuV1("GPU-a", "trainer-0"), {0, 60, 120}, {50, 60, 70})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Code::kFailedPrecondition);
  EXPECT_THAT(t.error().message, HasSubstr("srv: no pod to plan: 2 DCGM series carry no `pod` label"));
  EXPECT_THAT(t.error().message,
              HasSubstr("their label names: Hostname, UUID, container_name, gpu, modelName, pod_name, pod_namespace"));
  EXPECT_THAT(t.error().message, HasSubstr("rerun with --pod-label pod_name --namespace-label pod_namespace"));
}

TEST(TelemetryFromDcgmSeries, SeriesWithoutAnyPodLikeLabelSayHowToAttributeThem) {
  const std::vector<PromSeries> fb = {Series({{"UUID", "GPU-a"}, {"gpu", "0"}}, {0, 60}, {100, 200})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, {}, {}, {}, {}, "srv");
  ASSERT_FALSE(t);
  EXPECT_THAT(t.error().message, HasSubstr("1 DCGM series carry no `pod` label (their label names: UUID, gpu)"));
  EXPECT_THAT(t.error().message, HasSubstr("run dcgm-exporter with --kubernetes"));
}

TEST(TelemetryFromDcgmSeries, AnIdleGpuBesideOnesWithPodNameIsDiagnosedInSkipped) {
  // GPU-a is held through `pod`; GPU-b's series say pod_name: a mixed fleet mid-upgrade.
  const std::vector<PromSeries> fb = {Series(Gpu("GPU-a", "server-0"), {0, 60}, {5, 6}),
                                      Series(GpuV1("GPU-b", "trainer-0"), {0, 60}, {7, 8})};
  const std::vector<PromSeries> util = {Series(Gpu("GPU-a", "server-0"), {0, 60}, {9, 8})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "srv");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_THAT(t->skipped, ::testing::Contains(HasSubstr(
                              "1 GPU: 1 DCGM series carry no `pod` label (their label names: Hostname, UUID, "
                              "container_name, gpu, modelName, pod_name, pod_namespace); `pod_name` looks like the "
                              "pod's label")));
}

TEST(TelemetryFromDcgmSeries, PodLabelNamesReadDcgmExporterOneSeries) {
  const std::vector<PromSeries> fb = {Series(GpuV1("GPU-a", "trainer-0"), {0, 60, 120}, {100, 200, 300})};
  const std::vector<PromSeries> util = {Series(GpuV1("GPU-a", "trainer-0"), {0, 60, 120}, {50, 60, 70})};
  // kube-state-metrics keeps `pod` and `namespace`: the pod's life still bounds its samples.
  const std::vector<PromSeries> created = {Series({{"namespace", "ml"}, {"pod", "trainer-0"}}, {60, 120}, {60, 60})};
  const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, created, "srv", std::nullopt, {},
                                                      PodLabelNames{.pod = "pod_name", .ns = "pod_namespace"});
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].pod, "ml/trainer-0");
  EXPECT_THAT(t->pods[0].fb_used_mib, ElementsAre(200, 300));  // created at 60: the sample at 0 is not its
  EXPECT_THAT(t->pods[0].gpu_util_pct, ElementsAre(60, 70));
  EXPECT_EQ(t->gpu_model_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(t->skipped.empty());
}

TEST(PodKeyFromLabels, OtherLabelNamesAndTheirExportedForms) {
  const PodLabelNames v1{.pod = "pod_name", .ns = "pod_namespace"};
  EXPECT_EQ(PodKeyFromLabels({{"pod_namespace", "ml"}, {"pod_name", "p"}, {"pod", "x"}}, v1), "ml/p");
  EXPECT_EQ(PodKeyFromLabels({{"pod_namespace", "ml"}, {"pod_name", "p"}}), "");
  EXPECT_EQ(PodKeyFromLabels({{"pod_namespace", "gpu-operator"},
                              {"pod_name", "x"},
                              {"exported_pod_namespace", "ml"},
                              {"exported_pod_name", "trainer-0"}},
                             v1),
            "ml/trainer-0");
}

// dcgm-exporter 1.x's OpenMetrics: GPU-a held by ml/trainer-0 for 10 minutes at 60 s, memory
// 1000 + 10 k MiB and duty 5 k % at sample k, and kube-state-metrics' kube_pod_created.
std::string DcgmExporterOneMetrics() {
  const auto t = [](int k) { return static_cast<long long>(testing::kFixtureT0) + 60 * k; };
  const std::string labels = R"(UUID="GPU-a",Hostname="node-a",gpu="0",modelName="NVIDIA A100-SXM4-80GB",)"
                             R"(pod_name="trainer-0",pod_namespace="ml",container_name="main")";
  std::string fb = "# TYPE DCGM_FI_DEV_FB_USED gauge\n", util = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
              created = "# TYPE kube_pod_created gauge\n";
  for (int k = 0; k < 10; ++k) {
    fb += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", labels, 1000 + 10 * k, t(k));
    util += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} {} {}\n", labels, 5 * k, t(k));
    created += fmt::format("kube_pod_created{{namespace=\"ml\",pod=\"trainer-0\",uid=\"u\"}} {} {}\n", t(0), t(k));
  }
  return fb + util + created + "# EOF\n";
}

TEST(ReadPrometheusTelemetry, DcgmExporterOneIsDiagnosedAndReadWithItsLabelNames) {
  testing::TempDir dir;
  auto server = testing::PrometheusServer::Start(DcgmExporterOneMetrics(), dir.path());
  ASSERT_TRUE(server) << server.error().message;
  PrometheusOptions o;
  o.url = (*server)->url();
  const TelemetryRange range{
      .since_s = testing::kFixtureT0 - 60, .until_s = testing::kFixtureT0 + 9 * 60, .step_s = 60};
  const Result<Telemetry> as_today = ReadPrometheusTelemetry(o, range);
  ASSERT_FALSE(as_today);
  EXPECT_EQ(as_today.error().code, Code::kFailedPrecondition);
  // The memory and duty series of the one GPU; Prometheus adds the scrape's `instance` and `job`.
  EXPECT_THAT(as_today.error().message, HasSubstr("no pod to plan: 2 DCGM series carry no `pod` label"));
  EXPECT_THAT(as_today.error().message, HasSubstr("pod_name, pod_namespace"));
  EXPECT_THAT(as_today.error().message, HasSubstr("rerun with --pod-label pod_name --namespace-label pod_namespace"));

  o.dcgm_labels = {.pod = "pod_name", .ns = "pod_namespace"};
  const Result<Telemetry> t = ReadPrometheusTelemetry(o, range);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].pod, "ml/trainer-0");
  EXPECT_EQ(t->samples, 10u);
  EXPECT_THAT(t->pods[0].fb_used_mib, ElementsAre(1000, 1010, 1020, 1030, 1040, 1050, 1060, 1070, 1080, 1090));
  EXPECT_THAT(t->pods[0].gpu_util_pct, ElementsAre(0, 5, 10, 15, 20, 25, 30, 35, 40, 45));
}

// Issue 40: a +Inf duty sample (a broken exporter) stored in and answered by a real
// Prometheus is an error naming the series and the time, as in a CSV.
TEST(ReadPrometheusTelemetry, ANonFiniteSampleFromARealServerIsAnError) {
  const auto t = [](int k) { return static_cast<long long>(testing::kFixtureT0) + 60 * k; };
  const std::string labels = R"(UUID="GPU-a",Hostname="node-a",gpu="0",pod="trainer-0",namespace="ml")";
  std::string fb = "# TYPE DCGM_FI_DEV_FB_USED gauge\n", util = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
  for (int k = 0; k < 10; ++k) {
    fb += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", labels, 1000 + 10 * k, t(k));
    util += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} {} {}\n", labels, k == 4 ? "+Inf" : "5", t(k));
  }
  testing::TempDir dir;
  auto server = testing::PrometheusServer::Start(fb + util + "# EOF\n", dir.path());
  ASSERT_TRUE(server) << server.error().message;
  PrometheusOptions o;
  o.url = (*server)->url();
  const TelemetryRange range{
      .since_s = testing::kFixtureT0 - 60, .until_s = testing::kFixtureT0 + 9 * 60, .step_s = 60};
  const Result<Telemetry> r = ReadPrometheusTelemetry(o, range);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_THAT(r.error().message,
              HasSubstr(fmt::format("DCGM_FI_DEV_GPU_UTIL{{pod=\"ml/trainer-0\", UUID/gpu=\"GPU-a\"}} at {}: value "
                                    "+Inf is not a finite number",
                                    t(4))));
}

TEST(ReadPrometheusTelemetry, RealServerGivesTheSameGridAsTheCsv) {
  const std::string gentd26 = testing::DataDir() + "/gentd26";
  if (!std::filesystem::exists(gentd26)) GTEST_SKIP() << "no " << gentd26;
  const Result<testing::DcgmFixture> fixture = testing::MakeDcgmFixture(gentd26, 30, 6);
  ASSERT_TRUE(fixture) << fixture.error().message;
  testing::TempDir dir;
  auto server = testing::PrometheusServer::Start(fixture->openmetrics, dir.path());
  ASSERT_TRUE(server) << server.error().message;
  PrometheusOptions o;
  o.url = (*server)->url();
  // The grid's first sample ends the first step after --since.
  const TelemetryRange range{.since_s = fixture->since_s - 60, .until_s = fixture->until_s, .step_s = 60};
  const Result<Telemetry> from_prometheus = ReadPrometheusTelemetry(o, range);
  ASSERT_TRUE(from_prometheus) << from_prometheus.error().message;
  const Result<Telemetry> from_csv = ReadLongCsv(dir.Write("fixture.csv", fixture->long_csv));
  ASSERT_TRUE(from_csv) << from_csv.error().message;

  EXPECT_EQ(from_prometheus->start_s, from_csv->start_s);
  EXPECT_EQ(from_prometheus->step_s, from_csv->step_s);
  EXPECT_EQ(from_prometheus->samples, from_csv->samples);
  ASSERT_EQ(from_prometheus->pods.size(), static_cast<std::size_t>(fixture->pods));
  ASSERT_EQ(from_csv->pods.size(), static_cast<std::size_t>(fixture->pods));
  for (std::size_t i = 0; i < from_csv->pods.size(); ++i) {
    const PodSeries &a = from_prometheus->pods[i], &b = from_csv->pods[i];
    EXPECT_EQ(a.pod, b.pod);
    EXPECT_EQ(a.first, b.first) << b.pod;
    EXPECT_EQ(a.last, b.last) << b.pod;
    EXPECT_EQ(a.fb_used_mib, b.fb_used_mib) << b.pod;
    EXPECT_EQ(a.gpu_util_pct, b.gpu_util_pct) << b.pod;
  }
  EXPECT_EQ(from_prometheus->skipped.size(), 2u);  // the two idle GPUs
  // SM activity where the fixture enabled it (sd-0, sd-3, ...): 0.8 x duty over the life.
  for (const PodSeries& p : from_prometheus->pods) {
    const int i = std::stoi(p.pod.substr(p.pod.find('-') + 1));
    ASSERT_EQ(p.sm_active_pct.empty(), i % 3 != 0) << p.pod;
    for (std::size_t k = p.first; k <= p.last && !p.sm_active_pct.empty(); ++k)
      ASSERT_NEAR(p.sm_active_pct[k], 0.8 * p.gpu_util_pct[k], 1e-3) << p.pod << " at " << k;
  }
  // Containers from cAdvisor: one per pod.
  EXPECT_EQ(from_prometheus->containers.size(), static_cast<std::size_t>(fixture->pods));

  // In chunks of at most 100 points (360 points: 4 requests per query) the answer is the same.
  o.max_points = 100;
  const Result<Telemetry> chunked = ReadPrometheusTelemetry(o, range);
  ASSERT_TRUE(chunked) << chunked.error().message;
  ASSERT_EQ(chunked->pods.size(), from_csv->pods.size());
  EXPECT_EQ(chunked->samples, from_csv->samples);
  for (std::size_t i = 0; i < from_csv->pods.size(); ++i)
    EXPECT_EQ(chunked->pods[i].fb_used_mib, from_csv->pods[i].fb_used_mib) << from_csv->pods[i].pod;
}

}  // namespace
}  // namespace gpufit

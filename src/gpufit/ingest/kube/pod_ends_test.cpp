// Pod ends from each source, and the samples after them dropped: a finished pod's stale
// samples (dcgm-exporter keeps its labels on the GPU for a while) must not dilute its
// activity. Every case: pod ml/job-0 runs at 80 % duty, 1,000 MiB, for 4 samples (0, 60,
// 120, 180 s after T0) and ends at 180 s; the exporter then reports the idle GPU (0 %,
// 0 MiB) under its name for 2 more samples. Its mean duty over its life must read 80 %, not
// the 80 x 4 / 6 = 53.3 % of the 6 samples.
#include "gpufit/ingest/kube/pod_ends.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/ingest/prometheus/telemetry.h"

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;
using Json = nlohmann::json;

constexpr double kT0 = 1767225600;  // 2026-01-01T00:00:00Z

const PodSeries& Find(const Telemetry& t, const std::string& pod) {
  for (const PodSeries& p : t.pods)
    if (p.pod == pod) return p;
  ADD_FAILURE() << "no pod " << pod;
  return t.pods.front();
}

// Mean duty over the pod's life [first, last].
double LifeMeanDuty(const PodSeries& p) {
  const auto begin = p.gpu_util_pct.begin() + static_cast<std::ptrdiff_t>(p.first);
  const auto end = p.gpu_util_pct.begin() + static_cast<std::ptrdiff_t>(p.last) + 1;
  return std::accumulate(begin, end, 0.0) / static_cast<double>(p.running_samples());
}

// The long CSV of ml/job-0 (4 live, 2 stale samples) and ml/web-0 (6 samples at 50 %).
std::string JobCsv(const std::string& extra_rows = "") {
  std::string csv = "timestamp_s,pod,metric,value\n";
  for (int k = 0; k < 6; ++k) {
    const long long t = static_cast<long long>(kT0) + 60 * k;
    const bool live = k < 4;
    csv += fmt::format("{},ml/job-0,DCGM_FI_DEV_FB_USED,{}\n{},ml/job-0,DCGM_FI_DEV_GPU_UTIL,{}\n", t, live ? 1000 : 0,
                       t, live ? 80 : 0);
    csv += fmt::format("{},ml/web-0,DCGM_FI_DEV_FB_USED,500\n{},ml/web-0,DCGM_FI_DEV_GPU_UTIL,50\n", t, t);
  }
  return csv + extra_rows;
}

TEST(PodEnds, WithoutAnEndTheStaleSamplesDiluteTheJob) {
  // The defect this file fixes, as the reader saw it before: 6 samples, 53.3 %.
  TempDir d;
  const Result<Telemetry> t = ReadLongCsv(d.Write("t.csv", JobCsv()));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(Find(*t, "ml/job-0").running_samples(), 6u);
  EXPECT_NEAR(LifeMeanDuty(Find(*t, "ml/job-0")), 80.0 * 4 / 6, 1e-4);
  EXPECT_TRUE(t->ended.empty());
}

TEST(PodEnds, ALongCsvCompletionRowDropsTheSamplesAfterTheEnd) {
  TempDir d;
  const std::string f =
      d.Write("t.csv",
              JobCsv(fmt::format("{},ml/job-0,kube_pod_completion_time,{}\n", kT0, static_cast<long long>(kT0) + 180)));
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_TRUE(t) << t.error().message;
  const PodSeries& job = Find(*t, "ml/job-0");
  EXPECT_EQ(job.first, 0u);
  EXPECT_EQ(job.last, 3u);
  EXPECT_DOUBLE_EQ(LifeMeanDuty(job), 80.0);
  EXPECT_THAT(job.gpu_util_pct, ElementsAre(80, 80, 80, 80, 0, 0));  // 0 outside the life
  EXPECT_EQ(Find(*t, "ml/web-0").running_samples(), 6u);             // no end: untouched
  ASSERT_EQ(t->ended.size(), 1u);
  EXPECT_EQ(t->ended[0].pod, "ml/job-0");
  EXPECT_EQ(t->ended[0].end_s, kT0 + 180);
  EXPECT_EQ(t->ended[0].dropped_samples, 2u);
  EXPECT_EQ(t->ended[0].source, "kube_pod_completion_time row, line 26");
}

TEST(PodEnds, ABadCompletionRowNamesTheLineAndColumn) {
  TempDir d;
  const std::string f = d.Write("t.csv", JobCsv("0,ml/job-0,kube_pod_completion_time,-1\n"));
  const Result<Telemetry> t = ReadLongCsv(f);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, Code::kInvalidArgument);
  EXPECT_THAT(t.error().message, HasSubstr(f + ":26: column 'value': must be >= 0, got -1"));
}

TEST(PodEnds, AJobWhoseEveryReportedSampleIsStaleLeavesTheTelemetry) {
  TempDir d;
  const Result<Telemetry> t = ReadLongCsv(d.Write(
      "t.csv", JobCsv(fmt::format("0,ml/job-0,kube_pod_completion_time,{}\n", static_cast<long long>(kT0) - 60))));
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->pods.size(), 1u);
  EXPECT_EQ(t->pods[0].pod, "ml/web-0");
  ASSERT_EQ(t->ended.size(), 1u);
  EXPECT_EQ(t->ended[0].dropped_samples, 6u);
}

// kubectl get pods -o json of three pods: a Succeeded job (its container finished at
// 180 s), a Failed one (containers finished at 120 s and 210 s: the latest counts), and a
// Running server whose sidecar terminated (a Running pod has not ended).
Json PodsJson() {
  auto pod = [](const std::string& name, const std::string& phase, Json statuses) {
    return Json{{"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", "ml"}}},
                {"spec", {{"containers", Json::array({{{"name", "main"}, {"image", "x"}}})}}},
                {"status", {{"phase", phase}, {"containerStatuses", statuses}}}};
  };
  auto terminated = [](const std::string& name, const std::string& at) {
    return Json{{"name", name}, {"state", {{"terminated", {{"exitCode", 0}, {"finishedAt", at}}}}}};
  };
  const Json running = {{"name", "main"}, {"state", {{"running", {{"startedAt", "2026-01-01T00:00:00Z"}}}}}};
  return Json{{"kind", "List"},
              {"items",
               {pod("job-0", "Succeeded", {terminated("main", "2026-01-01T00:03:00Z")}),
                pod("job-1", "Failed",
                    {terminated("main", "2026-01-01T00:02:00Z"), terminated("side", "2026-01-01T00:03:30Z")}),
                pod("web-0", "Running", {running, terminated("side", "2026-01-01T00:01:00Z")})}}};
}

TEST(PodEnds, KubectlPodsEndAtTheirLatestFinishedAtOnlyWhenSucceededOrFailed) {
  TempDir d;
  const Result<std::vector<KubePod>> pods = ReadKubePods(d.Write("pods.json", PodsJson().dump()));
  ASSERT_TRUE(pods) << pods.error().message;
  const PodEnds ends = PodEndsFromKubePods(*pods);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends.at("ml/job-0"), (std::vector<KnownEnd>{{kT0 + 180, "pods JSON finishedAt"}}));
  EXPECT_EQ(ends.at("ml/job-1"), (std::vector<KnownEnd>{{kT0 + 210, "pods JSON finishedAt"}}));
  EXPECT_EQ(ends.count("ml/web-0"), 0u);

  const Result<Telemetry> t = ReadLongCsv(d.Write("t.csv", JobCsv()), ends);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(LifeMeanDuty(Find(*t, "ml/job-0")), 80.0);
  ASSERT_EQ(t->ended.size(), 1u);
  EXPECT_EQ(t->ended[0].source, "pods JSON finishedAt");
  EXPECT_EQ(t->ended[0].dropped_samples, 2u);
}

TEST(PodEnds, ABadFinishedAtNamesTheField) {
  Json pods = PodsJson();
  pods["items"][0]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = 5;
  TempDir d;
  const Result<std::vector<KubePod>> r = ReadKubePods(d.Write("pods.json", pods.dump()));
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("items[0] (ml/job-0): .status.containerStatuses[0].state.terminated.finishedAt: expected a "
                        "string, got number"));
}

PromSeries Series(std::map<std::string, std::string> labels, std::vector<double> t, std::vector<double> v) {
  return {.labels = std::move(labels), .time_s = std::move(t), .value = std::move(v)};
}
std::map<std::string, std::string> Pod(const std::string& pod, std::map<std::string, std::string> more = {}) {
  more["namespace"] = "ml";
  more["pod"] = pod;
  return more;
}
std::map<std::string, std::string> Gpu(const std::string& uuid, const std::string& pod) {
  return {{"UUID", uuid}, {"Hostname", "node-a"}, {"gpu", "0"}, {"namespace", pod.empty() ? "" : "ml"}, {"pod", pod}};
}

// The DCGM answers of JobCsv (job-0 on GPU-j, web-0 on GPU-w, job-1 on GPU-f like job-0),
// and kube_pod_created for each (the pod objects stay: a Completed Job pod is kept).
struct Answers {
  std::vector<PromSeries> fb, util, created;
};
Answers JobAnswers() {
  const std::vector<double> t = {kT0, kT0 + 60, kT0 + 120, kT0 + 180, kT0 + 240, kT0 + 300};
  Answers a;
  for (const char* job : {"job-0", "job-1"}) {
    a.fb.push_back(Series(Gpu(std::string("GPU-") + job, job), t, {1000, 1000, 1000, 1000, 0, 0}));
    a.util.push_back(Series(Gpu(std::string("GPU-") + job, job), t, {80, 80, 80, 80, 0, 0}));
  }
  a.fb.push_back(Series(Gpu("GPU-w", "web-0"), t, {500, 500, 500, 500, 500, 500}));
  a.util.push_back(Series(Gpu("GPU-w", "web-0"), t, {50, 50, 50, 50, 50, 50}));
  for (const char* pod : {"job-0", "job-1", "web-0"}) a.created.push_back(Series(Pod(pod), t, std::vector(6, kT0)));
  return a;
}
const GridSpec kGrid{.start_s = kT0, .step_s = 60, .samples = 6};

TEST(PodEnds, KubeStateMetricsEndsAFinishedPodWhoseObjectStays) {
  // job-0: completion time 180 s, phase Succeeded from the 240 s evaluation on;
  // job-1: Failed from 240 s, no completion time (the end is the first step showing it);
  // web-0: a completion time (its sidecar terminated) but Running: not ended.
  const std::vector<double> late = {kT0 + 180, kT0 + 240, kT0 + 300};
  const std::vector<PromSeries> completion = {
      Series(Pod("job-0", {{"uid", "u0"}}), late, {kT0 + 180, kT0 + 180, kT0 + 180}),
      Series(Pod("web-0", {{"uid", "uw"}}), late, {kT0 + 60, kT0 + 60, kT0 + 60})};
  const std::vector<PromSeries> phase = {
      Series(Pod("job-0", {{"uid", "u0"}, {"phase", "Succeeded"}}), late, {0, 1, 1}),
      Series(Pod("job-0", {{"uid", "u0"}, {"phase", "Failed"}}), late, {0, 0, 0}),
      Series(Pod("job-1", {{"uid", "u1"}, {"phase", "Failed"}}), late, {0, 1, 1}),
      Series(Pod("web-0", {{"uid", "uw"}, {"phase", "Succeeded"}}), late, {0, 0, 0})};
  const PodEnds ends = PodEndsFromKubeStateMetrics(completion, phase);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends.at("ml/job-0"), (std::vector<KnownEnd>{{kT0 + 180, "kube_pod_completion_time"}}));
  EXPECT_EQ(ends.at("ml/job-1"), (std::vector<KnownEnd>{{kT0 + 240, "kube_pod_status_phase"}}));

  const Answers a = JobAnswers();
  const Result<Telemetry> t = TelemetryFromDcgmSeries(a.fb, a.util, {}, {}, a.created, "srv", kGrid, ends);
  ASSERT_TRUE(t) << t.error().message;
  // job-0 keeps 0..180 s: the 240 s step, (180, 240], began after the end.
  EXPECT_EQ(Find(*t, "ml/job-0").running_samples(), 4u);
  EXPECT_DOUBLE_EQ(LifeMeanDuty(Find(*t, "ml/job-0")), 80.0);
  // job-1 keeps 0..240 s: its end (240 s) is only known to within the step (180, 240].
  EXPECT_EQ(Find(*t, "ml/job-1").running_samples(), 5u);
  EXPECT_DOUBLE_EQ(LifeMeanDuty(Find(*t, "ml/job-1")), 80.0 * 4 / 5);
  EXPECT_EQ(Find(*t, "ml/web-0").running_samples(), 6u);
  ASSERT_EQ(t->ended.size(), 2u);
  EXPECT_EQ(t->ended[0].pod, "ml/job-0");
  EXPECT_EQ(t->ended[0].end_s, kT0 + 180);
  EXPECT_EQ(t->ended[0].source, "kube_pod_completion_time");
  EXPECT_EQ(t->ended[0].dropped_samples, 2u);
  EXPECT_EQ(t->ended[1].pod, "ml/job-1");
  EXPECT_EQ(t->ended[1].source, "kube_pod_status_phase");
  EXPECT_EQ(t->ended[1].dropped_samples, 1u);
}

TEST(PodEnds, KubectlEndsCutPrometheusSamplesWithoutKubeStateMetrics) {
  TempDir d;
  const Result<std::vector<KubePod>> pods = ReadKubePods(d.Write("pods.json", PodsJson().dump()));
  ASSERT_TRUE(pods) << pods.error().message;
  const Answers a = JobAnswers();
  const Result<Telemetry> t =
      TelemetryFromDcgmSeries(a.fb, a.util, {}, {}, {}, "srv", kGrid, PodEndsFromKubePods(*pods));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(LifeMeanDuty(Find(*t, "ml/job-0")), 80.0);
  // job-1 ended at 210 s: the 240 s step (180, 240] holds its end and stays.
  EXPECT_EQ(Find(*t, "ml/job-1").running_samples(), 5u);
  ASSERT_EQ(t->ended.size(), 2u);
  EXPECT_EQ(t->ended[0].source, "pods JSON finishedAt");
  EXPECT_EQ(t->ended[0].dropped_samples, 2u);
  EXPECT_EQ(t->ended[1].dropped_samples, 1u);
}

TEST(PodEnds, APodObjectThatDisappearsIsCountedToo) {
  // kube_pod_created of job-0 stops after 180 s (the pod was deleted): its later DCGM
  // samples were already dropped; now they are also counted.
  Answers a = JobAnswers();
  a.created[0] = Series(Pod("job-0"), {kT0, kT0 + 60, kT0 + 120, kT0 + 180}, std::vector(4, kT0));
  const Result<Telemetry> t = TelemetryFromDcgmSeries(a.fb, a.util, {}, {}, a.created, "srv", kGrid);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(LifeMeanDuty(Find(*t, "ml/job-0")), 80.0);
  ASSERT_EQ(t->ended.size(), 1u);
  EXPECT_EQ(t->ended[0].end_s, kT0 + 180);
  EXPECT_EQ(t->ended[0].source, "kube_pod_created (the pod object's last sample)");
  EXPECT_EQ(t->ended[0].dropped_samples, 2u);
}

TEST(ReservedGpuMemoryFromDcgm, ThePeakOfEachGpuNoPodHolds) {
  auto exporter = Gpu("GPU-x", "nvidia-dcgm-exporter-7xk2p");  // the scrape target's own label
  exporter["namespace"] = "gpu-operator";
  const std::vector<PromSeries> fb = {
      Series(Gpu("GPU-r", ""), {kT0, kT0 + 60, kT0 + 120}, {0, 6000, 5500.5}),
      Series(Gpu("GPU-z", ""), {kT0, kT0 + 60}, {0, 0}),             // idle: nothing to reserve
      Series(exporter, {kT0, kT0 + 60}, {2047.2, 100}),              // no pod: 2,048 MiB (rounded up)
      Series(Gpu("GPU-p", "job-0"), {kT0, kT0 + 60}, {9000, 9000}),  // a pod's
      Series(Gpu("GPU-r", ""), {kT0 + 600}, {70000}),                // outside the grid
  };
  const Result<std::vector<ReservedGpuMemory>> r = ReservedGpuMemoryFromDcgm(fb, GridSpec{kT0, 60, 3});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].gpu, "GPU-r");
  EXPECT_EQ((*r)[0].host, "node-a");
  EXPECT_EQ((*r)[0].peak, MiB{6000});
  EXPECT_EQ((*r)[1].gpu, "GPU-x");
  EXPECT_EQ((*r)[1].peak, MiB{2048});
  // The same figure reaches the telemetry.
  const Answers a = JobAnswers();
  std::vector<PromSeries> with = a.fb;
  with.push_back(fb[0]);
  const Result<Telemetry> t = TelemetryFromDcgmSeries(with, a.util, {}, {}, a.created, "srv", kGrid);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->reserved_gpu_memory.size(), 1u);
  EXPECT_EQ(t->reserved_gpu_memory[0].peak, MiB{6000});
}

}  // namespace
}  // namespace gpufit

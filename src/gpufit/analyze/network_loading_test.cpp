#include "gpufit/analyze/network_loading.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpufit/plan/ancillary_plan.h"

namespace gpufit {
namespace {

constexpr double kGbit = 125e6;  // 1 Gbit/s in bytes/s

PodSeries Pod(const std::string& name, std::vector<float> fb, std::vector<float> duty) {
  PodSeries p;
  p.pod = name;
  p.first = 0;
  p.last = fb.size() - 1;
  p.fb_used_mib = std::move(fb);
  p.gpu_util_pct = std::move(duty);
  return p;
}

Telemetry Grid(std::vector<PodSeries> pods) {
  Telemetry t;
  t.start_s = 1000;
  t.step_s = 60;
  t.samples = pods.front().fb_used_mib.size();
  t.pods = std::move(pods);
  return t;
}

// A 6-sample pod on a 1 Gbit/s node loading 2,048 MiB over steps 2 and 3.
TEST(AnalyzeNetworkLoading, ALoadAtTheLinkForMostOfItsStepsIsBoundAndPriced) {
  const Telemetry t = Grid({Pod("ns/a", {300, 300, 1300, 2348, 2348, 2348}, {0, 0, 0, 0, 50, 50})});
  const std::vector<PodNetwork> net = {{"ns/a", "n1", {NAN, 1e5, 1.2e8, 1.1e8, 1e5, 1e5}}};
  const std::vector<NodeLink> links = {{"n1", "eth0", kGbit, ""}, {"n2", "ens5", 25 * kGbit, ""}};
  const NetworkReport r = AnalyzeNetworkLoading(t, net, links);
  ASSERT_EQ(r.loads.size(), 1u);
  const NetworkLoad& l = r.loads[0];
  EXPECT_EQ(l.start_s, 1060);  // sample 1, the last at or below 1,024 MiB
  EXPECT_EQ(l.steps, 2u);
  EXPECT_EQ(l.seconds, 120);
  EXPECT_EQ(l.model_mib, 2048);
  EXPECT_DOUBLE_EQ(l.received_bytes, (1.2e8 + 1.1e8) * 60);
  EXPECT_EQ(l.steps_at_link, 2u);  // 1.2e8 and 1.1e8 >= 0.8 x 1.25e8 = 1e8
  EXPECT_TRUE(l.network_bound);
  const double bytes = 2048.0 * 1048576;
  EXPECT_DOUBLE_EQ(l.cache_s, bytes / 2e9);
  EXPECT_DOUBLE_EQ(l.cache_saved_s, 120 - bytes / 2e9);
  EXPECT_DOUBLE_EQ(l.faster_link_bytes_per_s, 25 * kGbit);
  EXPECT_DOUBLE_EQ(l.faster_link_saved_s, 120 - bytes / (25 * kGbit));
  EXPECT_EQ(l.p2p_saved_s, 0);
  ASSERT_EQ(r.pods.size(), 1u);
  EXPECT_EQ(r.pods[0].network_bound_loads, 1u);
  EXPECT_EQ(r.pods[0].data_samples, 3u);  // samples 1, 4 and 5 (sample 0 has no rate)
  EXPECT_FALSE(r.pods[0].data_bound);
}

TEST(AnalyzeNetworkLoading, HalfTheStepsAtTheLinkIsBoundLessIsNot) {
  const Telemetry t = Grid({Pod("ns/half", {300, 1300, 2300, 3300, 4300}, {0, 0, 0, 0, 0}),
                            Pod("ns/less", {300, 1300, 2300, 3300, 4300}, {0, 0, 0, 0, 0})});
  const std::vector<PodNetwork> net = {{"ns/half", "n1", {NAN, 1.2e8, 1.2e8, 5e7, 5e7}},
                                       {"ns/less", "n1", {NAN, 1.2e8, 5e7, 5e7, 5e7}}};
  const NetworkReport r = AnalyzeNetworkLoading(t, net, {{"n1", "eth0", kGbit, ""}});
  ASSERT_EQ(r.loads.size(), 2u);
  EXPECT_TRUE(r.loads[0].network_bound);   // 2 of 4 steps
  EXPECT_FALSE(r.loads[1].network_bound);  // 1 of 4
  EXPECT_EQ(r.loads[1].cache_saved_s, 0);  // remedies only for bound loads
  // No faster node than the only one: no faster-link remedy.
  EXPECT_EQ(r.loads[0].faster_link_bytes_per_s, 0);
  EXPECT_EQ(r.loads[0].faster_link_saved_s, 0);
}

TEST(AnalyzeNetworkLoading, RisesNotFromNearZeroOrTooSmallAreNoLoads) {
  // From 2,000 MiB (above 1,024): a second model swapped in is not judged as a cold load;
  // a rise of 512 MiB in all is under the 1,024 MiB minimum.
  const Telemetry t = Grid(
      {Pod("ns/warm", {2000, 2000, 5000, 5000}, {0, 0, 0, 0}), Pod("ns/small", {300, 300, 812, 812}, {0, 0, 0, 0})});
  const std::vector<PodNetwork> net = {{"ns/warm", "n1", {NAN, 1.2e8, 1.2e8, 1.2e8}},
                                       {"ns/small", "n1", {NAN, 1.2e8, 1.2e8, 1.2e8}}};
  const NetworkReport r = AnalyzeNetworkLoading(t, net, {{"n1", "eth0", kGbit, ""}});
  EXPECT_TRUE(r.loads.empty());
}

TEST(AnalyzeNetworkLoading, DataLoadingAtTheLinkWithAnIdleGpuIsFlaggedFromTenPercent) {
  // 10 samples with a rate (1-10); 1 of them at the link with duty < 50%: 10%, flagged.
  // Another at the link with a busy GPU does not count.
  std::vector<float> fb(11, 20000), duty(11, 80), rx(11, 1e6);
  rx[0] = NAN;
  rx[3] = 1.1e8, duty[3] = 10;
  rx[6] = 1.1e8;
  const Telemetry t = Grid({Pod("ns/train", fb, duty)});
  const NetworkReport r = AnalyzeNetworkLoading(t, {{"ns/train", "n1", rx}}, {{"n1", "eth0", kGbit, ""}});
  ASSERT_EQ(r.pods.size(), 1u);
  EXPECT_EQ(r.pods[0].data_samples, 10u);
  EXPECT_EQ(r.pods[0].data_bound_samples, 1u);
  EXPECT_TRUE(r.pods[0].data_bound);
}

TEST(AnalyzeNetworkLoading, PodsWithoutSeriesNodeOrLinkAreListedNotJudged) {
  const Telemetry t =
      Grid({Pod("ns/a", {300, 300}, {0, 0}), Pod("ns/b[0]", {300, 300}, {0, 0}), Pod("ns/c", {300, 300}, {0, 0})});
  const std::vector<PodNetwork> net = {{"ns/b", "", {NAN, 1}}, {"ns/c", "n9", {NAN, 1}}};
  const NetworkReport r = AnalyzeNetworkLoading(t, net, {{"n1", "eth0", kGbit, ""}});
  ASSERT_EQ(r.not_judged.size(), 3u);
  EXPECT_EQ(r.not_judged[0], "ns/a: no container_network_receive_bytes_total series");
  EXPECT_EQ(r.not_judged[1], "ns/b[0]: node unknown (kube_pod_info or --pods)");  // by its pod key
  EXPECT_EQ(r.not_judged[2], "ns/c: no node_network_speed_bytes for node n9");
  EXPECT_TRUE(r.pods.empty());
}

TEST(AnalyzeNetworkLoading, EveryPodOnANodeWithAnUnusableLinkSpeedIsListedWithThatReason) {
  const Telemetry t = Grid({Pod("ns/a", {300, 300}, {0, 0}), Pod("ns/b", {300, 300}, {0, 0})});
  const std::vector<PodNetwork> net = {{"ns/a", "n0", {NAN, 1}}, {"ns/b", "n0", {NAN, 1}}};
  const std::string why =
      "node_network_speed_bytes{device=\"eth0\"} is 0 (0, negative or NaN in every sample): "
      "link speed unknown";
  const NetworkReport r = AnalyzeNetworkLoading(t, net, {{"n0", "eth0", 0, "", why}});
  ASSERT_EQ(r.not_judged.size(), 2u);
  EXPECT_EQ(r.not_judged[0], "ns/a: node n0: " + why);
  EXPECT_EQ(r.not_judged[1], "ns/b: node n0: " + why);
  EXPECT_TRUE(r.pods.empty());
  // The summary lists every pod, not only the first.
  const std::string md = NetworkReportToMarkdown(r);
  EXPECT_NE(md.find("2 pods not judged:\n\n- ns/a: node n0: "), std::string::npos) << md;
  EXPECT_NE(md.find("\n- ns/b: node n0: "), std::string::npos) << md;
}

}  // namespace
}  // namespace gpufit

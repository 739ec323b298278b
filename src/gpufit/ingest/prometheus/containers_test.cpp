#include "gpufit/ingest/prometheus/containers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;

PromSeries Series(Labels labels, std::vector<double> t, std::vector<double> v) {
  return {.labels = std::move(labels), .time_s = std::move(t), .value = std::move(v)};
}

Labels Container(const std::string& id) {
  return {{"namespace", "ml"}, {"pod", "p"}, {"container", "c"}, {"image", "img:1"}, {"id", id}};
}

// NaN-aware comparison of a series with the expected values (NaN = no data).
void ExpectSeries(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "sample " << i << " is " << got[i];
    else
      EXPECT_FLOAT_EQ(got[i], static_cast<float>(want[i])) << "sample " << i;
  }
}

TEST(AddContainerSeries, RatesFromCountersWithResetsRestartsAndThrottling) {
  Telemetry t;
  t.start_s = 0;
  t.step_s = 60;
  t.samples = 5;
  const double nan = std::nan("");
  const double mib = 1048576;
  // Cgroup /a: 60 CPU-seconds in the first minute, 90 in the second, then the counter resets
  // and reads 30 (Prometheus: the increase is 30). The container restarts as cgroup /b.
  const std::vector<PromSeries> cpu = {
      Series(Container("/a"), {0, 60, 120, 180}, {0, 60, 150, 30}),
      Series(Container("/b"), {180, 240, 300}, {10, 130, 500}),                           // 300 s is past the grid
      Series({{"namespace", "ml"}, {"pod", "p"}, {"container", ""}}, {0, 60}, {0, 999}),  // pod cgroup: dropped
  };
  const std::vector<PromSeries> periods = {Series(Container("/a"), {0, 60, 120}, {0, 600, 1200})};
  const std::vector<PromSeries> throttled = {Series(Container("/a"), {0, 60, 120}, {0, 150, 450})};
  const std::vector<PromSeries> memory = {Series(Container("/a"), {0, 60}, {100 * mib, 200.5 * mib})};
  const std::vector<PromSeries> requests = {
      Series({{"namespace", "ml"}, {"pod", "p"}, {"container", "c"}, {"resource", "cpu"}}, {0, 60}, {0.5, 0.25}),
      Series({{"namespace", "ml"}, {"pod", "p"}, {"container", "c"}, {"resource", "memory"}}, {0}, {1.5 * mib + 1}),
      Series({{"namespace", "ml"}, {"pod", "other"}, {"container", "c"}, {"resource", "cpu"}}, {0}, {4}),
  };
  const std::vector<PromSeries> limits = {
      Series({{"namespace", "ml"}, {"pod", "p"}, {"container", "c"}, {"resource", "cpu"}}, {0}, {1})};
  AddContainerSeries(cpu, periods, throttled, memory, requests, limits, t);

  ASSERT_EQ(t.containers.size(), 1u);
  const ContainerSeries& c = t.containers[0];
  EXPECT_EQ(c.pod, "ml/p");
  EXPECT_EQ(c.container, "c");
  EXPECT_EQ(c.image, "img:1");
  ExpectSeries(c.cpu_cores, {nan, 1.0, 1.5, 0.5, 2.0});
  ExpectSeries(c.cpu_throttled_ratio, {nan, 0.25, 0.5, nan, nan});
  ExpectSeries(c.memory_working_set_mib, {100, 200.5, nan, nan, nan});
  EXPECT_EQ(c.cpu_request->value, 250);   // the last value in the range
  EXPECT_EQ(c.memory_request->value, 2);  // 1.5 MiB + 1 byte, rounded up
  EXPECT_EQ(c.cpu_limit->value, 1000);
  EXPECT_FALSE(c.memory_limit);
}

// VictoriaMetrics keeps each series' __name__ on max_over_time (Prometheus drops it): the
// throttled and periods series of one cgroup still pair. By hand: 150 of 600, 300 of 600.
TEST(AddContainerSeries, ThrottlingPairsSeriesThatKeepTheirMetricName) {
  Telemetry t;
  t.start_s = 0;
  t.step_s = 60;
  t.samples = 3;
  Labels periods_labels = Container("/a"), throttled_labels = Container("/a");
  periods_labels["__name__"] = "container_cpu_cfs_periods_total";
  throttled_labels["__name__"] = "container_cpu_cfs_throttled_periods_total";
  AddContainerSeries({}, {Series(periods_labels, {0, 60, 120}, {0, 600, 1200})},
                     {Series(throttled_labels, {0, 60, 120}, {0, 150, 450})}, {}, {}, {}, t);
  ASSERT_EQ(t.containers.size(), 1u);
  ExpectSeries(t.containers[0].cpu_throttled_ratio, {std::nan(""), 0.25, 0.5});
}

}  // namespace
}  // namespace gpufit

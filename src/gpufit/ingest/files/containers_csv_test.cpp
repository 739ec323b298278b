#include "gpufit/ingest/files/containers_csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

Telemetry Grid() {  // 5 samples at 100, 160, ..., 340 s
  Telemetry t;
  t.start_s = 100;
  t.step_s = 60;
  t.samples = 5;
  return t;
}

TEST(ContainersCsv, SamplesGoToTheNearestGridPointAndRequestsToTheContainer) {
  const testing::TempDir dir;
  const std::string path = dir.Write("c.csv",
                                     "metric,value,timestamp_s,pod,container,image,extra\n"
                                     "container_cpu_usage_cores,1.5,101,ns/p,app,reg.io/app:1,x\n"
                                     "container_cpu_usage_cores,2.5,125,ns/p,app,,x\n"  // same point: the larger
                                     "container_cpu_usage_cores,9,20,ns/p,app,,x\n"     // before the grid: dropped
                                     "container_cpu_cfs_throttled_ratio,0.25,220,ns/p,app,,x\n"
                                     "container_memory_working_set_bytes,1073741824,340,ns/p,app,,x\n"
                                     "kube_pod_container_resource_requests_cpu_cores,0.25,0,ns/p,app,,x\n"
                                     "kube_pod_container_resource_limits_memory_bytes,536870912,0,ns/p,app,,x\n"
                                     "container_network_receive_bytes_total,5,100,ns/p,app,,x\n"  // skipped
                                     "container_cpu_usage_cores,0.1,100,ns/a,sidecar,envoyproxy/envoy:v1,x\n");
  const Result<std::vector<ContainerSeries>> c = ReadContainersCsv(path, Grid());
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].pod, "ns/a");  // by pod, container
  const ContainerSeries& p = (*c)[1];
  EXPECT_EQ(p.container, "app");
  EXPECT_EQ(p.image, "reg.io/app:1");
  ASSERT_EQ(p.cpu_cores.size(), 5u);
  EXPECT_FLOAT_EQ(p.cpu_cores[0], 2.5f);
  EXPECT_TRUE(std::isnan(p.cpu_cores[1]));
  EXPECT_FLOAT_EQ(p.cpu_throttled_ratio[2], 0.25f);
  EXPECT_FLOAT_EQ(p.memory_working_set_mib[4], 1024.0f);
  EXPECT_EQ(p.cpu_request, MilliCpu{250});
  EXPECT_FALSE(p.cpu_limit.has_value());
  EXPECT_EQ(p.memory_limit, MiB{512});
}

TEST(ContainersCsv, BadInputNamesTheFileLineAndColumn) {
  const testing::TempDir dir;
  const std::string header = "timestamp_s,pod,container,image,metric,value\n";
  struct Case {
    const char* name;
    std::string text;
    const char* expect;
  } cases[] = {
      {"missing column", "timestamp_s,pod,image,metric,value\n0,a,i,container_cpu_usage_cores,1\n", "container"},
      {"ratio above one", header + "0,a,b,,container_cpu_cfs_throttled_ratio,1.5\n", "c.csv:2"},
      {"negative", header + "0,a,b,,container_cpu_usage_cores,-1\n", "c.csv:2"},
      {"nan", header + "0,a,b,,container_cpu_usage_cores,nan\n", "c.csv:2"},
      {"empty pod", header + "0,,b,,container_cpu_usage_cores,1\n", "c.csv:2"},
      {"no rows", header, "no data rows"},
      {"another clock", header + "99999,a,b,,container_cpu_usage_cores,1\n", "none of its 1 samples falls within"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    const Result<std::vector<ContainerSeries>> c = ReadContainersCsv(dir.Write("c.csv", k.text), Grid());
    ASSERT_FALSE(c);
    EXPECT_THAT(c.error().message, HasSubstr(k.expect));
  }
  EXPECT_EQ(ReadContainersCsv(dir.path() + "/none.csv", Grid()).error().code, Code::kNotFound);
}

}  // namespace
}  // namespace gpufit

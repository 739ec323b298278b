#include "gpufit/ingest/files/openb_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

using testing::DataDir;
using ::testing::HasSubstr;
using testing::TempDir;

const char* kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

TEST(ReadOpenbNodes, RealNodeListHas1213NodesAnd6212Gpus) {
  const std::string path = DataDir() + "/openb/openb_node_list_gpu_node.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Result<std::vector<NodeSpec>> nodes = ReadOpenbNodes(path);
  ASSERT_TRUE(nodes.has_value()) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 1213u);  // the data README
  int gpus = 0;
  for (const NodeSpec& n : *nodes) gpus += n.gpu_count;
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(nodes->front().name, "openb-node-0000");
  EXPECT_EQ(nodes->front().cpu.value, 64000);
  EXPECT_EQ(nodes->front().memory.value, 262144);
  EXPECT_EQ(nodes->front().gpu_model, "P100");
}

TEST(ReadOpenbPods, RealPodListHas8152PodsOf3078Sharing) {
  const std::string path = DataDir() + "/openb/openb_pod_list_default.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path);
  ASSERT_TRUE(pods.has_value()) << pods.error().message;
  ASSERT_EQ(pods->size(), 8152u);
  int sharing = 0;
  for (const PodSpec& p : *pods) sharing += p.SharesGpu();
  EXPECT_EQ(sharing, 3078);            // the count of pods asking for a fraction of one GPU
  const PodSpec& second = (*pods)[1];  // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
  EXPECT_EQ(second.cpu.value, 6000);
  EXPECT_EQ(second.gpu_per_gpu.value, 460);
  EXPECT_EQ(second.creation.count(), 427061.0);
  ASSERT_TRUE(second.deletion.has_value());
  EXPECT_EQ(second.deletion->count(), 12902960.0);
}

TEST(ReadOpenbPods, GpuSpecIsSplitOnBars) {
  TempDir dir;
  const std::string path =
      dir.Write("pods.csv", std::string(kPodHeader) + "p0,1000,10,1,500,T4|V100M32,LS,Running,0,,\n");
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path);
  ASSERT_TRUE(pods.has_value()) << pods.error().message;
  EXPECT_THAT((*pods)[0].gpu_models, ::testing::ElementsAre("T4", "V100M32"));
  EXPECT_FALSE((*pods)[0].deletion.has_value());  // empty deletion_time: never leaves
}

struct BadPod {
  const char* name;
  const char* row;
  const char* expected;
};

TEST(ReadOpenbPods, BadRowsAreRejectedWithLineAndColumn) {
  const BadPod cases[] = {
      {"negative cpu", "p0,-5,10,0,0,,LS,Running,0,1,0", "pods.csv:2: column 'cpu_milli': must be >= 0"},
      {"not a number", "p0,abc,10,0,0,,LS,Running,0,1,0", "pods.csv:2: column 'cpu_milli': expected a number"},
      {"fraction of a core", "p0,1.5,10,0,0,,LS,Running,0,1,0", "column 'cpu_milli': expected a whole number"},
      {"NaN memory", "p0,1,nan,0,0,,LS,Running,0,1,0", "column 'memory_mib'"},
      {"milli over 1000", "p0,1,10,1,1200,,LS,Running,0,1,0", "column 'gpu_milli': must be 1..1000"},
      {"zero milli with a GPU", "p0,1,10,1,0,,LS,Running,0,1,0", "column 'gpu_milli': must be 1..1000"},
      {"milli without GPU", "p0,1,10,0,300,,LS,Running,0,1,0", "a pod with num_gpu 0 must ask for 0"},
      {"shared multi-GPU", "p0,1,10,2,500,,LS,Running,0,1,0", "a pod with 2 GPUs takes whole GPUs"},
      {"leaves before it comes", "p0,1,10,0,0,,LS,Running,9,3,0",
       "column 'deletion_time': 3 is before creation_time 9"},
      {"empty name", ",1,10,0,0,,LS,Running,0,1,0", "column 'name': empty value"},
  };
  for (const BadPod& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string path = dir.Write("pods.csv", std::string(kPodHeader) + c.row + "\n");
    const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path);
    ASSERT_FALSE(pods.has_value());
    EXPECT_EQ(pods.error().code, Code::kInvalidArgument);
    EXPECT_THAT(pods.error().message, HasSubstr(c.expected));
  }
}

TEST(ReadOpenbPods, DuplicateNameIsRejected) {
  TempDir dir;
  const std::string path = dir.Write(
      "pods.csv", std::string(kPodHeader) + "p0,1,10,0,0,,LS,Running,0,1,0\n" + "p0,1,10,0,0,,LS,Running,0,1,0\n");
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path);
  ASSERT_FALSE(pods.has_value());
  EXPECT_THAT(pods.error().message, HasSubstr("pods.csv:3: column 'name': pod 'p0' appears twice"));
}

TEST(ReadOpenbPods, MissingRequiredColumnAndMissingFileAreClearErrors) {
  TempDir dir;
  const std::string no_gpu_milli = dir.Write("pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_spec\np0,1,1,0,\n");
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(no_gpu_milli);
  ASSERT_FALSE(pods.has_value());
  EXPECT_EQ(pods.error().code, Code::kInvalidArgument);
  EXPECT_THAT(pods.error().message, HasSubstr("pods.csv: Missing column \"gpu_milli\""));

  const Result<std::vector<PodSpec>> missing = ReadOpenbPods(dir.path() + "/nope.csv");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

// The openb multigpu lists are published with only the five required columns; the
// trace's own converter (pod_csv_to_yaml.py) reads gpu_spec and the times only if a row
// has them.
TEST(ReadOpenbPods, ListWithOnlyTheRequiredColumnsIsRead) {
  TempDir dir;
  const std::string path = dir.Write(
      "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,6000,12288,1,460\np1,32000,65536,8,1000\n");
  OpenbPodColumns present{.gpu_spec = true, .creation_time = true, .deletion_time = true};
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path, &present);
  ASSERT_TRUE(pods.has_value()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].gpu_per_gpu.value, 460);
  EXPECT_EQ((*pods)[1].gpu_count, 8);
  for (const PodSpec& p : *pods) {
    EXPECT_TRUE(p.gpu_models.empty());  // any GPU type
    EXPECT_EQ(p.creation.count(), 0.0);
    EXPECT_FALSE(p.deletion.has_value());
  }
  EXPECT_FALSE(present.gpu_spec);
  EXPECT_FALSE(present.creation_time);
  EXPECT_FALSE(present.deletion_time);
}

TEST(ReadOpenbPods, EachOptionalColumnIsReadWhenAloneAndReported) {
  TempDir dir;
  const std::string path = dir.Write(
      "pods.csv", "deletion_time,name,cpu_milli,memory_mib,num_gpu,gpu_milli\n40,p0,1000,10,1,500\n,p1,1,1,0,0\n");
  OpenbPodColumns present;
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path, &present);
  ASSERT_TRUE(pods.has_value()) << pods.error().message;
  ASSERT_TRUE((*pods)[0].deletion.has_value());
  EXPECT_EQ((*pods)[0].deletion->count(), 40.0);  // created at 0 (no column)
  EXPECT_FALSE((*pods)[1].deletion.has_value());  // empty cell: never leaves
  EXPECT_FALSE(present.gpu_spec);
  EXPECT_FALSE(present.creation_time);
  EXPECT_TRUE(present.deletion_time);
}

TEST(ReadOpenbPods, RealMultigpu50ListHas9061PodsAndHalfTheGpusInMultiGpuPods) {
  const std::string path = DataDir() + "/openb/openb_pod_list_multigpu50.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Result<std::vector<PodSpec>> pods = ReadOpenbPods(path);
  ASSERT_TRUE(pods.has_value()) << pods.error().message;
  ASSERT_EQ(pods->size(), 9061u);  // 9,062 lines with the header (wc -l)
  std::int64_t multi = 0, all = 0, sharing = 0;
  for (const PodSpec& p : *pods) {
    all += p.TotalGpu().value;
    if (p.gpu_count > 1) multi += p.TotalGpu().value;
    sharing += p.SharesGpu();
  }
  EXPECT_EQ(sharing, 3078);  // the default list's sharing pods, unchanged
  // The data README: pods asking for 2, 4 or 8 GPUs hold about half of the requested GPUs
  // (222 x 2 + 206 x 4 + 556 x 8 = 5,716 of 11,358.8, counted with awk).
  EXPECT_EQ(multi, 5716 * 1000);
  EXPECT_EQ(all, 11358800);
}

TEST(ReadOpenbNodes, BadNodesAreRejected) {
  const BadPod cases[] = {
      {"GPUs without a type", "n0,1000,10,2,", "nodes.csv:2: column 'model': a node with 2 GPUs needs its GPU type"},
      {"too many GPUs", "n0,1000,10,17,T4", "column 'gpu': at most 16 GPUs per node, got 17"},
      {"negative memory", "n0,1000,-1,1,T4", "column 'memory_mib': must be >= 0"},
  };
  for (const BadPod& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string path = dir.Write("nodes.csv", std::string("sn,cpu_milli,memory_mib,gpu,model\n") + c.row + "\n");
    const Result<std::vector<NodeSpec>> nodes = ReadOpenbNodes(path);
    ASSERT_FALSE(nodes.has_value());
    EXPECT_THAT(nodes.error().message, HasSubstr(c.expected));
  }
  TempDir dir;
  const Result<std::vector<NodeSpec>> empty =
      ReadOpenbNodes(dir.Write("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\n"));
  ASSERT_FALSE(empty.has_value());
  EXPECT_THAT(empty.error().message, HasSubstr("no nodes"));
}

}  // namespace
}  // namespace gpufit

#include "gpufit/training/workload_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/training/checkpoint.h"

namespace gpufit {
namespace {

constexpr const char* kFile = R"(
nodes:
  - {name: gpu-0, gpus: 8, gpu_model: a100-80gb, capacity: spot}
  - {name: gpu-1, gpus: 8, gpu_model: a100-80gb}
jobs:
  - name: llm-ft
    gpus: 4
    gpu_model: a100-80gb
    work_h: 48
    checkpoint_size_gib: 64
    submit_h: 1
    deadline_h: 60
    checkpointing: transparent
    disruption_group: llm
    max_unavailable: 1
    running: {node: gpu-0, last_checkpoint_h: 10, work_done_h: 8.5}
  - name: eval
    gpus: 1
    work_h: 2
    checkpoint_write_s: 30
    restore_s: 90
interruptions:
  spot: {band: "5-10%", notice_s: 30}
  spot_by_gpu_model: {a100-80gb: {mtbi_h: 400}}
  gpu_mtbf_h: 40000
  preemptions: [{node: gpu-0, at_h: 30}]
  maintenance: [{node: gpu-1, start_h: 40, duration_h: 4}]
storage: {write_gib_per_s: 0.5, read_gib_per_s: 1, reschedule_s: 60}
prices: {a100-80gb: {on_demand_usd_per_gpu_hour: 3.43, spot_usd_per_gpu_hour: 1.08}}
)";

TEST(WorkloadFileTest, ReadsEveryField) {
  const testing::TempDir dir;
  const auto w = ReadTrainingWorkload(dir.Write("jobs.yaml", kFile));
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->nodes.size(), 2u);
  EXPECT_EQ(w->nodes[0].capacity, CapacityType::kSpot);
  EXPECT_EQ(w->nodes[1].capacity, CapacityType::kOnDemand);
  ASSERT_EQ(w->jobs.size(), 2u);
  const TrainingJob& a = w->jobs[0];
  EXPECT_EQ(a.gpu_count, 4);
  EXPECT_DOUBLE_EQ(a.work.count(), 48 * 3600.0);
  // 64 GiB over 4 GPUs at 0.5 GiB/s each: 32 s; restore 60 s + 64 / (4 x 1) = 76 s.
  EXPECT_DOUBLE_EQ(a.checkpoint_write.count(), 32);
  EXPECT_DOUBLE_EQ(a.restore.count(), 76);
  EXPECT_DOUBLE_EQ(a.deadline->count(), 60 * 3600.0);
  EXPECT_EQ(a.checkpointing, Checkpointing::kTransparent);
  EXPECT_EQ(a.disruption_group, "llm");
  ASSERT_TRUE(w->running[0]);
  EXPECT_EQ(w->running[0]->nodes, std::vector<std::string>{"gpu-0"});
  EXPECT_DOUBLE_EQ(w->running[0]->work_done.count(), 8.5 * 3600);
  EXPECT_FALSE(w->running[1]);
  EXPECT_DOUBLE_EQ(w->jobs[1].checkpoint_write.count(), 30);
  EXPECT_EQ(w->jobs[1].checkpointing, Checkpointing::kApplication);
  // Band 5-10% at its upper bound: -ln(0.9) / 730 per hour.
  EXPECT_NEAR(w->interruptions.spot.interruptions_per_hour, -std::log(0.9) / 730, 1e-12);
  EXPECT_EQ(w->interruptions.spot.notice.count(), 30);
  EXPECT_NEAR(w->interruptions.SpotFor("a100-80gb").interruptions_per_hour, 1 / 400.0, 1e-12);
  EXPECT_EQ(w->interruptions.gpu_mtbf_hours, 40000);
  ASSERT_EQ(w->preemptions.size(), 1u);
  EXPECT_EQ(w->preemptions[0].node, "gpu-0");
  EXPECT_DOUBLE_EQ(w->preemptions[0].at.count(), 30 * 3600.0);
  ASSERT_EQ(w->maintenance.size(), 1u);
  EXPECT_DOUBLE_EQ(w->maintenance[0].duration.count(), 4 * 3600.0);
  EXPECT_DOUBLE_EQ(w->prices.at("a100-80gb").spot_per_gpu_hour.value, 1.08);
}

TEST(WorkloadFileTest, ErrorsNameTheFileTheEntryAndTheField) {
  const testing::TempDir dir;
  const auto err = [&](const std::string& text) {
    const auto w = ReadTrainingWorkload(dir.Write("jobs.yaml", text));
    EXPECT_FALSE(w);
    return w ? std::string() : w.error().message;
  };
  EXPECT_NE(
      err("jobs:\n  - {name: a, gpus: 1, checkpoint_write_s: 1, restore_s: 1}\n").find("job a: missing field 'work_h'"),
      std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: -2, work_h: 1, checkpoint_size_gib: 1}\n").find("'gpus' must be >= 1"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: .nan, checkpoint_size_gib: 1}\n").find("finite"),
            std::string::npos);
  // Issue 51: 200,000 nested brackets are refused before yaml-cpp recurses into them (it said
  // "line 1: bad file").
  EXPECT_NE(err("jobs: " + std::string(200'000, '[') + std::string(200'000, ']') + "\n")
                .find("jobs.yaml: line 1: YAML nested deeper than 100 levels"),
            std::string::npos);
  // Issue 51: past the physical bounds of cluster_jobs.h (10 years of work, 7 days to write or
  // restore a checkpoint, 1 PiB of it).
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1e300, checkpoint_size_gib: 1}\n")
                .find("job a: work_h 1e+300 is above 87660 h"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_write_s: 1e9, restore_s: 1}\n")
                .find("checkpoint_write_s 1000000000 is above 604800 s"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 2e6}\n")
                .find("checkpoint_size_gib 2000000 is above 1048576 GiB"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 1, checkpointing: maybe}\n")
                .find("checkpointing must be"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 1, running: {node: x}}\n")
                .find("unknown node 'x'"),
            std::string::npos);
  EXPECT_NE(
      err("interruptions: {spot: {band: '>20%'}}\njobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 1}\n")
          .find("monthly_fraction or mtbi_h"),
      std::string::npos);
  EXPECT_NE(err("jobs: [\n  {name: a\n").find("line "), std::string::npos);
  EXPECT_NE(err("jobs: []\n").find("non-empty"), std::string::npos);
  // Issue 18: 1e-9 h gave "inf USD" and "-nan%"; the range and its reason are named, with the line.
  EXPECT_NE(
      err("interruptions:\n  gpu_mtbf_h: 1e-9\njobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 1}\n")
          .find("interruptions: field 'gpu_mtbf_h' must be in [1, 10000000] (hours: below 1 h the hardware is "
                "broken, not failing at a rate; above 1e7 h is 200x any measured fleet), got 1e-09 (line 2)"),
      std::string::npos);
  EXPECT_NE(err("interruptions: {spot: {mtbi_h: 0.5}}\njobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: "
                "1}\n")
                .find("interruptions.spot: field 'mtbi_h' must be in [1, 10000000]"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, work_h: 500, checkpoint_size_gib: 1}\n")
                .find("field 'work_h' appears twice"),
            std::string::npos);
  EXPECT_NE(err("nodes:\n  - {name: n, gpus: 8, gpu_model: x}\njobs:\n  - {name: a, gpus: 1, work_h: 9, "
                "checkpoint_size_gib: 1, running: {node: n, last_checkpoint_h: 1, work_done_h: 2}}\n")
                .find("more than the 1 h since submit_h"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 1, dedline_h: 5}\n")
                .find("job a: unknown field 'dedline_h'"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 0}\n").find("at least 1 s"),
            std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: '', gpus: 1, work_h: 1, checkpoint_size_gib: 1}\n").find("must not be empty"),
            std::string::npos);
  const std::string nodes = "nodes:\n  - {name: n, gpus: 8, gpu_model: h100-80gb}\njobs:\n";
  EXPECT_NE(err(nodes + "  - {name: a, gpus: 6, work_h: 1, checkpoint_size_gib: 16, running: {node: n}}\n" +
                "  - {name: b, gpus: 6, work_h: 1, checkpoint_size_gib: 16, running: {node: n}}\n")
                .find("node n has 8 GPUs but its running jobs use 12"),
            std::string::npos);
  EXPECT_NE(err(nodes +
                "  - {name: a, gpus: 1, gpu_model: a100-80gb, work_h: 1, checkpoint_size_gib: 1, running: {node: n}}\n")
                .find("needs a100-80gb GPUs but runs on node n"),
            std::string::npos);
  EXPECT_NE(err("interruptions: {preemptions: [{node: zz, at_h: 1}]}\njobs:\n  - {name: a, gpus: 1, work_h: 1, "
                "checkpoint_size_gib: 1}\n")
                .find("interruptions.preemptions: unknown node 'zz'"),
            std::string::npos);
  const auto directory = ReadTrainingWorkload(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("is a directory, not a file"), std::string::npos);
  const auto missing = ReadTrainingWorkload("/nonexistent/jobs.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

constexpr const char* kGangFile = R"(
nodes:
  - {name: g0, gpus: 8, gpu_model: h100-80gb}
  - {name: g1, gpus: 8, gpu_model: h100-80gb}
  - {name: g2, gpus: 8, gpu_model: h100-80gb}
  - {name: g3, gpus: 8, gpu_model: h100-80gb}
jobs:
  - name: pretrain-worker-0
    labels: {kueue.x-k8s.io/pod-group-name: pretrain}
    gpus: 8
    pods: 2
    work_h: 100
    checkpoint_size_gib: 64
    disruption_group: pretrain-pdb
    max_unavailable: 0
    running: {nodes: [g0, g1], last_checkpoint_h: 10, work_done_h: 9.5}
  - name: pretrain-worker-2
    labels: {kueue.x-k8s.io/pod-group-name: pretrain}
    gpus: 8
    pods: 2
    work_h: 100
    checkpoint_size_gib: 64
    disruption_group: pretrain-pdb
    max_unavailable: 0
    running: {nodes: [g2, g3], last_checkpoint_h: 10, work_done_h: 9.5}
  - name: eval
    owner: {kind: Deployment, name: eval}
    gpus: 1
    work_h: 1
    checkpoint_size_gib: 4
)";

TEST(WorkloadFileTest, EntriesOfOneGangMergeIntoOneJobOfAllTheirPods) {
  const testing::TempDir dir;
  const auto w = ReadTrainingWorkload(dir.Write("jobs.yaml", kGangFile));
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->jobs.size(), 2u);  // the Deployment's pod is no gang: its own job
  const TrainingJob& g = w->jobs[0];
  EXPECT_EQ(g.name, "pretrain");
  EXPECT_EQ(g.pods, 4);
  EXPECT_EQ(g.TotalGpus(), 32);
  EXPECT_EQ(g.gang, "label kueue.x-k8s.io/pod-group-name=pretrain");
  EXPECT_EQ(g.max_unavailable, 0);  // a PDB that forbids evictions is read, not refused
  // The checkpoint is sharded over 32 GPUs: 64 GiB / (32 x 0.25 GiB/s) = 8 s; restore
  // 120 s + 64 / (32 x 0.5) = 124 s.
  EXPECT_DOUBLE_EQ(g.checkpoint_write.count(), 8);
  EXPECT_DOUBLE_EQ(g.restore.count(), 124);
  ASSERT_TRUE(w->running[0]);
  EXPECT_EQ(w->running[0]->nodes, (std::vector<std::string>{"g0", "g1", "g2", "g3"}));
  EXPECT_EQ(w->NodesOf(0), (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(w->jobs[1].name, "eval");
  EXPECT_EQ(w->jobs[1].pods, 1);
}

TEST(WorkloadFileTest, GangErrorsNameTheFieldThatDisagrees) {
  const testing::TempDir dir;
  const auto err = [&](const std::string& text) {
    const auto w = ReadTrainingWorkload(dir.Write("jobs.yaml", text));
    EXPECT_FALSE(w);
    return w ? std::string() : w.error().message;
  };
  std::string differ = kGangFile;
  differ.replace(differ.rfind("work_h: 100"), 11, "work_h: 90");
  EXPECT_NE(err(differ).find("job pretrain-worker-2: work_h differs from the other pods of gang 'pretrain'"),
            std::string::npos);
  std::string short_list = kGangFile;
  short_list.replace(short_list.find("[g2, g3]"), 8, "[g2]");
  EXPECT_NE(err(short_list).find("1 node(s) for 2 pod(s): give one node per pod"), std::string::npos);
  EXPECT_NE(
      err("jobs:\n  - {name: a, gpus: 1, pods: 0, work_h: 1, checkpoint_size_gib: 1}\n").find("'pods' must be >= 1"),
      std::string::npos);
  EXPECT_NE(err("jobs:\n  - {name: a, gpus: 1, work_h: 1, checkpoint_size_gib: 1, max_unavailable: -1}\n")
                .find("'max_unavailable' must be >= 0"),
            std::string::npos);
}

TEST(OpenbTrainingTest, TakesWholeGpuPodsWithTrainingLifetimes) {
  const std::string path = testing::DataDir() + "/openb/openb_pod_list_default.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no openb trace at " << path;
  const auto pods = ReadOpenbPods(path);
  ASSERT_TRUE(pods) << pods.error().message;
  const std::vector<TrainingJob> jobs = TrainingJobsFromOpenb(*pods, {});
  // Counted independently (Python over the CSV): 720 pods with num_gpu >= 1,
  // gpu_milli == 1000, a deletion time and a lifetime in [1 h, 720 h], 15,626.57 GPU-hours.
  EXPECT_EQ(jobs.size(), 720u);
  double gpu_hours = 0;
  for (const TrainingJob& j : jobs) gpu_hours += j.gpu_count * j.work.count() / 3600;
  EXPECT_NEAR(gpu_hours, 15626.57, 0.01);
  // 16 GiB per GPU at 0.25 GiB/s per GPU: 64 s to write; 120 s + 32 s to restore.
  EXPECT_DOUBLE_EQ(jobs.front().checkpoint_write.count(), 64);
  EXPECT_DOUBLE_EQ(jobs.front().restore.count(), 152);
}

}  // namespace
}  // namespace gpufit

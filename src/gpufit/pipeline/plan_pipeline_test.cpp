#include "gpufit/pipeline/plan_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit::pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Two days of synthetic telemetry at 5 min: long enough for a held-out split.
Telemetry TwoDays() {
  return GenerateSyntheticTelemetry({.pods = 12, .samples = 2 * 24 * 12, .step_s = 300, .seed = 3});
}

PlanInputs On(const Telemetry& telemetry, const std::string& gpu) {
  PlanInputs in;
  in.telemetry = &telemetry;
  in.source = "synthetic";
  in.options.target_gpu = gpu;
  in.options.search_budget = 0;
  in.options.threads = 1;
  return in;
}

TEST(PlanStages, RunInTheOrderEachNeedsTheOnesBefore) {
  std::vector<std::string> names;
  for (const auto& stage : PlanStages()) names.emplace_back(stage->Name());
  EXPECT_THAT(names,
              ElementsAre("read", "training", "inference", "colocation", "prices", "ancillary", "emit", "summary"));
}

TEST(RunPlanPipeline, TheDocumentIsThePlanOfTheTelemetryWithItsSections) {
  const Telemetry telemetry = TwoDays();
  PlanInputs in = On(telemetry, "a100-80gb");
  std::vector<std::string> phases;
  in.phase = [&](const std::string& p) { phases.push_back(p); };
  const Result<PlanDocument> doc = RunPlanPipeline(in);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_TRUE(doc->has_plan);
  EXPECT_THAT(phases, ElementsAre("plan", "backtest", "sections"));
  // The co-location plan is the top level: the plan built alone, with the same options, packs
  // the same pods onto as many GPUs.
  PlanOptions options = in.options;
  options.sharing = "time-slicing";
  const Result<Plan> alone = BuildPlan(telemetry, GpuCatalog::Embedded(), options, "synthetic");
  ASSERT_TRUE(alone) << alone.error().message;
  const nlohmann::json j = nlohmann::json::parse(doc->json);
  const nlohmann::json expected = nlohmann::json::parse(PlanToJson(*alone));
  EXPECT_EQ(j["groups"].size(), expected["groups"].size());
  EXPECT_EQ(j["pods"].size(), telemetry.pods.size());
  for (const char* key : {"backtest", "prices", "ancillary", "summary"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("training"));
  // The Markdown leads with the title and the saving; nothing else was asked for.
  EXPECT_THAT(doc->markdown, StartsWith("# gpufit plan\n\n**Saving"));
  EXPECT_TRUE(doc->manifest_files.empty());
  EXPECT_TRUE(doc->csv.empty());
  EXPECT_TRUE(doc->series_json.empty());
}

// No --gpu and no model in the data: the target is --current-gpu's, and the note says so
// (it listed no model and called the target "the model most pods run on").
TEST(RunPlanPipeline, WithoutAModelInTheDataTheTargetIsCurrentGpusAndSaysSo) {
  const Telemetry telemetry = TwoDays();
  PlanInputs in = On(telemetry, "");
  in.options.current_gpu = "a100-80gb";
  std::vector<std::string> notes;
  in.note = [&](const std::string& line) { notes.push_back(line); };
  const Result<PlanDocument> doc = RunPlanPipeline(in);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_THAT(notes, ::testing::Contains("GPU models found: none in the telemetry or the nodes' labels; target "
                                         "a100-80gb, as --current-gpu says  [--gpu]"));
  for (const std::string& n : notes) EXPECT_THAT(n, ::testing::Not(HasSubstr("most pods run on"))) << n;
}

TEST(RunPlanPipeline, ManifestsEndWithTheirReadmeAndTheCsvListsEveryPod) {
  const Telemetry telemetry = TwoDays();
  PlanInputs in = On(telemetry, "a100-80gb");
  in.emit_manifests = true;
  in.want_csv = true;
  const Result<PlanDocument> doc = RunPlanPipeline(in);
  ASSERT_TRUE(doc) << doc.error().message;
  ASSERT_FALSE(doc->manifest_files.empty());
  EXPECT_EQ(doc->manifest_files.back().first, "README.md");
  // A header and one row per pod.
  EXPECT_EQ(std::count(doc->csv.begin(), doc->csv.end(), '\n'), static_cast<long>(telemetry.pods.size()) + 1);
}

TEST(RunPlanPipeline, BadInputsAreErrorsNamingTheFlag) {
  const Telemetry telemetry = TwoDays();
  const Result<PlanDocument> no_gpu = RunPlanPipeline(On(telemetry, ""));
  ASSERT_FALSE(no_gpu);
  EXPECT_EQ(no_gpu.error().code, Code::kInvalidArgument);
  EXPECT_THAT(no_gpu.error().message, HasSubstr("--gpu is required"));

  PlanInputs queue = On(telemetry, "a100-80gb");
  queue.kai_queue = "team-a";
  const Result<PlanDocument> kai = RunPlanPipeline(queue);
  ASSERT_FALSE(kai);
  EXPECT_THAT(kai.error().message, HasSubstr("--kai-queue applies to --sharing kai only"));

  PlanInputs loads;
  loads.model_loads = "loads.csv";
  const Result<PlanDocument> no_telemetry = RunPlanPipeline(loads);
  ASSERT_FALSE(no_telemetry);
  EXPECT_THAT(no_telemetry.error().message, HasSubstr("--model-loads needs GPU telemetry"));

  PlanInputs catalog = On(telemetry, "a100-80gb");
  catalog.catalog_path = "/nonexistent/catalog.yaml";
  const Result<PlanDocument> missing = RunPlanPipeline(catalog);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

TEST(RunPlanPipeline, WithoutTelemetryNorJobsThereIsNothingToPlan) {
  PlanInputs in;
  in.pods = std::vector<KubePod>{};
  in.pods_label = "--pods pods.json";
  const Result<PlanDocument> doc = RunPlanPipeline(in);
  ASSERT_FALSE(doc);
  EXPECT_THAT(doc.error().message, HasSubstr("--pods pods.json: no training job among its pods"));
}

}  // namespace
}  // namespace gpufit::pipeline

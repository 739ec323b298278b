#include "gpufit/catalog/mig_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MigCatalog, EmbeddedHasTheSixMigGpusOfTheIssueAndB200) {
  std::vector<std::string> ids;
  for (const MigGpu& g : MigCatalog::Embedded().gpus()) ids.push_back(g.id);
  EXPECT_THAT(
      ids, ElementsAre("a30-24gb", "a100-40gb", "a100-80gb", "h100-80gb", "h100-94gb-nvl", "h200-141gb", "b200-180gb"));
}

TEST(MigCatalog, H100ProfilesAsTheMigGuideLists) {
  const MigGpu& h100 = **MigCatalog::Embedded().Find("h100-80gb");
  EXPECT_EQ(h100.compute_slices, 7);
  EXPECT_EQ(h100.memory_slices, 8);
  const MigProfile& p3g = **h100.Profile("3g.40gb");
  EXPECT_EQ(p3g.compute_slices, 3);
  EXPECT_EQ(p3g.memory_slices, 4);  // a 3g instance occupies half the memory
  EXPECT_THAT(p3g.starts, ElementsAre(0, 4));
  EXPECT_EQ(p3g.max_count, 2);
  EXPECT_EQ(p3g.memory.value, 40448);  // nvidia-smi: 39.50 GiB
  EXPECT_FALSE(p3g.memory_estimated);
  const MigProfile& me = **h100.Profile("1g.10gb+me");
  EXPECT_TRUE(me.media_extension());
  EXPECT_EQ(me.resource_name(), "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ(p3g.resource_name(), "nvidia.com/mig-3g.40gb");
}

TEST(MigCatalog, InferredFactsAreMarked) {
  const MigGpu& h200 = **MigCatalog::Embedded().Find("h200-141gb");
  EXPECT_TRUE((*h200.Profile("3g.71gb"))->placement_inferred);
  EXPECT_TRUE((*h200.Profile("3g.71gb"))->memory_estimated);
  const MigGpu& a100 = **MigCatalog::Embedded().Find("a100-40gb");
  EXPECT_FALSE((*a100.Profile("2g.10gb"))->placement_inferred);  // the guide's -lgipp output
}

TEST(MigCatalog, ClearErrors) {
  const Result<const MigGpu*> t4 = MigCatalog::Embedded().Find("t4");
  ASSERT_FALSE(t4.has_value());
  EXPECT_EQ(t4.error().code, Code::kNotFound);
  EXPECT_THAT(t4.error().message, HasSubstr("no MIG-capable GPU 't4' (known: a30-24gb"));
  const MigGpu& h100 = **MigCatalog::Embedded().Find("h100-80gb");
  const Result<const MigProfile*> bad = h100.Profile("3g40gb");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  const Result<const MigProfile*> absent = h100.Profile("1g.5gb");
  ASSERT_FALSE(absent.has_value());
  EXPECT_EQ(absent.error().code, Code::kFailedPrecondition);
  EXPECT_THAT(absent.error().message, HasSubstr("h100-80gb does not offer MIG profile '1g.5gb'"));
}

// Found by yaml_mig_profiles_fuzz: a document of another shape threw from yaml-cpp
// (std::terminate). Each is now kInvalidArgument naming the source.
TEST(MigCatalog, OtherShapesAreErrors) {
  for (const char* text : {"just a scalar", "[1, 2]", "gpus: [x]", "gpus: [{id: [1], profiles: []}]",
                           "gpus: [{id: a, compute_slices: 7, memory_slices: 8, max_instances: 7, profiles: [x]}]"}) {
    const Result<MigCatalog> c = MigCatalog::Parse(text, "m.yaml");
    ASSERT_FALSE(c) << text;
    EXPECT_EQ(c.error().code, Code::kInvalidArgument) << text;
    EXPECT_THAT(c.error().message, ::testing::StartsWith("m.yaml: ")) << text;
  }
}

TEST(MigCatalog, RejectsAStartPastTheLastSlice) {
  const Result<MigCatalog> c = MigCatalog::Parse(
      "gpus:\n  - id: x\n    compute_slices: 7\n    memory_slices: 8\n    max_instances: 7\n    profiles:\n"
      "      - {name: 3g.40gb, compute_slices: 3, memory_slices: 4, starts: [0, 5], max_count: 2, memory_mib: 1}\n",
      "test.yaml");
  ASSERT_FALSE(c.has_value());
  EXPECT_THAT(c.error().message, HasSubstr("test.yaml: x 3g.40gb: start 5 puts the instance past memory slice 8"));
}

// The project's data file against the reference notes it was compiled from (skipped when
// ../shared/reference is not beside the checkout).
TEST(MigCatalog, AgreesWithTheReferenceNotes) {
  const std::string path = testing::DataDir() + "/../reference/mig_profiles.yaml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const YAML::Node ref = YAML::LoadFile(path)["gpus"];
  const std::map<std::string, std::string> ids = {{"a30_24gb", "a30-24gb"},           {"a100_40gb", "a100-40gb"},
                                                  {"a100_80gb", "a100-80gb"},         {"h100_80gb", "h100-80gb"},
                                                  {"h100_94gb_nvl", "h100-94gb-nvl"}, {"h200_141gb", "h200-141gb"},
                                                  {"b200_180gb", "b200-180gb"}};
  for (const auto& [key, id] : ids) {
    SCOPED_TRACE(id);
    const MigGpu& gpu = **MigCatalog::Embedded().Find(id);
    const YAML::Node g = ref[key];
    EXPECT_EQ(gpu.compute_slices, g["compute_slices"].as<int>());
    EXPECT_EQ(gpu.memory_slices, g["memory_slices"].as<int>());
    EXPECT_EQ(gpu.max_instances, g["max_instances"].as<int>());
    ASSERT_EQ(gpu.profiles.size(), g["profiles"].size());
    for (std::size_t k = 0; k < gpu.profiles.size(); ++k) {
      const YAML::Node p = g["profiles"][k];
      const MigProfile& mine = gpu.profiles[k];
      SCOPED_TRACE(mine.name);
      EXPECT_EQ(mine.name, p["name"].as<std::string>());
      EXPECT_EQ(mine.compute_slices, p["compute_slices"].as<int>());
      EXPECT_EQ(mine.memory_slices, p["placements"]["size"].as<int>());
      EXPECT_EQ(mine.max_count, p["max_count"].as<int>());
      EXPECT_EQ(mine.starts, p["placements"]["starts"].as<std::vector<int>>());
      EXPECT_EQ(mine.placement_inferred, p["placement_source"].as<std::string>() == "inferred");
      // Estimated memory never exceeds the slices' share of the GPU.
      EXPECT_LE(mine.memory.value * gpu.memory_slices, 8 * 184320 * mine.memory_slices);
    }
  }
}

}  // namespace
}  // namespace gpufit

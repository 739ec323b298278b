#include "gpufit/catalog/mig_catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <functional>
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
  EXPECT_FALSE(p3g.memory_derived);
  const MigProfile& me = **h100.Profile("1g.10gb+me");
  EXPECT_TRUE(me.media_extension());
  EXPECT_EQ(me.resource_name(), "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ(p3g.resource_name(), "nvidia.com/mig-3g.40gb");
}

TEST(MigCatalog, InferredFactsAreMarked) {
  const MigGpu& h200 = **MigCatalog::Embedded().Find("h200-141gb");
  EXPECT_TRUE((*h200.Profile("3g.71gb"))->placement_inferred);
  EXPECT_FALSE((*h200.Profile("3g.71gb"))->memory_derived);  // listed by nvidia-smi (mig-parted#120)
  const MigGpu& b200 = **MigCatalog::Embedded().Find("b200-180gb");
  EXPECT_TRUE((*b200.Profile("3g.90gb"))->memory_derived);  // no public -lgip row found for it
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

// `nvidia-smi mig -lgip` listings ("Memory GiB" column), typed by hand from the public
// transcripts; a profile listed differently by two drivers appears twice.
struct Listing {
  const char* gpu;
  const char* profile;
  double gib;
  const char* source;
};
constexpr const char* kA30 = "A30, driver 535.183.01 (GitHub code index transcript)";
constexpr const char* kMigGuide =
    "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/getting-started-with-mig.html";
constexpr const char* kA100_80 = "A100 80GB PCIe, driver 515.86.01 (shared/reference/mig_profiles.yaml)";
constexpr const char* kH100 = "https://jbarrow.ai/field_notes/nvidia-mig/";
constexpr const char* kH100Sxm = "H100 SXM5 (shared/reference/mig_profiles.yaml)";
constexpr const char* kNvl = "https://github.com/NVIDIA/gpu-operator/pull/903";
constexpr const char* kNvlAzure = "Azure NC40ads_H100_v5 (shared/reference/mig_profiles.yaml)";
constexpr const char* kH200 = "https://github.com/NVIDIA/mig-parted/issues/120";
constexpr const char* kB200a = "https://github.com/NVIDIA/mig-parted/pull/166";
constexpr const char* kB200b = "https://github.com/NVIDIA/mig-parted/pull/187";
const std::vector<Listing> kListings = {
    {"a30-24gb", "1g.6gb", 5.81, kA30},
    {"a30-24gb", "1g.6gb+me", 5.81, kA30},
    {"a30-24gb", "2g.12gb", 11.69, kA30},
    {"a30-24gb", "2g.12gb+me", 11.69, kA30},
    {"a30-24gb", "4g.24gb", 23.44, kA30},
    {"a100-40gb", "1g.5gb", 4.75, kMigGuide},
    {"a100-40gb", "1g.5gb+me", 4.75, kMigGuide},
    {"a100-40gb", "1g.10gb", 9.62, kMigGuide},
    {"a100-40gb", "2g.10gb", 9.62, kMigGuide},
    {"a100-40gb", "3g.20gb", 19.50, kMigGuide},
    {"a100-40gb", "4g.20gb", 19.50, kMigGuide},
    {"a100-40gb", "7g.40gb", 39.25, kMigGuide},
    {"a100-80gb", "1g.10gb", 9.50, kA100_80},
    {"a100-80gb", "1g.10gb+me", 9.50, kA100_80},
    {"a100-80gb", "2g.20gb", 19.50, kA100_80},
    {"a100-80gb", "3g.40gb", 39.25, kA100_80},
    {"a100-80gb", "4g.40gb", 39.25, kA100_80},
    {"a100-80gb", "7g.80gb", 79.00, kA100_80},
    {"h100-80gb", "1g.10gb", 9.75, kH100},
    {"h100-80gb", "1g.10gb+me", 9.75, kH100},
    {"h100-80gb", "1g.20gb", 19.62, kH100},
    {"h100-80gb", "2g.20gb", 19.62, kH100},
    {"h100-80gb", "3g.40gb", 39.50, kH100},
    {"h100-80gb", "4g.40gb", 39.50, kH100Sxm},
    {"h100-80gb", "7g.80gb", 79.25, kH100Sxm},
    {"h100-94gb-nvl", "1g.12gb", 10.75, kNvl},
    {"h100-94gb-nvl", "1g.12gb+me", 10.75, kNvl},
    {"h100-94gb-nvl", "1g.24gb", 21.62, kNvl},
    {"h100-94gb-nvl", "2g.24gb", 21.62, kNvl},
    {"h100-94gb-nvl", "3g.47gb", 46.38, kNvlAzure},
    {"h100-94gb-nvl", "4g.47gb", 46.38, kNvlAzure},
    {"h100-94gb-nvl", "7g.94gb", 93.12, kNvlAzure},
    {"h200-141gb", "1g.18gb", 16.00, kH200},
    {"h200-141gb", "1g.18gb+me", 16.00, kH200},
    {"h200-141gb", "1g.35gb", 32.25, kH200},
    {"h200-141gb", "2g.35gb", 32.25, kH200},
    {"h200-141gb", "3g.71gb", 69.50, kH200},
    {"h200-141gb", "4g.71gb", 69.50, kH200},
    {"h200-141gb", "7g.141gb", 139.75, kH200},
    {"b200-180gb", "1g.23gb", 22.00, kB200a},
    {"b200-180gb", "1g.23gb", 20.50, kB200b},
    {"b200-180gb", "1g.23gb+me", 20.50, kB200b},
    {"b200-180gb", "1g.45gb", 44.25, kB200a},
    {"b200-180gb", "2g.45gb", 44.25, kB200b},
};

// The smallest listing of a profile, in MiB (GiB x 1024, rounded down); -1 when none.
std::int64_t ListedMib(const std::string& gpu, const std::string& profile) {
  std::int64_t least = -1;
  for (const Listing& l : kListings)
    if (gpu == l.gpu && profile == l.profile) {
      const auto mib = static_cast<std::int64_t>(std::floor(l.gib * 1024));
      least = least < 0 ? mib : std::min(least, mib);
    }
  return least;
}

// The derivation rule, written again here: memory slices x the smallest MiB per slice among
// the profiles with fewer slices whose memory `known` gives; -1 when none has fewer slices.
std::int64_t Derived(const MigGpu& gpu, const MigProfile& p,
                     const std::function<std::int64_t(const MigProfile&)>& known) {
  double per_slice = -1;
  for (const MigProfile& q : gpu.profiles) {
    const std::int64_t mib = known(q);
    if (q.memory_slices >= p.memory_slices || mib < 0) continue;
    const double share = static_cast<double>(mib) / q.memory_slices;
    per_slice = per_slice < 0 ? share : std::min(per_slice, share);
  }
  return per_slice < 0 ? -1 : static_cast<std::int64_t>(std::floor(per_slice * p.memory_slices));
}

TEST(MigCatalogMemory, ObservedFiguresAreTheDriversSmallestListing) {
  int observed = 0;
  for (const MigGpu& gpu : MigCatalog::Embedded().gpus())
    for (const MigProfile& p : gpu.profiles) {
      SCOPED_TRACE(gpu.id + " " + p.name);
      const std::int64_t listed = ListedMib(gpu.id, p.name);
      if (p.memory_derived) {
        EXPECT_LT(listed, 0) << "a listing is known: the figure should be observed";
        continue;
      }
      ++observed;
      EXPECT_EQ(p.memory.value, listed);
    }
  EXPECT_EQ(observed, 43);  // 47 profiles, 4 without a listing (a100-80gb 1g.20gb, b200 3g/4g/7g)
}

TEST(MigCatalogMemory, DerivedFiguresFollowTheRuleAndNeverExceedTheDriver) {
  for (const MigGpu& gpu : MigCatalog::Embedded().gpus()) {
    // The file's derived figures are the rule applied to its observed ones.
    const auto observed = [](const MigProfile& q) { return q.memory_derived ? -1 : q.memory.value; };
    for (const MigProfile& p : gpu.profiles) {
      SCOPED_TRACE(gpu.id + " " + p.name);
      if (p.memory_derived) {
        EXPECT_EQ(p.memory.value, Derived(gpu, p, observed));
      }
      // Wherever the driver's listing is known, the rule (from the smaller listings) is at most it.
      const std::int64_t listed = ListedMib(gpu.id, p.name);
      const std::int64_t rule = Derived(gpu, p, [&](const MigProfile& q) { return ListedMib(gpu.id, q.name); });
      if (listed >= 0 && rule >= 0) {
        EXPECT_LE(rule, listed);
      }
    }
  }
}

TEST(MigCatalogMemory, A30ProfilesAreAQuarterAHalfAndAllOfTheUsableMemory) {
  // The driver's usable memory on an A30: the 4g.24gb listing, 23.44 GiB (nvidia-smi shows
  // 24576 MiB for the whole board).
  const double usable = 23.44 * 1024;
  const MigGpu& a30 = **MigCatalog::Embedded().Find("a30-24gb");
  const std::vector<std::pair<std::string, double>> shares = {
      {"1g.6gb", 0.25}, {"1g.6gb+me", 0.25}, {"2g.12gb", 0.5}, {"2g.12gb+me", 0.5}, {"4g.24gb", 1.0}};
  for (const auto& [name, share] : shares) {
    SCOPED_TRACE(name);
    const double mib = static_cast<double>((*a30.Profile(name))->memory.value);
    EXPECT_NEAR(mib / (share * usable), 1.0, 0.03);
    EXPECT_LE(mib, share * 24576);
  }
}

TEST(MigCatalogMemory, AnObservedFigureMustBeItsListing) {
  const std::string gpu =
      "gpus:\n  - id: x\n    compute_slices: 7\n    memory_slices: 8\n    max_instances: 7\n    profiles:\n";
  const Result<MigCatalog> off = MigCatalog::Parse(
      gpu +
          "      - {name: 1g.5gb, compute_slices: 1, memory_slices: 1, starts: [0], max_count: 7, memory_mib: 5024, "
          "memory_source: observed, lgip_gib: 4.75}\n",
      "t.yaml");
  ASSERT_FALSE(off.has_value());
  EXPECT_THAT(off.error().message, HasSubstr("t.yaml: x 1g.5gb: memory_mib 5024 is not lgip_gib 4.75 x 1024"));
  const Result<MigCatalog> unlisted = MigCatalog::Parse(
      gpu +
          "      - {name: 1g.5gb, compute_slices: 1, memory_slices: 1, starts: [0], max_count: 7, memory_mib: 4864, "
          "memory_source: observed}\n",
      "t.yaml");
  ASSERT_FALSE(unlisted.has_value());
  EXPECT_THAT(unlisted.error().message, HasSubstr("needs 'lgip_gib'"));
  const Result<MigCatalog> estimated = MigCatalog::Parse(
      gpu +
          "      - {name: 1g.5gb, compute_slices: 1, memory_slices: 1, starts: [0], max_count: 7, memory_mib: 4864, "
          "memory_source: estimated}\n",
      "t.yaml");
  ASSERT_FALSE(estimated.has_value());
  EXPECT_THAT(estimated.error().message, HasSubstr("'memory_source' must be observed or derived, got 'estimated'"));
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

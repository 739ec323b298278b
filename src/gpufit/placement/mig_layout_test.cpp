#include "gpufit/placement/mig_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

const MigGpu& Gpu(const char* id) { return **MigCatalog::Embedded().Find(id); }

std::vector<const MigProfile*> Profiles(const MigGpu& gpu, const std::vector<std::string>& names) {
  std::vector<const MigProfile*> out;
  for (const std::string& n : names) out.push_back(*gpu.Profile(n));
  return out;
}

// --- Independent oracle: tries every start for every instance (no sorting, no pruning
// beyond overlap), then the counting rules, straight from the MIG guide's rule.
bool OracleValid(const MigGpu& gpu, const std::vector<const MigProfile*>& ps) {
  std::map<std::string, int> count;
  int media = 0, compute = 0;
  for (const MigProfile* p : ps) {
    ++count[p->name];
    media += p->name.ends_with("+me");
    compute += p->compute_slices;
  }
  for (const MigProfile& p : gpu.profiles)
    if (count[p.name] > p.max_count) return false;
  if (media > 1 || static_cast<int>(ps.size()) > gpu.max_instances || compute > gpu.compute_slices) return false;
  std::vector<int> slot_owner(static_cast<std::size_t>(gpu.memory_slices), -1);
  std::function<bool(std::size_t)> place = [&](std::size_t i) {
    if (i == ps.size()) return true;
    for (int s : ps[i]->starts) {
      bool free = true;
      for (int k = s; k < s + ps[i]->memory_slices; ++k) free = free && slot_owner[static_cast<std::size_t>(k)] < 0;
      if (!free) continue;
      for (int k = s; k < s + ps[i]->memory_slices; ++k) slot_owner[static_cast<std::size_t>(k)] = static_cast<int>(i);
      if (place(i + 1)) return true;
      for (int k = s; k < s + ps[i]->memory_slices; ++k) slot_owner[static_cast<std::size_t>(k)] = -1;
    }
    return false;
  };
  return place(0);
}

// Applies a creation order one instance at a time with the driver's rule: the instance
// takes its start only if that start is allowed and all its slices are free now.
bool CreatesInOrder(const MigGpu& gpu, const std::vector<MigInstance>& order) {
  std::vector<bool> used(static_cast<std::size_t>(gpu.memory_slices), false);
  for (const MigInstance& i : order) {
    const auto& st = i.profile->starts;
    if (std::find(st.begin(), st.end(), i.start) == st.end()) return false;
    for (int k = i.start; k < i.start + i.profile->memory_slices; ++k) {
      if (k >= gpu.memory_slices || used[static_cast<std::size_t>(k)]) return false;
      used[static_cast<std::size_t>(k)] = true;
    }
  }
  return true;
}

// Every multiset of profiles up to the per-GPU maximums.
void ForEachMultiset(const MigGpu& gpu, const std::function<void(const std::vector<const MigProfile*>&)>& f) {
  std::vector<int> count(gpu.profiles.size(), 0);
  while (true) {
    std::vector<const MigProfile*> ms;
    for (std::size_t k = 0; k < count.size(); ++k)
      for (int c = 0; c < count[k]; ++c) ms.push_back(&gpu.profiles[k]);
    f(ms);
    std::size_t k = 0;
    while (k < count.size() && ++count[k] > gpu.profiles[k].max_count) count[k++] = 0;
    if (k == count.size()) break;
  }
}

TEST(CheckMigLayout, EveryMultisetAgreesWithBruteForceAndEveryPlacementIsCreatable) {
  for (const char* id :
       {"a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "h100-94gb-nvl", "a30-24gb", "b200-180gb"}) {
    SCOPED_TRACE(id);
    const MigGpu& gpu = Gpu(id);
    int layouts = 0, valid = 0;
    ForEachMultiset(gpu, [&](const std::vector<const MigProfile*>& ms) {
      ++layouts;
      const MigLayoutCheck c = CheckMigLayout(gpu, ms);
      ASSERT_EQ(c.valid, OracleValid(gpu, ms)) << ms.size() << " instances";
      if (!c.valid) {
        EXPECT_FALSE(c.reason.empty());
        return;
      }
      ++valid;
      ASSERT_EQ(c.placements.size(), ms.size());
      EXPECT_TRUE(ValidateMigInstances(gpu, c.placements).has_value());  // slot by slot
      EXPECT_TRUE(CreatesInOrder(gpu, c.creation_order));
      EXPECT_GE(c.stranded_compute_slices, 0);
    });
    EXPECT_GT(valid, 10);
    EXPECT_GT(layouts, valid);
  }
}

TEST(CheckMigLayout, TheGuidesExampleLayoutsAreValid) {
  const MigGpu& a100 = Gpu("a100-40gb");
  EXPECT_TRUE(CheckMigLayout(a100, Profiles(a100, {"3g.20gb", "3g.20gb"})).valid);
  EXPECT_TRUE(CheckMigLayout(a100, Profiles(a100, {"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"})).valid);
  EXPECT_TRUE(
      CheckMigLayout(a100, Profiles(a100, {"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "2g.10gb"})).valid);
}

TEST(CheckMigLayout, SaysWhyInWords) {
  const MigGpu& h100 = Gpu("h100-80gb");
  EXPECT_THAT(CheckMigLayout(h100, Profiles(h100, {"3g.40gb", "3g.40gb", "3g.40gb"})).reason,
              HasSubstr("3g.40gb x3: h100-80gb holds at most 2"));
  EXPECT_THAT(CheckMigLayout(h100, Profiles(h100, {"1g.10gb+me", "1g.10gb+me"})).reason,
              HasSubstr("at most one per GPU"));
  EXPECT_THAT(CheckMigLayout(h100, Profiles(h100, {"4g.40gb", "3g.40gb", "1g.10gb"})).reason,
              HasSubstr("the instances take 9 memory slices, h100-80gb has 8"));
}

TEST(CheckMigLayout, PositionConflictsAreExplained) {
  // On the catalog's GPUs every layout within the count, size and compute limits can be
  // placed (the exhaustive test shows it); a made-up GPU shows the position rule alone.
  const MigCatalog c = *MigCatalog::Parse(
      "gpus:\n  - id: toy\n    compute_slices: 7\n    memory_slices: 8\n    max_instances: 7\n    profiles:\n"
      "      - {name: 2g.20gb, compute_slices: 2, memory_slices: 2, starts: [0], max_count: 1, memory_mib: 1}\n"
      "      - {name: 1g.20gb, compute_slices: 1, memory_slices: 2, starts: [0, 4], max_count: 2, memory_mib: 1}\n",
      "toy.yaml");
  const MigGpu& toy = c.gpus()[0];
  const MigLayoutCheck check = CheckMigLayout(toy, Profiles(toy, {"2g.20gb", "1g.20gb", "1g.20gb"}));
  EXPECT_FALSE(check.valid);
  EXPECT_THAT(check.reason, HasSubstr("fit by size but not by position"));
  EXPECT_THAT(check.reason, HasSubstr("(e.g. 2g.20gb may start only at memory slice 0)"));
  EXPECT_FALSE(OracleValid(toy, Profiles(toy, {"2g.20gb", "1g.20gb", "1g.20gb"})));
}

TEST(CheckMigLayout, StrandedComputeSlices) {
  const MigGpu& h100 = Gpu("h100-80gb");
  // 3 x 2g.20gb at 0, 2, 4 and 1g.20gb at 6: all 7 compute slices used.
  EXPECT_EQ(CheckMigLayout(h100, Profiles(h100, {"2g.20gb", "2g.20gb", "2g.20gb", "1g.20gb"})).stranded_compute_slices,
            0);
  // 4 x 1g.20gb take all 8 memory slices and only 4 compute slices: 3 stranded.
  EXPECT_EQ(CheckMigLayout(h100, Profiles(h100, {"1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb"})).stranded_compute_slices,
            3);
}

std::vector<MigInstance> At(const MigGpu& gpu, const std::vector<std::pair<std::string, int>>& xs) {
  std::vector<MigInstance> out;
  for (const auto& [name, start] : xs) out.push_back({*gpu.Profile(name), start});
  return out;
}

TEST(FreeMigCapacity, CountsWhatStillFitsAndWhatIsUnusable) {
  const MigGpu& h100 = Gpu("h100-80gb");
  // 1g.10gb at 1 and 1g.10gb at 5: free slices 0, 2, 3, 4, 6, 7.
  const MigFreeCapacity f = FreeMigCapacity(h100, At(h100, {{"1g.10gb", 1}, {"1g.10gb", 5}}));
  std::map<std::string, int> creatable;
  for (const auto& [p, n] : f.creatable) creatable[p->name] = n;
  EXPECT_EQ(creatable["1g.10gb"], 5);         // at 0, 2, 3, 4, 6 (7 is no 1g.10gb start; the max 7 - 2 allows 5)
  EXPECT_EQ(creatable["2g.20gb"], 1);         // only at 2 (0-1 and 4-5 are taken)
  EXPECT_EQ(creatable.count("3g.40gb"), 0u);  // needs 0-3 or 4-7, both broken
  EXPECT_EQ(creatable["1g.20gb"], 2);         // at 2 and 6
  EXPECT_EQ(f.free_memory_slices, 6);
  EXPECT_EQ(f.unusable_free_memory_slices, 0);  // slice 7: 1g.20gb at 6 covers it
  ASSERT_NE(f.largest_creatable, nullptr);
  EXPECT_EQ(f.largest_creatable->name, "2g.20gb");
}

TEST(FewestMigMoves, MovesOneInstanceToMakeRoomForA3g) {
  const MigGpu& h100 = Gpu("h100-80gb");
  // 1g.10gb at 1 and at 5 break both halves; moving one of them frees a half for 3g.40gb.
  const MigMoves m = FewestMigMoves(h100, At(h100, {{"1g.10gb", 1}, {"1g.10gb", 5}}), **h100.Profile("3g.40gb"));
  ASSERT_TRUE(m.possible);
  ASSERT_EQ(m.moved_from.size(), 1u);
  std::vector<MigInstance> after = At(h100, {{"1g.10gb", 1}, {"1g.10gb", 5}});
  for (MigInstance& i : after)
    if (i.start == m.moved_from[0].start) i.start = m.moved_to[0].start;
  after.push_back({*h100.Profile("3g.40gb"), m.want_start});
  EXPECT_TRUE(ValidateMigInstances(h100, after).has_value());
}

TEST(FewestMigMoves, NoMovesWhenItFitsAndImpossibleWhenCountsForbid) {
  const MigGpu& h100 = Gpu("h100-80gb");
  const MigMoves none = FewestMigMoves(h100, At(h100, {{"3g.40gb", 0}}), **h100.Profile("3g.40gb"));
  EXPECT_TRUE(none.possible);
  EXPECT_TRUE(none.moved_from.empty());
  EXPECT_EQ(none.want_start, 4);
  EXPECT_FALSE(FewestMigMoves(h100, At(h100, {{"4g.40gb", 0}, {"3g.40gb", 4}}), **h100.Profile("1g.10gb")).possible);
}

TEST(ValidateMigInstances, BadStartsOverlapsAndMediaExtensions) {
  const MigGpu& h100 = Gpu("h100-80gb");
  EXPECT_THAT(ValidateMigInstances(h100, At(h100, {{"3g.40gb", 2}})).error().message,
              HasSubstr("3g.40gb@2: h100-80gb allows 3g.40gb to start only at memory slice 0, 4"));
  EXPECT_THAT(ValidateMigInstances(h100, At(h100, {{"3g.40gb", 0}, {"2g.20gb", 2}})).error().message,
              HasSubstr("overlaps"));
  EXPECT_THAT(ValidateMigInstances(h100, At(h100, {{"1g.10gb+me", 0}, {"1g.10gb+me", 1}})).error().message,
              HasSubstr("media-extension"));
}

TEST(PlanMigReconfiguration, KeepsWhatItCanAndCreatesTheRestLargestFirst) {
  const MigGpu& h100 = Gpu("h100-80gb");
  // Now: 3g.40gb@0, 1g.10gb@4, 1g.10gb@5. Target: 3g.40gb + 2g.20gb x2. 2g.20gb starts
  // only at 0, 2 or 4: with the 3g at 0 just 4 is left for two of them, so the 3g must
  // move to 4 and the 2g go to 0 and 2; nothing stays.
  const MigReconfiguration r = PlanMigReconfiguration(h100, At(h100, {{"3g.40gb", 0}, {"1g.10gb", 4}, {"1g.10gb", 5}}),
                                                      Profiles(h100, {"3g.40gb", "2g.20gb", "2g.20gb"}));
  ASSERT_TRUE(r.possible);
  EXPECT_TRUE(r.keep.empty());
  EXPECT_EQ(r.destroy.size(), 3u);
  ASSERT_EQ(r.create.size(), 3u);
  EXPECT_EQ(r.create[0].profile->name, "3g.40gb");
  EXPECT_EQ(r.create[0].start, 4);
  EXPECT_TRUE(ValidateMigInstances(h100, r.create).has_value());
  // Target 3g.40gb + 1g.10gb x2 keeps all three where they are.
  const MigReconfiguration same =
      PlanMigReconfiguration(h100, At(h100, {{"3g.40gb", 0}, {"1g.10gb", 4}, {"1g.10gb", 5}}),
                             Profiles(h100, {"3g.40gb", "1g.10gb", "1g.10gb"}));
  EXPECT_EQ(same.keep.size(), 3u);
  EXPECT_TRUE(same.destroy.empty());
  EXPECT_TRUE(same.create.empty());
}

TEST(MigStrategyProblem, SingleNeedsOneMigDeviceTypeAcrossTheNode) {
  const MigGpu& h100 = Gpu("h100-80gb");
  const std::vector<const MigProfile*> seven_1g = Profiles(h100, std::vector<std::string>(7, "1g.10gb"));
  // The case: each GPU alone is valid, but the node holds two MIG device types.
  EXPECT_EQ(MigStrategyProblem(MigStrategy::kSingle, {seven_1g, Profiles(h100, {"7g.80gb"})}, "gpu-a"),
            "node gpu-a: GPU 1 has 7g.80gb but GPU 0 has 1g.10gb; the single MIG strategy needs one MIG device type "
            "on every GPU of a node (use mixed, or one profile on all its GPUs)");
  EXPECT_EQ(MigStrategyProblem(MigStrategy::kMixed, {seven_1g, Profiles(h100, {"7g.80gb"})}, "gpu-a"), "");
  // Two types on one GPU.
  EXPECT_THAT(MigStrategyProblem(MigStrategy::kSingle, {Profiles(h100, {"3g.40gb", "1g.10gb"})}),
              HasSubstr("the node: GPU 0 has 3g.40gb and 1g.10gb; the single MIG strategy needs one MIG device type"));
  // One type, different counts per GPU: the device plugin compares the MIG devices only.
  EXPECT_EQ(MigStrategyProblem(MigStrategy::kSingle, {seven_1g, Profiles(h100, {"1g.10gb", "1g.10gb"})}, "gpu-a"), "");
  // "+me" is a device type of its own.
  EXPECT_THAT(MigStrategyProblem(MigStrategy::kSingle, {Profiles(h100, {"1g.10gb"}), Profiles(h100, {"1g.10gb+me"})}),
              HasSubstr("GPU 1 has 1g.10gb+me but GPU 0 has 1g.10gb"));
  // MIG on some GPUs only; on none is fine.
  EXPECT_EQ(MigStrategyProblem(MigStrategy::kSingle, {Profiles(h100, {"1g.10gb"}), {}}, "gpu-b"),
            "node gpu-b: GPU 1 has MIG disabled but GPU 0 has MIG instances; the single MIG strategy needs MIG "
            "enabled on every GPU of a node or on none (use mixed, or give GPU 1 a layout)");
  EXPECT_EQ(MigStrategyProblem(MigStrategy::kSingle, {{}, {}}, "gpu-b"), "");
  EXPECT_EQ(MigStrategyProblem(MigStrategy::kMixed, {Profiles(h100, {"1g.10gb"}), {}}, "gpu-b"), "");
}

TEST(CheckMigLayout, PrintsThePlacementThatStrandsTheLeastCompute) {
  const MigGpu& h100 = Gpu("h100-80gb");
  // 1g.20gb at 6 leaves 0-5 for 4g.40gb@0 + 2g.20gb@4: nothing stranded. At 0 it would strand one.
  const MigLayoutCheck one = CheckMigLayout(h100, Profiles(h100, {"1g.20gb"}));
  EXPECT_EQ(one.stranded_compute_slices, 0);
  EXPECT_EQ(one.placements[0].start, 6);
  // Two at 4 and 6: 4g.40gb@0 adds 4 of the 5 free compute slices; no placement does better.
  EXPECT_EQ(CheckMigLayout(h100, Profiles(h100, {"1g.20gb", "1g.20gb"})).stranded_compute_slices, 1);
}

}  // namespace
}  // namespace gpufit

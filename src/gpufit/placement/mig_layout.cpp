#include "gpufit/placement/mig_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>

namespace gpufit {
namespace {

using Slices = std::uint32_t;  // bit s: memory slice s

Slices MaskOf(const MigProfile& p, int start) { return ((Slices{1} << p.memory_slices) - 1) << start; }

// Why these instances cannot share one GPU by counting alone, or nothing.
std::optional<std::string> CountProblem(const MigGpu& gpu, const std::vector<const MigProfile*>& profiles) {
  std::map<std::string, int> count;
  int media = 0, memory = 0, compute = 0;
  for (const MigProfile* p : profiles) {
    ++count[p->name];
    media += p->media_extension();
    memory += p->memory_slices;
    compute += p->compute_slices;
  }
  if (media > 1)
    return fmt::format("{} media-extension (+me) instances: at most one per GPU (they own its media engines)", media);
  for (const MigProfile& p : gpu.profiles) {
    if (count[p.name] > p.max_count)
      return fmt::format("{} x{}: {} holds at most {} of them", p.name, count[p.name], gpu.id, p.max_count);
  }
  if (static_cast<int>(profiles.size()) > gpu.max_instances)
    return fmt::format("{} instances: {} holds at most {}", profiles.size(), gpu.id, gpu.max_instances);
  if (memory > gpu.memory_slices)
    return fmt::format("the instances take {} memory slices, {} has {}", memory, gpu.id, gpu.memory_slices);
  if (compute > gpu.compute_slices)
    return fmt::format("the instances take {} compute slices, {} has {}", compute, gpu.id, gpu.compute_slices);
  return std::nullopt;
}

// Calls visit(starts) for every placement of profiles[i..] on the slices free in `used`
// (profiles in order, starts ascending; starts[k] is profiles[k]'s), until visit returns
// true. Returns whether a visit stopped it.
bool ForEachPlacement(const std::vector<const MigProfile*>& profiles, std::size_t i, Slices used,
                      std::vector<int>& starts, const std::function<bool(const std::vector<int>&)>& visit) {
  if (i == profiles.size()) return visit(starts);
  for (int s : profiles[i]->starts) {
    const Slices m = MaskOf(*profiles[i], s);
    if (used & m) continue;
    starts[i] = s;
    if (ForEachPlacement(profiles, i + 1, used | m, starts, visit)) return true;
  }
  return false;
}

// The first placement of `profiles` on the slices free in `used`, into `starts`.
bool PlaceAll(const std::vector<const MigProfile*>& profiles, Slices used, std::vector<int>& starts) {
  return ForEachPlacement(profiles, 0, used, starts, [](const std::vector<int>&) { return true; });
}

// For each target instance placed at starts[k], the current instance it keeps (same
// profile at the same start), or -1.
std::vector<int> Kept(const std::vector<const MigProfile*>& target, const std::vector<int>& starts,
                      const std::vector<MigInstance>& current) {
  std::vector<int> kept(target.size(), -1);
  std::vector<bool> taken(current.size(), false);
  for (std::size_t k = 0; k < target.size(); ++k) {
    for (std::size_t c = 0; c < current.size(); ++c) {
      if (!taken[c] && current[c].profile == target[k] && current[c].start == starts[k]) {
        taken[c] = true;
        kept[k] = static_cast<int>(c);
        break;
      }
    }
  }
  return kept;
}

// Largest first: memory slices, then compute slices, then name.
void SortLargestFirst(std::vector<const MigProfile*>& profiles) {
  std::stable_sort(profiles.begin(), profiles.end(), [](const MigProfile* a, const MigProfile* b) {
    if (a->memory_slices != b->memory_slices) return a->memory_slices > b->memory_slices;
    if (a->compute_slices != b->compute_slices) return a->compute_slices > b->compute_slices;
    return a->name < b->name;
  });
}

struct State {
  Slices used = 0;
  std::map<const MigProfile*, int> count;
  int media = 0;
  int instances = 0;
};

State StateOf(const std::vector<MigInstance>& existing) {
  State st;
  for (const MigInstance& i : existing) {
    st.used |= MaskOf(*i.profile, i.start);
    ++st.count[i.profile];
    st.media += i.profile->media_extension();
    ++st.instances;
  }
  return st;
}

// How many more instances of `p` the counting rules allow.
int Allowed(const MigGpu& gpu, const State& st, const MigProfile& p) {
  int n = std::min(p.max_count - st.count.at(&p), gpu.max_instances - st.instances);
  if (p.media_extension()) n = std::min(n, 1 - st.media);
  return std::max(n, 0);
}

// The most compute slices further instances can add (exhaustive over profile and start,
// in non-decreasing (profile, start) order to skip permutations).
int MaxAddedCompute(const MigGpu& gpu, State& st, std::size_t first_profile, int first_start, int compute_left) {
  int best = 0;
  for (std::size_t k = first_profile; k < gpu.profiles.size(); ++k) {
    const MigProfile& p = gpu.profiles[k];
    if (p.compute_slices > compute_left || Allowed(gpu, st, p) == 0) continue;
    for (int s : p.starts) {
      if (k == first_profile && s < first_start) continue;
      const Slices m = MaskOf(p, s);
      if (st.used & m) continue;
      st.used |= m;
      ++st.count[&p];
      st.media += p.media_extension();
      ++st.instances;
      best = std::max(best, p.compute_slices + MaxAddedCompute(gpu, st, k, s, compute_left - p.compute_slices));
      --st.instances;
      st.media -= p.media_extension();
      --st.count[&p];
      st.used &= ~m;
    }
  }
  return best;
}

State WithAllProfiles(const MigGpu& gpu, State st) {
  for (const MigProfile& p : gpu.profiles) st.count.try_emplace(&p, 0);
  return st;
}

}  // namespace

MigLayoutCheck CheckMigLayout(const MigGpu& gpu, const std::vector<const MigProfile*>& profiles) {
  MigLayoutCheck check;
  if (std::optional<std::string> problem = CountProblem(gpu, profiles)) {
    check.reason = *problem;
    return check;
  }
  std::vector<const MigProfile*> order = profiles;
  SortLargestFirst(order);
  // Every placement (at most a few hundred): keep the one that strands the fewest compute
  // slices, the first found (largest first, lowest starts) on ties.
  std::vector<int> starts(order.size()), best;
  int compute = 0;
  for (const MigProfile* p : order) compute += p->compute_slices;
  const int free_compute = gpu.compute_slices - compute;
  int best_stranded = free_compute + 1;
  ForEachPlacement(order, 0, 0, starts, [&](const std::vector<int>& at) {
    std::vector<MigInstance> placed;
    for (std::size_t k = 0; k < order.size(); ++k) placed.push_back({order[k], at[k]});
    State st = WithAllProfiles(gpu, StateOf(placed));
    const int stranded = free_compute - MaxAddedCompute(gpu, st, 0, 0, free_compute);
    if (stranded < best_stranded) {
      best_stranded = stranded;
      best = at;
    }
    return best_stranded == 0;  // nothing can do better
  });
  if (best.empty() && !order.empty()) {
    const MigProfile* tight =
        *std::min_element(order.begin(), order.end(),
                          [](const MigProfile* a, const MigProfile* b) { return a->starts.size() < b->starts.size(); });
    check.reason = fmt::format(
        "the instances fit by size but not by position: no choice of allowed start slots avoids overlap "
        "(e.g. {} may start only at memory slice {})",
        tight->name, fmt::join(tight->starts, " or "));
    return check;
  }
  check.valid = true;
  for (std::size_t i = 0; i < order.size(); ++i) check.creation_order.push_back({order[i], best[i]});
  check.placements = check.creation_order;
  std::sort(check.placements.begin(), check.placements.end(),
            [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  check.stranded_compute_slices = order.empty() ? gpu.compute_slices : best_stranded;
  return check;
}

Result<void> ValidateMigInstances(const MigGpu& gpu, const std::vector<MigInstance>& instances) {
  Slices used = 0;
  std::vector<const MigProfile*> profiles;
  for (const MigInstance& i : instances) {
    const MigProfile& p = *i.profile;
    if (std::find(p.starts.begin(), p.starts.end(), i.start) == p.starts.end())
      return InvalidArgument("{}@{}: {} allows {} to start only at memory slice {}", p.name, i.start, gpu.id, p.name,
                             fmt::join(p.starts, ", "));
    const Slices m = MaskOf(p, i.start);
    if (used & m) return InvalidArgument("{}@{} overlaps another instance's memory slices", p.name, i.start);
    used |= m;
    profiles.push_back(&p);
  }
  if (std::optional<std::string> problem = CountProblem(gpu, profiles)) return InvalidArgument("{}", *problem);
  return {};
}

MigFreeCapacity FreeMigCapacity(const MigGpu& gpu, const std::vector<MigInstance>& existing) {
  const State st = WithAllProfiles(gpu, StateOf(existing));
  MigFreeCapacity free;
  Slices coverable = 0;
  for (const MigProfile& p : gpu.profiles) {
    const int allowed = Allowed(gpu, st, p);
    Slices used = st.used;
    int fits = 0;
    for (int s : p.starts) {  // same-size intervals at fixed starts: earliest first is optimal
      const Slices m = MaskOf(p, s);
      if (allowed > 0 && !(st.used & m)) coverable |= m;
      if (fits < allowed && !(used & m)) {
        used |= m;
        ++fits;
      }
    }
    if (fits == 0) continue;
    free.creatable.emplace_back(&p, fits);
    const MigProfile* best = free.largest_creatable;
    if (!best || p.compute_slices > best->compute_slices ||
        (p.compute_slices == best->compute_slices && p.memory_slices > best->memory_slices))
      free.largest_creatable = &p;
  }
  for (int s = 0; s < gpu.memory_slices; ++s) {
    if ((st.used >> s) & 1) continue;
    ++free.free_memory_slices;
    free.unusable_free_memory_slices += !((coverable >> s) & 1);
  }
  return free;
}

MigMoves FewestMigMoves(const MigGpu& gpu, const std::vector<MigInstance>& existing, const MigProfile& want) {
  MigMoves moves;
  std::vector<const MigProfile*> all = {&want};
  for (const MigInstance& i : existing) all.push_back(i.profile);
  if (CountProblem(gpu, all)) return moves;  // no arrangement can hold them all
  const std::size_t n = existing.size();
  for (std::size_t k = 0; k <= n; ++k) {
    // Every subset of k existing instances, in lexicographic order of indices.
    std::vector<bool> pick(n, false);
    std::fill(pick.begin(), pick.begin() + static_cast<std::ptrdiff_t>(k), true);
    do {
      Slices fixed = 0;
      std::vector<const MigProfile*> to_place = {&want};
      for (std::size_t i = 0; i < n; ++i) {
        if (pick[i])
          to_place.push_back(existing[i].profile);
        else
          fixed |= MaskOf(*existing[i].profile, existing[i].start);
      }
      std::vector<int> starts(to_place.size());
      if (PlaceAll(to_place, fixed, starts)) {
        moves.possible = true;
        moves.want_start = starts[0];
        std::size_t j = 1;
        for (std::size_t i = 0; i < n; ++i) {
          if (!pick[i]) continue;
          moves.moved_from.push_back(existing[i]);
          moves.moved_to.push_back({existing[i].profile, starts[j++]});
        }
        return moves;
      }
    } while (std::prev_permutation(pick.begin(), pick.end()));
  }
  return moves;
}

MigReconfiguration PlanMigReconfiguration(const MigGpu& gpu, const std::vector<MigInstance>& current,
                                          const std::vector<const MigProfile*>& target,
                                          const std::vector<bool>& occupied) {
  MigReconfiguration r;
  const MigLayoutCheck check = CheckMigLayout(gpu, target);
  if (!check.valid) {
    r.reason = check.reason;
    return r;
  }
  // Every placement of the target (exhaustive), scored by the current instances it keeps.
  std::vector<const MigProfile*> order = target;
  SortLargestFirst(order);
  // A kept instance that runs a pod outweighs any number of idle ones.
  const int pod_weight = static_cast<int>(current.size()) + 1;
  std::vector<int> starts(order.size()), best_starts;
  int best_score = -1;
  ForEachPlacement(order, 0, 0, starts, [&](const std::vector<int>& at) {
    int score = 0;
    for (int c : Kept(order, at, current)) {
      if (c >= 0) score += 1 + (static_cast<std::size_t>(c) < occupied.size() && occupied[c] ? pod_weight : 0);
    }
    if (score > best_score) {
      best_score = score;
      best_starts = at;
    }
    return false;
  });
  r.possible = true;
  const std::vector<int> kept = Kept(order, best_starts, current);
  std::vector<bool> stays(current.size(), false);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (kept[k] >= 0) {
      stays[static_cast<std::size_t>(kept[k])] = true;
      r.keep.push_back(current[static_cast<std::size_t>(kept[k])]);
    } else {
      r.create.push_back({order[k], best_starts[k]});  // largest first already
    }
  }
  for (std::size_t c = 0; c < current.size(); ++c)
    if (!stays[c]) r.destroy.push_back(current[c]);
  return r;
}

std::string MigStrategyProblem(MigStrategy strategy, const std::vector<std::vector<const MigProfile*>>& node_gpus,
                               std::string_view node) {
  if (strategy == MigStrategy::kMixed) return {};
  const std::string who = node.empty() ? std::string("the node") : fmt::format("node {}", node);
  // The first GPU with MIG, and the first without: single needs all or none.
  std::size_t with = node_gpus.size(), without = node_gpus.size();
  for (std::size_t g = 0; g < node_gpus.size(); ++g) {
    if (node_gpus[g].empty() && without == node_gpus.size()) without = g;
    if (!node_gpus[g].empty() && with == node_gpus.size()) with = g;
  }
  if (with < node_gpus.size() && without < node_gpus.size())
    return fmt::format(
        "{}: GPU {} has MIG disabled but GPU {} has MIG instances; the single MIG strategy needs MIG enabled on "
        "every GPU of a node or on none (use mixed, or give GPU {} a layout)",
        who, without, with, without);
  if (with == node_gpus.size()) return {};
  // One MIG device type across every GPU of the node.
  const MigProfile* type = node_gpus[with].front();
  for (std::size_t g = with; g < node_gpus.size(); ++g)
    for (const MigProfile* p : node_gpus[g]) {
      if (p == type) continue;
      const std::string where = g == with
                                    ? fmt::format("GPU {} has {} and {}", g, type->name, p->name)
                                    : fmt::format("GPU {} has {} but GPU {} has {}", g, p->name, with, type->name);
      return fmt::format(
          "{}: {}; the single MIG strategy needs one MIG device type on every GPU of a node (use mixed, or one "
          "profile on all its GPUs)",
          who, where);
    }
  return {};
}

}  // namespace gpufit

// Replicas apart on a MIG plan (mig_planner.h SpreadMigReplicas): the layouts stay; a replica
// whose GPU holds another of its set moves to an instance of its profile on another GPU (a
// spare one, or swapped with a workload that does not conflict there), else gets a GPU of its
// own (shared with replicas of other sets that could not move either, while its layout is valid).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "gpufit/optimize/mig_planner.h"

namespace gpufit {

int SpreadMigReplicas(const MigGpu& gpu, MigPlan& plan, const std::vector<int>& set_of) {
  std::map<std::string, int> index;  // workload name -> its index
  for (std::size_t w = 0; w < plan.assignments.size(); ++w) index[plan.assignments[w].workload] = static_cast<int>(w);
  const auto set = [&](int w) { return w >= 0 && static_cast<std::size_t>(w) < set_of.size() ? set_of[w] : -1; };
  // Whether GPU g holds a workload of w's set other than w and `skip`.
  const auto conflict = [&](int w, int g, int skip) {
    if (set(w) < 0) return false;
    for (const std::string& name : plan.gpu_plans[static_cast<std::size_t>(g)].workloads) {
      const auto it = index.find(name);
      if (!name.empty() && it != index.end() && it->second != w && it->second != skip && set(it->second) == set(w))
        return true;
    }
    return false;
  };
  const auto slot_of = [&](int w) {
    auto& names = plan.gpu_plans[static_cast<std::size_t>(plan.assignments[w].gpu)].workloads;
    return std::find(names.begin(), names.end(), plan.assignments[w].workload) - names.begin();
  };
  int added = 0;
  std::vector<std::size_t> apart;  // GPUs added here
  for (int w = 0; w < static_cast<int>(plan.assignments.size()); ++w) {
    MigAssignment& a = plan.assignments[static_cast<std::size_t>(w)];
    if (a.gpu < 0 || set(w) < 0 || !conflict(w, a.gpu, -1)) continue;
    const int from = a.gpu;
    const auto from_slot = static_cast<std::size_t>(slot_of(w));
    if (from_slot >= plan.gpu_plans[static_cast<std::size_t>(from)].workloads.size()) continue;  // not listed there
    bool moved = false;
    for (int g = 0; g < static_cast<int>(plan.gpu_plans.size()) && !moved; ++g) {
      if (g == from || plan.gpu_plans[static_cast<std::size_t>(g)].gpu_model != gpu.id) continue;
      MigGpuPlan& to = plan.gpu_plans[static_cast<std::size_t>(g)];
      for (std::size_t i = 0; i < to.instances.size() && !moved; ++i) {
        if (to.instances[i].profile->name != a.profile) continue;
        const int other = to.workloads[i].empty() ? -1 : index.at(to.workloads[i]);
        if (conflict(w, g, other) || (other >= 0 && conflict(other, from, w))) continue;
        std::swap(to.workloads[i], plan.gpu_plans[static_cast<std::size_t>(from)].workloads[from_slot]);
        a.gpu = g;
        if (other >= 0) plan.assignments[static_cast<std::size_t>(other)].gpu = from;
        moved = true;
      }
    }
    if (moved) continue;
    const Result<const MigProfile*> profile = gpu.Profile(a.profile);
    if (!profile) continue;  // the planner's own profile: always known
    plan.gpu_plans[static_cast<std::size_t>(from)].workloads[from_slot].clear();
    // A GPU added for replicas before, with room for this profile and no replica of its set;
    // else a new one.
    bool placed = false;
    for (std::size_t k = 0; k < apart.size() && !placed; ++k) {
      MigGpuPlan& g = plan.gpu_plans[apart[k]];
      if (conflict(w, static_cast<int>(apart[k]), -1)) continue;
      std::vector<const MigProfile*> profiles;
      for (const MigInstance& i : g.instances) profiles.push_back(i.profile);
      profiles.push_back(*profile);
      const MigLayoutCheck check = CheckMigLayout(gpu, profiles);
      if (!check.valid) continue;
      // The new layout's instances in creation order, each given back its workload.
      std::vector<std::pair<std::string, std::string>> left;  // profile, workload
      for (std::size_t i = 0; i < g.instances.size(); ++i)
        left.emplace_back(g.instances[i].profile->name, g.workloads[i]);
      left.emplace_back(a.profile, a.workload);
      std::vector<std::string> names;
      for (const MigInstance& i : check.creation_order) {
        const auto it =
            std::find_if(left.begin(), left.end(), [&](const auto& e) { return e.first == i.profile->name; });
        names.push_back(it->second);
        left.erase(it);
      }
      g.instances = check.creation_order;
      g.workloads = std::move(names);
      a.gpu = static_cast<int>(apart[k]);
      placed = true;
    }
    if (!placed) {
      apart.push_back(plan.gpu_plans.size());
      plan.gpu_plans.push_back({"", gpu.id, -1, CheckMigLayout(gpu, {*profile}).creation_order, {a.workload}});
      a.gpu = static_cast<int>(apart.back());
      ++added;
    }
  }
  // One mig-parted config per added GPU's layout.
  for (std::size_t k = 0; k < apart.size(); ++k) {
    MigGpuPlan& g = plan.gpu_plans[apart[k]];
    g.config = fmt::format("gpufit-apart-{}", k + 1);
    for (const MigInstance& i : g.instances) ++plan.configs[g.config][i.profile->name];
  }
  plan.gpus += added;
  return added;
}

}  // namespace gpufit

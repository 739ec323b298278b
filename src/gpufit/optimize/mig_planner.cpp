#include "gpufit/optimize/mig_planner.h"

#include <coin/Cbc_C_Interface.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>

namespace gpufit {
namespace {

std::vector<const MigProfile*> Expand(const std::map<const MigProfile*, int>& layout) {
  std::vector<const MigProfile*> out;
  for (const auto& [p, n] : layout)
    for (int i = 0; i < n; ++i) out.push_back(p);
  return out;
}

bool Adequate(const MigProfile& p, const MigWorkload& w) {
  if (!w.profile.empty()) return p.name == w.profile;
  return !p.media_extension() && p.memory >= w.memory_need && p.compute_slices >= w.compute_slices_need;
}

// The smallest adequate profile: fewest memory slices, then compute slices.
const MigProfile* Smallest(const MigGpu& gpu, const MigWorkload& w) {
  const MigProfile* best = nullptr;
  for (const MigProfile& p : gpu.profiles) {
    if (!Adequate(p, w)) continue;
    if (!best || p.memory_slices < best->memory_slices ||
        (p.memory_slices == best->memory_slices && p.compute_slices < best->compute_slices))
      best = &p;
  }
  return best;
}

}  // namespace

const MigProfile* SmallestProfile(const MigGpu& gpu, MiB memory_need) {
  return Smallest(gpu, MigWorkload{.name = "", .memory_need = memory_need, .compute_slices_need = 0, .profile = ""});
}

namespace {

// First-fit decreasing: each workload on its smallest adequate profile, onto the first GPU
// whose layout stays valid. Returns per GPU the (profile, workload) pairs.
std::vector<std::vector<std::pair<const MigProfile*, std::size_t>>> FirstFit(
    const MigGpu& gpu, const std::vector<std::pair<const MigProfile*, std::size_t>>& needs) {
  auto order = needs;
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first->memory_slices != b.first->memory_slices ? a.first->memory_slices > b.first->memory_slices
                                                            : a.first->compute_slices > b.first->compute_slices;
  });
  std::vector<std::vector<std::pair<const MigProfile*, std::size_t>>> bins;
  for (const auto& need : order) {
    bool placed = false;
    for (auto& b : bins) {
      std::vector<const MigProfile*> layout;
      for (const auto& [p, w] : b) layout.push_back(p);
      layout.push_back(need.first);
      if (CheckMigLayout(gpu, layout).valid) {
        b.push_back(need);
        placed = true;
        break;
      }
    }
    if (!placed) bins.push_back({need});
  }
  return bins;
}

}  // namespace

std::vector<std::map<const MigProfile*, int>> MigLayouts(const MigGpu& gpu, MigStrategy strategy) {
  std::vector<const MigProfile*> plain;
  for (const MigProfile& p : gpu.profiles)
    if (!p.media_extension()) plain.push_back(&p);
  std::vector<std::map<const MigProfile*, int>> layouts;
  std::vector<int> count(plain.size(), 0);
  while (true) {
    std::map<const MigProfile*, int> layout;
    for (std::size_t k = 0; k < plain.size(); ++k)
      if (count[k] > 0) layout[plain[k]] = count[k];
    const bool allowed = strategy == MigStrategy::kMixed || layout.size() == 1;
    if (!layout.empty() && allowed && CheckMigLayout(gpu, Expand(layout)).valid) layouts.push_back(layout);
    std::size_t k = 0;
    while (k < plain.size() && ++count[k] > plain[k]->max_count) count[k++] = 0;
    if (k == plain.size()) break;
  }
  return layouts;
}

Result<MigPlan> PlanMigLayouts(const MigGpu& gpu, const std::vector<MigWorkload>& workloads,
                               const MigPlanOptions& options) {
  return PlanMigPool({{&gpu, 1.0, -1}}, workloads, options);
}

Result<MigPlan> PlanMigPool(const std::vector<MigPoolGpu>& pool, const std::vector<MigWorkload>& workloads,
                            const MigPlanOptions& options) {
  MigPlan plan;
  if (pool.empty()) return InvalidArgument("the MIG pool has no GPU model");
  if (options.gpus_per_node < 1 || options.gpus_per_node > 1024)
    return InvalidArgument("gpus per node must be in [1, 1024], got {}", options.gpus_per_node);
  if (options.gpus_per_node > 1 && options.strategy == MigStrategy::kMixed)
    return InvalidArgument(
        "gpus per node {}: the mixed strategy has no rule across a node's GPUs; plan nodes with the single strategy",
        options.gpus_per_node);
  // Under single, a column is a node of `per` GPUs with one layout (one MIG device type).
  const int per = options.gpus_per_node;
  for (const MigPoolGpu& m : pool) plan.gpu_model += (plan.gpu_model.empty() ? "" : ",") + m.gpu->id;
  // "Slots": (model, profile) pairs without media extension. Classes: workloads with the
  // same adequate slots.
  struct Slot {
    std::size_t model;
    const MigProfile* profile;
  };
  std::vector<Slot> plain;
  for (std::size_t m = 0; m < pool.size(); ++m)
    for (const MigProfile& p : pool[m].gpu->profiles)
      if (!p.media_extension()) plain.push_back({m, &p});
  std::map<std::vector<bool>, std::vector<std::size_t>> classes;
  std::vector<std::pair<const MigProfile*, std::size_t>> smallest;  // on the first model: the baseline
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    std::vector<bool> ok(plain.size());
    bool any = false;
    for (std::size_t k = 0; k < plain.size(); ++k) any |= (ok[k] = Adequate(*plain[k].profile, workloads[i]));
    plan.assignments.push_back({workloads[i].name, -1, "", ""});
    if (!any) {
      plan.too_big.push_back(workloads[i].name);
      continue;
    }
    classes[ok].push_back(i);
    if (const MigProfile* p = Smallest(*pool[0].gpu, workloads[i])) smallest.emplace_back(p, i);
  }
  if (classes.empty()) return plan;
  const auto first_fit = FirstFit(*pool[0].gpu, smallest);
  plan.first_fit_gpus = static_cast<int>(first_fit.size());
  const std::string resource_single = "nvidia.com/gpu";  // single strategy: MIG devices are advertised as GPUs
  auto resource_of = [&](const MigProfile& p) {
    return options.strategy == MigStrategy::kSingle ? resource_single : p.resource_name();
  };

  struct LayoutCol {
    std::size_t model;
    std::map<const MigProfile*, int> layout;
  };
  std::vector<LayoutCol> layouts;
  for (std::size_t m = 0; m < pool.size(); ++m)
    for (auto& l : MigLayouts(*pool[m].gpu, options.strategy)) layouts.push_back({m, std::move(l)});
  const int nl = static_cast<int>(layouts.size()), np = static_cast<int>(plain.size());
  const int nc = static_cast<int>(classes.size()), nm = static_cast<int>(pool.size());
  // Columns: x_L, then y_cs for adequate (class, slot). Rows: classes, slots, model limits.
  std::vector<int> start = {0}, index;
  std::vector<double> value, collb, colub, obj;
  for (const LayoutCol& col : layouts) {
    for (int k = 0; k < np; ++k) {
      if (plain[static_cast<std::size_t>(k)].model != col.model) continue;
      const auto it = col.layout.find(plain[static_cast<std::size_t>(k)].profile);
      if (it == col.layout.end()) continue;
      index.push_back(nc + k);
      value.push_back(-it->second * per);
    }
    index.push_back(nc + np + static_cast<int>(col.model));
    value.push_back(per);
    start.push_back(static_cast<int>(index.size()));
    collb.push_back(0);
    colub.push_back(static_cast<double>(workloads.size()));
    obj.push_back(per * (options.minimize_cost ? pool[col.model].usd_per_gpu_hour : 1.0));
  }
  struct YCol {
    int c, k;
  };
  std::vector<YCol> ycols;
  std::vector<double> rowlb, rowub;
  int c = 0;
  for (const auto& [ok, members] : classes) {
    for (int k = 0; k < np; ++k) {
      if (!ok[static_cast<std::size_t>(k)]) continue;
      index.push_back(c);
      value.push_back(1);
      index.push_back(nc + k);
      value.push_back(1);
      start.push_back(static_cast<int>(index.size()));
      collb.push_back(0);
      colub.push_back(static_cast<double>(members.size()));
      obj.push_back(0);
      ycols.push_back({c, k});
    }
    rowlb.push_back(static_cast<double>(members.size()));
    rowub.push_back(static_cast<double>(members.size()));
    ++c;
  }
  for (int k = 0; k < np; ++k) {
    rowlb.push_back(-1e30);
    rowub.push_back(0);
  }
  for (int m = 0; m < nm; ++m) {
    rowlb.push_back(0);
    rowub.push_back(pool[static_cast<std::size_t>(m)].max_gpus < 0 ? 1e30 : pool[static_cast<std::size_t>(m)].max_gpus);
  }
  const int ncols = nl + static_cast<int>(ycols.size());
  Cbc_Model* model = Cbc_newModel();
  Cbc_loadProblem(model, ncols, nc + np + nm, start.data(), index.data(), value.data(), collb.data(), colub.data(),
                  obj.data(), rowlb.data(), rowub.data());
  for (int j = 0; j < ncols; ++j) Cbc_setInteger(model, j);
  Cbc_setLogLevel(model, 0);
  Cbc_setMaximumSeconds(model, options.max_seconds);
  Cbc_solve(model);
  const double* x = Cbc_getColSolution(model);
  if (Cbc_isProvenInfeasible(model)) {
    Cbc_deleteModel(model);
    return FailedPrecondition("no MIG plan fits {} workloads into the GPUs allowed ({})", workloads.size(),
                              plan.gpu_model);
  }
  const bool single_model_unlimited =
      pool.size() == 1 && pool[0].max_gpus < 0 && options.strategy == MigStrategy::kMixed;
  if (!x || Cbc_getObjValue(model) > 1e20) {
    // No integer solution within the time limit: fall back on first-fit decreasing.
    Cbc_deleteModel(model);
    if (!single_model_unlimited)
      return FailedPrecondition("the solver found no MIG plan for the GPUs allowed ({}) within {} s", plan.gpu_model,
                                options.max_seconds);
    for (const auto& bin : first_fit) {
      std::vector<const MigProfile*> layout;
      for (const auto& [p, w] : bin) layout.push_back(p);
      const MigLayoutCheck check = CheckMigLayout(*pool[0].gpu, layout);
      const int id = static_cast<int>(plan.gpu_plans.size());
      const std::string name = fmt::format("gpufit-ffd-{}", id + 1);
      MigGpuPlan g{name, pool[0].gpu->id, -1, check.creation_order,
                   std::vector<std::string>(check.creation_order.size())};
      std::vector<bool> used(check.creation_order.size(), false);
      for (const auto& [p, w] : bin) {
        for (std::size_t i = 0; i < check.creation_order.size(); ++i) {
          if (used[i] || check.creation_order[i].profile != p) continue;
          used[i] = true;
          g.workloads[i] = workloads[w].name;
          plan.assignments[w] = {workloads[w].name, id, p->name, resource_of(*p)};
          break;
        }
        ++plan.configs[name][p->name];
      }
      plan.gpu_plans.push_back(std::move(g));
    }
    plan.gpus = static_cast<int>(plan.gpu_plans.size());
    plan.objective = plan.gpus;
    int slices = 0;  // a simple bound: the smallest instances' memory slices, packed perfectly
    for (const auto& [p, w] : smallest) slices += p->memory_slices;
    plan.bound = std::ceil(static_cast<double>(slices) / pool[0].gpu->memory_slices);
    plan.lower_bound = static_cast<int>(plan.bound);
    plan.gap = plan.gpus > 0 ? (plan.gpus - plan.bound) / plan.gpus : 0;
    return plan;
  }
  std::vector<long> sol(static_cast<std::size_t>(ncols));
  for (int j = 0; j < ncols; ++j) sol[static_cast<std::size_t>(j)] = std::lround(x[j]);
  plan.optimal = Cbc_isProvenOptimal(model) != 0;
  const double bound = Cbc_getBestPossibleObjValue(model);
  const double objective = Cbc_getObjValue(model);
  Cbc_deleteModel(model);

  // Expand: GPUs per used layout, one named config per layout.
  std::map<std::pair<std::size_t, const MigProfile*>, std::deque<std::pair<int, int>>> slots;
  int config_no = 0;
  for (int l = 0; l < nl; ++l) {
    const long copies = sol[static_cast<std::size_t>(l)];
    if (copies <= 0) continue;
    const LayoutCol& col = layouts[static_cast<std::size_t>(l)];
    const std::string name = fmt::format("gpufit-{}", ++config_no);
    for (const auto& [p, n] : col.layout) plan.configs[name][p->name] = n;
    const MigLayoutCheck check = CheckMigLayout(*pool[col.model].gpu, Expand(col.layout));
    for (long g = 0; g < copies * per; ++g) {
      const int id = static_cast<int>(plan.gpu_plans.size());
      const int node = per > 1 ? plan.nodes + static_cast<int>(g / per) : -1;
      plan.gpu_plans.push_back({name, pool[col.model].gpu->id, node, check.creation_order,
                                std::vector<std::string>(check.creation_order.size())});
      for (std::size_t i = 0; i < check.creation_order.size(); ++i)
        slots[{col.model, check.creation_order[i].profile}].emplace_back(id, static_cast<int>(i));
    }
    if (per > 1) plan.nodes += static_cast<int>(copies);
  }
  plan.gpus = static_cast<int>(plan.gpu_plans.size());
  // Every planned node keeps the strategy's rule across its GPUs.
  for (int n = 0; n < plan.nodes; ++n) {
    std::vector<std::vector<const MigProfile*>> node_gpus;
    for (const MigGpuPlan& g : plan.gpu_plans) {
      if (g.node != n) continue;
      node_gpus.emplace_back();
      for (const MigInstance& i : g.instances) node_gpus.back().push_back(i.profile);
    }
    if (const std::string broken = MigStrategyProblem(options.strategy, node_gpus, fmt::format("planned node {}", n));
        !broken.empty())
      return Internal("the MIG plan breaks its strategy: {}", broken);
  }
  std::vector<std::vector<std::size_t>> members;
  for (const auto& [ok, m] : classes) members.push_back(m);
  std::vector<std::size_t> next(members.size(), 0);
  for (std::size_t j = 0; j < ycols.size(); ++j) {
    const Slot& slot = plain[static_cast<std::size_t>(ycols[j].k)];
    for (long n = 0; n < sol[static_cast<std::size_t>(nl) + j]; ++n) {
      const std::size_t w = members[static_cast<std::size_t>(ycols[j].c)][next[static_cast<std::size_t>(ycols[j].c)]++];
      auto& free_slots = slots[{slot.model, slot.profile}];
      if (free_slots.empty())
        return Internal("the MIP solution assigns more {} than its layouts hold", slot.profile->name);
      const auto [g, i] = free_slots.front();
      free_slots.pop_front();
      plan.gpu_plans[static_cast<std::size_t>(g)].workloads[static_cast<std::size_t>(i)] = workloads[w].name;
      plan.assignments[w] = {workloads[w].name, g, slot.profile->name, resource_of(*slot.profile)};
    }
  }
  plan.objective = objective;
  plan.bound = plan.optimal ? objective : std::min(bound, objective);
  plan.lower_bound = options.minimize_cost ? 0 : static_cast<int>(std::ceil(plan.bound - 1e-6));
  plan.gap = objective > 0 ? std::max(0.0, (objective - plan.bound) / objective) : 0;
  return plan;
}

std::string MigPartedConfig(const MigPlan& plan) {
  std::string out = fmt::format("# mig-parted config written by gpufit for {} ({} GPUs).\n", plan.gpu_model, plan.gpus);
  out += "# Apply with: nvidia-mig-parted apply -f THIS_FILE -c <name>, or label a node\n";
  out += "# nvidia.com/mig.config=<name> for the GPU Operator's MIG manager.\nversion: v1\nmig-configs:\n";
  if (plan.configs.empty()) out += "  all-disabled:\n    - devices: all\n      mig-enabled: false\n";
  for (const auto& [name, profiles] : plan.configs) {
    // The model of the config's GPUs, so that a config only applies to that model's devices.
    std::string model;
    for (const MigGpuPlan& g : plan.gpu_plans)
      if (g.config == name) model = g.gpu_model;
    std::string filter;
    if (const Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(model); gpu && !(*gpu)->pci_device_ids.empty())
      filter = fmt::format("      device-filter: [\"{}\"]\n", fmt::join((*gpu)->pci_device_ids, "\", \""));
    out += fmt::format("  {}:\n    - devices: all\n{}      mig-enabled: true\n      mig-devices:\n", name, filter);
    for (const auto& [profile, count] : profiles) out += fmt::format("        \"{}\": {}\n", profile, count);
  }
  return out;
}

}  // namespace gpufit

// MIG isolation: hardware partitions, one instance per replica (mig-parted configs per
// node, node labels, and workload patches asking for nvidia.com/mig-<profile>); see
// plan/kube_manifests.h for what is written. Memory and compute are isolated by the GPU.
// Formats: ../shared/reference/formats.md (e).
#include <fmt/format.h>

#include <cmath>

#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/optimize/mig_planner.h"
#include "gpufit/placement/mig_layout.h"
#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {
namespace {

Result<void> EmitMig(Builder& b) {
  const Plan& plan = *b.in().colocation;
  const Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(plan.target.id);
  if (!gpu) return Internal("MIG plan for {}: {}", plan.target.id, gpu.error().message);

  // One pod template serves every replica of a workload, so every replica gets one profile:
  // the smallest that holds the workload's largest need (peak x (1 + headroom), as the
  // plan's own MIG section computes it). The layout is planned again with exactly those
  // profiles, so the mig-parted configs hold an instance for each replica's request.
  struct Owned {
    WorkloadKey key;
    const KubePod* pod = nullptr;
    std::int64_t need = 0;
  };
  std::vector<std::optional<Owned>> owner(plan.pod_names.size());
  std::map<WorkloadKey, std::int64_t> workload_need;
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    const auto need =
        static_cast<std::int64_t>(std::ceil(plan.profiles[i].fb_used_mib.peak * (1 + plan.options.headroom)));
    const auto w = b.in().pods ? b.WorkloadOf(plan.pod_names[i]) : std::nullopt;
    if (!w) {
      if (b.in().pods == nullptr)
        b.NoteOnce("no --pods file: workload patches need each pod's owner (kubectl get pods -A -o json)");
      owner[i] = Owned{.key = {}, .pod = nullptr, .need = need};
      continue;
    }
    owner[i] = Owned{.key = w->first, .pod = w->second, .need = need};
    std::int64_t& most = workload_need[w->first];
    most = std::max(most, need);
  }
  std::vector<MigWorkload> needs;
  std::vector<int> sets;  // per need: its replica set (Plan::replica_set)
  std::map<WorkloadKey, const MigProfile*> profile_of;
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    if (plan.keeps_current_gpu(i)) {
      b.Note(fmt::format("pod {}: {}, it keeps its whole {} (no MIG instance)", plan.pod_names[i],
                         plan.multi_gpu_of(i) != nullptr ? "on several devices" : "CPU-starved", plan.current.id));
      continue;
    }
    const bool mapped = owner[i]->pod != nullptr;
    const MiB need{mapped ? workload_need[owner[i]->key] : owner[i]->need};
    const MigProfile* p = SmallestProfile(**gpu, need);
    if (p == nullptr) {
      b.Note(fmt::format("pod {}: no MIG profile of {} holds {} MiB; it keeps a whole GPU", plan.pod_names[i],
                         plan.target.id, need.value));
      continue;
    }
    if (mapped) profile_of[owner[i]->key] = p;
    needs.push_back({.name = plan.pod_names[i], .memory_need = need, .compute_slices_need = 0, .profile = p->name});
    sets.push_back(i < plan.replica_set.size() ? plan.replica_set[i] : -1);
  }
  if (needs.empty()) return {};
  Result<MigPlan> planned = PlanMigLayouts(**gpu, needs);
  if (!planned) return planned.error();
  SpreadMigReplicas(**gpu, *planned, sets);  // replicas of one workload on different GPUs
  const MigPlan& mig = *planned;
  if (mig.gpus != plan.mig->gpus)
    b.Note(
        fmt::format("MIG: one profile per workload takes {} GPUs of {}, against {} for one "
                    "profile per pod (the plan's mig_isolation section)",
                    mig.gpus, plan.target.id, plan.mig->gpus));

  // mig-parted file: all-disabled (the ClusterPolicy's default), then one config per node,
  // or the plan's layouts by name without nodes.
  YAML::Node configs;
  const auto entry = [](const YAML::Node& devices, const std::map<std::string, int>* layout) {
    YAML::Node e;
    e["devices"] = devices;
    e["mig-enabled"] = Plain(layout != nullptr);
    if (layout != nullptr)
      for (const auto& [profile, count] : *layout) e["mig-devices"][profile] = Plain(count);
    return e;
  };
  configs["all-disabled"].push_back(entry(YAML::Node("all"), nullptr));
  const std::size_t gpus_needed = mig.gpu_plans.size();
  std::map<std::string, std::vector<std::vector<const MigProfile*>>> node_layouts;  // node -> per-GPU instances
  if (b.in().nodes == nullptr) {
    for (const auto& [name, layout] : mig.configs) configs[name].push_back(entry(YAML::Node("all"), &layout));
    b.NoteOnce(fmt::format("no --nodes file: label each node of {} with {}=<one of the configs in {}> yourself",
                           plan.target.id, kMigConfigLabel, kMigPartedConfigMap));
  } else {
    std::size_t next = 0;
    std::vector<std::pair<const KubeNode*, std::string>> labelled;
    for (const KubeNode* n : b.TargetNodes(kMigConfigLabel, "gpufit-", false)) {
      if (next >= gpus_needed) break;
      const std::string name = LabelValue("gpufit-" + n->name);
      std::map<std::string, std::vector<int>> devices_by_layout;  // layout name -> GPU indices
      std::vector<int> spare;
      std::vector<std::vector<const MigProfile*>>& per_gpu = node_layouts[n->name];  // GPU index -> instances
      for (int i = 0; i < n->gpu_count; ++i) {
        per_gpu.emplace_back();
        if (next < gpus_needed) {
          for (const MigInstance& inst : mig.gpu_plans[next].instances) per_gpu.back().push_back(inst.profile);
          devices_by_layout[mig.gpu_plans[next++].config].push_back(i);
        } else {
          spare.push_back(i);
        }
      }
      for (const auto& [layout, devices] : devices_by_layout) {
        YAML::Node list;
        for (int d : devices) list.push_back(Plain(d));
        configs[name].push_back(entry(list, &mig.configs.at(layout)));
      }
      if (!spare.empty()) {
        YAML::Node list;
        for (int d : spare) list.push_back(Plain(d));
        configs[name].push_back(entry(list, nullptr));
      }
      labelled.emplace_back(n, name);
    }
    if (labelled.empty()) {
      b.Note(fmt::format("MIG: no schedulable {} node in --nodes; nothing written for it", plan.target.id));
      return {};
    }
    if (next < gpus_needed)
      b.Note(
          fmt::format("the cluster has too few usable {} GPUs for the {} MIG GPUs of the plan: "
                      "add {}",
                      plan.target.id, gpus_needed, gpus_needed - next));
    for (const auto& [n, name] : labelled)
      b.NodeLabel(*n, kMigConfigLabel, name,
                  fmt::format("its {} GPUs take the MIG layouts of the plan's GPUs (mig-parted config {})",
                              n->gpu_count, name));
  }
  YAML::Node file;
  file["version"] = "v1";
  file["mig-configs"] = configs;
  b.ConfigMap(kMigPartedConfigMap, "config.yaml", Emit(file),
              fmt::format("mig-parted configs for {} GPUs of {}", gpus_needed, plan.target.id),
              fmt::format("one MIG instance per pod: {} GPUs ({} proven optimal), {} pods whose memory exceeded "
                          "their instance in the replay",
                          mig.gpus, mig.optimal ? "CBC" : "not", plan.mig_pods_exceeding));
  b.ClusterPolicy("migManager", kMigPartedConfigMap, "all-disabled", true);
  if (b.in().nodes != nullptr) {
    // Nodes on the single strategy: the node-level rule (one MIG device type on all the node's
    // GPUs, MIG on all or none; placement/mig_layout.h) against the layouts planned for them.
    std::set<std::string> single;
    for (const KubeNode& n : *b.in().nodes) {
      if (n.mig_strategy != "single") continue;
      const auto layouts = node_layouts.find(n.name);
      const std::string broken =
          layouts == node_layouts.end() ? "" : MigStrategyProblem(MigStrategy::kSingle, layouts->second, n.name);
      if (broken.empty()) {
        single.insert(n.name);
        continue;
      }
      b.Note(fmt::format(
          "{} runs the single MIG strategy and its planned layouts break it ({}); the ClusterPolicy patch sets "
          "mixed, where they are valid, and pods there must ask for nvidia.com/mig-<profile>; review before applying",
          "node " + n.name, broken));
    }
    if (!single.empty())
      b.Note(fmt::format(
          "nodes {} run the single MIG strategy: under mixed (set by the ClusterPolicy patch) their MIG devices "
          "are advertised as nvidia.com/mig-<profile> instead of nvidia.com/gpu, so pods there must ask for the "
          "new names; review before applying",
          Join({single.begin(), single.end()})));
  }
  if (const std::set<std::string> foreign = b.ForeignConfigs(kMigConfigLabel, "gpufit-", "all-disabled");
      !foreign.empty())
    b.Note(
        fmt::format("nodes are labelled with mig-parted configs ({}) that gpufit's ConfigMap does "
                    "not hold: add them to it, or relabel those nodes",
                    Join({foreign.begin(), foreign.end()})));

  // Workloads: each replica asks for its workload's profile.
  std::map<WorkloadKey, std::pair<const KubePod*, std::vector<std::string>>> replicas;
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    if (owner[i]->pod == nullptr || !profile_of.count(owner[i]->key)) continue;
    auto& [pod, names] = replicas[owner[i]->key];
    pod = owner[i]->pod;
    names.push_back(plan.pod_names[i]);
  }
  for (const auto& [key, chosen] : replicas) {
    const auto& [pod, names] = chosen;
    const MigProfile& profile = *profile_of.at(key);
    const std::string resource = "nvidia.com/mig-" + profile.name;
    const std::string name = fmt::format("{} {}/{}", key.kind, key.ns, key.name);
    // The one container that asks for a GPU (whole or MIG) gets the instance.
    std::vector<const KubeContainer*> gpu_containers;
    for (const KubeContainer& c : pod->containers)
      for (const auto& [r, count] : c.resources.devices)
        if ((r == kGpuResource || r.rfind("nvidia.com/mig-", 0) == 0) && count > 0) {
          gpu_containers.push_back(&c);
          break;
        }
    if (gpu_containers.size() != 1) {
      b.Note(gpu_containers.empty()
                 ? fmt::format("{}: no container asks for a GPU; give its GPU container {}: 1 by hand", name, resource)
                 : fmt::format("{}: {} containers ask for GPUs, one MIG instance per pod was planned; left as it is",
                               name, gpu_containers.size()));
      continue;
    }
    const KubeContainer& c = *gpu_containers.front();
    int held = 0;
    for (const auto& [r, count] : c.resources.devices)
      if (r == kGpuResource || r.rfind("nvidia.com/mig-", 0) == 0) held += count;
    if (held != 1) {
      b.Note(
          fmt::format("{}: container {} asks for {} GPUs, one MIG instance per pod was planned; "
                      "left as it is",
                      name, c.name, held));
      continue;
    }
    YAML::Node container;
    container["name"] = c.name;
    for (const char* side : {"limits", "requests"}) {
      for (const auto& [r, count] : c.resources.devices)
        if (r != resource && (r == kGpuResource || r.rfind("nvidia.com/mig-", 0) == 0))
          container["resources"][side][r] = YAML::Node(YAML::NodeType::Null);
      container["resources"][side][resource] = "1";
    }
    Patch& patch = b.PatchOf(key);
    Builder::AddContainer(patch, c, container);
    patch.what.push_back(fmt::format("container {}: {}: 1", c.name, resource));
    b.SelectTargetModel(patch);
    patch.why.push_back(
        fmt::format("{} replica(s) ({}) need up to {} MiB (peak x {:.2f}); {} holds {} MiB; the "
                    "mig-parted layout provides one per replica",
                    names.size(), Join(names), workload_need.at(key), 1 + plan.options.headroom, profile.name,
                    profile.memory.value));
  }
  return {};
}

}  // namespace

extern const SharingBackend kMig;
const SharingBackend kMig = {
    .name = "mig",
    .memory_enforced_by = "the GPU (MIG partitions)",
    .compute_enforced_by = "the GPU (MIG partitions)",
    .needs = "NVIDIA GPU Operator with the MIG manager; a MIG-capable GPU (A100, A30, H100, H200, B200)",
    .caps_memory = false,
    .emit = EmitMig,
    .read_cap = [](const std::string&) -> std::optional<double> { return std::nullopt; },
};

}  // namespace gpufit::manifests

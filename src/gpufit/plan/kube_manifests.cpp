#include "gpufit/plan/kube_manifests.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "gpufit/catalog/mig_catalog.h"

namespace gpufit {
namespace {

struct WorkloadKey {
  std::string ns, kind, name;
  auto operator<=>(const WorkloadKey&) const = default;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const char* ApiVersionOf(const std::string& kind) {
  if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "ReplicaSet") return "apps/v1";
  if (kind == "Job") return "batch/v1";
  return nullptr;
}

YAML::Node Object(const std::string& api_version, const std::string& kind, const std::string& name,
                  const std::string& ns) {
  YAML::Node n;
  n["apiVersion"] = api_version;
  n["kind"] = kind;
  n["metadata"]["name"] = name;
  if (!ns.empty()) n["metadata"]["namespace"] = ns;
  return n;
}

std::string Emit(const YAML::Node& n) {
  YAML::Emitter out;
  out << n;
  return std::string(out.c_str()) + "\n";
}

// The telemetry key "ns/pod" or "ns/pod[i]" -> the pods file's pod.
const KubePod* FindPod(const std::vector<KubePod>& pods, std::string key) {
  if (const std::size_t bracket = key.find('['); bracket != std::string::npos) key.resize(bracket);
  const std::size_t slash = key.find('/');
  const KubePod* match = nullptr;
  for (const KubePod& p : pods) {
    if (slash != std::string::npos ? p.Key() == key : p.name == key) {
      if (match != nullptr) return nullptr;  // a bare name in several namespaces: ambiguous
      match = &p;
    }
  }
  return match;
}

// One workload patch being built, and why.
struct Patch {
  YAML::Node yaml;
  std::vector<std::string> what, why;
};

class Builder {
 public:
  explicit Builder(const ManifestInputs& in) : in_(in) {}

  Result<Manifests> Build() {
    if (in_.colocation != nullptr) {
      if (in_.colocation->mig) {
        if (Result<void> r = MigIsolation(); !r) return r.error();
      } else {
        TimeSlicing();
      }
    }
    if (in_.training != nullptr) Training();
    for (auto& [key, patch] : patches_) {
      out_.files.push_back({.name = fmt::format("workload-{}-{}-{}.yaml", key.ns, Lower(key.kind), key.name),
                            .yaml = Emit(patch.yaml),
                            .apply = fmt::format("kubectl patch {} {} -n {} --type strategic --patch-file FILE",
                                                 Lower(key.kind), key.name, key.ns),
                            .what = fmt::format("{} {}/{}: {}", key.kind, key.ns, key.name, Join(patch.what, "; ")),
                            .why = Join(patch.why, "; ")});
      if (key.kind == "Job")
        out_.notes.push_back(
            fmt::format("Job {}/{}: a Job's pod template cannot change after creation; apply "
                        "workload-{}-job-{}.yaml to its source manifest (kustomize patches) for "
                        "the next run",
                        key.ns, key.name, key.ns, key.name));
    }
    std::sort(out_.files.begin(), out_.files.end(),
              [](const ManifestFile& a, const ManifestFile& b) { return a.name < b.name; });
    return std::move(out_);
  }

 private:
  static std::string Join(const std::vector<std::string>& items, const char* sep = ", ") {
    std::string s;
    for (const std::string& i : items) s += (s.empty() ? "" : sep) + i;
    return s;
  }

  // The workload of a telemetry pod, or none (with a note).
  std::optional<std::pair<WorkloadKey, const KubePod*>> WorkloadOf(const std::string& telemetry_pod) {
    if (in_.pods == nullptr) {
      NoteOnce("no --pods file: workload patches need each pod's owner (kubectl get pods -A -o json)");
      return std::nullopt;
    }
    const KubePod* pod = FindPod(*in_.pods, telemetry_pod);
    if (pod == nullptr) {
      out_.notes.push_back(
          fmt::format("pod {}: not in the --pods file (or its name is ambiguous): no patch", telemetry_pod));
      return std::nullopt;
    }
    if (ApiVersionOf(pod->owner.kind) == nullptr) {
      out_.notes.push_back(
          fmt::format("pod {}: owned by {} {}, which has no pod template gpufit can patch; change "
                      "it where it is defined",
                      pod->Key(), pod->owner.kind, pod->owner.name));
      return std::nullopt;
    }
    return std::make_pair(WorkloadKey{pod->namespace_name, pod->owner.kind, pod->owner.name}, pod);
  }

  Patch& PatchOf(const WorkloadKey& key) {
    auto [it, fresh] = patches_.try_emplace(key);
    if (fresh) it->second.yaml = Object(ApiVersionOf(key.kind), key.kind, key.name, key.ns);
    return it->second;
  }

  void NoteOnce(const std::string& note) {
    if (std::find(out_.notes.begin(), out_.notes.end(), note) == out_.notes.end()) out_.notes.push_back(note);
  }

  // Target-model nodes, from --nodes; those carrying `label`=`value` already first.
  std::vector<const KubeNode*> TargetNodes(const std::string& label, const std::string& value_prefix) const {
    std::vector<const KubeNode*> nodes;
    if (in_.nodes == nullptr) return nodes;
    const std::string target = NormalizedGpuProduct(in_.colocation->target.name);
    for (const KubeNode& n : *in_.nodes)
      if (n.gpu_count > 0 && !n.unschedulable && NormalizedGpuProduct(n.gpu_product) == target) nodes.push_back(&n);
    auto labelled = [&](const KubeNode* n) {
      const auto it = n->labels.find(label);
      return it != n->labels.end() && it->second.rfind(value_prefix, 0) == 0;
    };
    std::stable_partition(nodes.begin(), nodes.end(), labelled);
    return nodes;
  }

  // The GFD product value of the target model: a node's own, else from the catalog name.
  std::string TargetProduct() const {
    const std::string target = NormalizedGpuProduct(in_.colocation->target.name);
    if (in_.nodes != nullptr)
      for (const KubeNode& n : *in_.nodes)
        if (NormalizedGpuProduct(n.gpu_product) == target) return n.gpu_product;
    std::string p = in_.colocation->target.name;
    std::replace(p.begin(), p.end(), ' ', '-');
    return p;
  }

  void SelectTargetModel(Patch& patch) {
    const Plan& plan = *in_.colocation;
    if (plan.target.id == plan.current.id) return;
    patch.yaml["spec"]["template"]["spec"]["nodeSelector"][kGpuProductLabel] = TargetProduct();
    patch.what.push_back(fmt::format("runs on {} ({})", plan.target.id, kGpuProductLabel));
  }

  void NodeLabel(const KubeNode& node, const std::string& label, const std::string& value, const std::string& why) {
    YAML::Node n = Object("v1", "Node", node.name, "");
    n["metadata"]["labels"][label] = value;
    out_.files.push_back({.name = fmt::format("node-{}.yaml", node.name),
                          .yaml = Emit(n),
                          .apply = fmt::format("kubectl patch node {} --type strategic --patch-file FILE", node.name),
                          .what = fmt::format("node {}: label {}={}", node.name, label, value),
                          .why = why});
  }

  void ClusterPolicy(const char* section, const char* config_map, const std::string& default_config) {
    YAML::Node n = Object("nvidia.com/v1", "ClusterPolicy", "cluster-policy", "");
    n["spec"][section]["config"]["name"] = config_map;
    if (!default_config.empty()) n["spec"][section]["config"]["default"] = default_config;
    out_.files.push_back({.name = "clusterpolicy-cluster-policy.yaml",
                          .yaml = Emit(n),
                          .apply = "kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge --patch-file "
                                   "FILE",
                          .what = fmt::format("GPU Operator: spec.{}.config.name = {}", section, config_map),
                          .why = "makes the operator read gpufit's ConfigMap; nodes pick a config by label"});
  }

  void ConfigMap(const std::string& name, const std::string& key, const std::string& data, const std::string& what,
                 const std::string& why) {
    YAML::Node n = Object("v1", "ConfigMap", name, kGpuOperatorNamespace);
    n["data"][key] = data;
    YAML::Emitter e;
    e << YAML::BeginMap;
    for (const char* k : {"apiVersion", "kind"}) e << YAML::Key << k << YAML::Value << n[k].as<std::string>();
    e << YAML::Key << "metadata" << YAML::Value << n["metadata"];
    e << YAML::Key << "data" << YAML::Value << YAML::BeginMap << YAML::Key << key << YAML::Value << YAML::Literal
      << data << YAML::EndMap << YAML::EndMap;
    out_.files.push_back({.name = fmt::format("configmap-{}-{}.yaml", kGpuOperatorNamespace, name),
                          .yaml = std::string(e.c_str()) + "\n",
                          .apply = "kubectl apply -f FILE",
                          .what = what,
                          .why = why});
  }

  void TimeSlicing() {
    const Plan& plan = *in_.colocation;
    std::size_t shared_gpus = 0, replicas = 0;
    for (const GpuReplay& g : plan.replay.gpus) {
      if (g.pods.size() < 2) continue;
      ++shared_gpus;
      replicas = std::max(replicas, g.pods.size());
    }
    if (shared_gpus == 0) {
      out_.notes.push_back("co-location: no GPU is shared, so no time-slicing configuration is needed");
      return;
    }
    YAML::Node config;
    config["version"] = "v1";
    config["flags"]["migStrategy"] = "none";
    YAML::Node resource;
    resource["name"] = kGpuResource;
    resource["replicas"] = replicas;
    config["sharing"]["timeSlicing"]["resources"].push_back(resource);
    ConfigMap(kDevicePluginConfigMap, kTimeSlicingConfig, Emit(config),
              fmt::format("NVIDIA device plugin config {}: each GPU advertised {} times as {}", kTimeSlicingConfig,
                          replicas, kGpuResource),
              fmt::format("{} GPUs are shared by up to {} pods each; the replay found {} memory overflows and a worst "
                          "collision share of {:.2f}%",
                          shared_gpus, replicas, plan.replay.memory_overflows, 100 * plan.replay.max_collision_share));
    ClusterPolicy("devicePlugin", kDevicePluginConfigMap, "");

    // Nodes for the shared GPUs.
    if (in_.nodes == nullptr) {
      NoteOnce(fmt::format("no --nodes file: label {} nodes of {} with {}={} yourself", shared_gpus, plan.target.id,
                           kDevicePluginConfigLabel, kTimeSlicingConfig));
    } else {
      std::size_t gpus = 0;
      for (const KubeNode* n : TargetNodes(kDevicePluginConfigLabel, kTimeSlicingConfig)) {
        if (gpus >= shared_gpus) break;
        gpus += static_cast<std::size_t>(n->gpu_count);
        NodeLabel(
            *n, kDevicePluginConfigLabel, kTimeSlicingConfig,
            fmt::format("hosts shared {} GPUs ({} of {})", plan.target.id, std::min(gpus, shared_gpus), shared_gpus));
      }
      if (gpus < shared_gpus)
        out_.notes.push_back(fmt::format("the cluster has {} schedulable {} GPUs for the {} shared ones: add {}", gpus,
                                         plan.target.id, shared_gpus, shared_gpus - gpus));
    }

    // Workloads whose pods share a GPU.
    struct Shared {
      std::vector<std::string> pods;
      double peak_mib = 0;  // the largest summed peak of a GPU one of them shares
    };
    std::map<WorkloadKey, Shared> shared_by;
    for (const GpuReplay& gpu : plan.replay.gpus) {
      if (gpu.pods.size() < 2) continue;
      for (std::size_t p : gpu.pods) {
        const auto w = WorkloadOf(plan.pod_names[p]);
        if (!w) continue;
        Shared& s = shared_by[w->first];
        s.pods.push_back(plan.pod_names[p]);
        s.peak_mib = std::max(s.peak_mib, gpu.peak_mib);
      }
    }
    for (const auto& [key, s] : shared_by) {
      Patch& patch = PatchOf(key);
      patch.yaml["spec"]["template"]["spec"]["nodeSelector"][kDevicePluginConfigLabel] = kTimeSlicingConfig;
      patch.what.push_back(
          fmt::format("runs on time-sliced GPUs ({}={})", kDevicePluginConfigLabel, kTimeSlicingConfig));
      SelectTargetModel(patch);
      patch.why.push_back(
          fmt::format("{} of its pods share a GPU in the plan ({}); the largest summed peak of "
                      "those GPUs is {:.0f} of {:.0f} MiB",
                      s.pods.size(), Join(s.pods), s.peak_mib, plan.capacity_mib));
    }
    out_.notes.push_back(
        "time-slicing: the scheduler, not gpufit, picks which pods share each GPU, and time-slicing isolates no "
        "memory; the replay checked the plan's groups only (`gpufit replay` re-checks them against new "
        "telemetry). Use --isolation mig where pods must not share memory");
  }

  Result<void> MigIsolation() {
    const Plan& plan = *in_.colocation;
    const MigPlan& mig = *plan.mig;
    const Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(plan.target.id);
    if (!gpu) return Internal("MIG plan for {}: {}", plan.target.id, gpu.error().message);
    const auto memory_of = [&](const std::string& profile) -> std::int64_t {
      const auto p = (*gpu)->Profile(profile);
      return p ? (*p)->memory.value : 0;
    };

    // mig-parted file: one config per node, or the plan's layouts by name without nodes.
    YAML::Node file;
    file["version"] = "v1";
    YAML::Node configs;
    const auto entry = [](const YAML::Node& devices, const std::map<std::string, int>* layout) {
      YAML::Node e;
      e["devices"] = devices;
      e["mig-enabled"] = layout != nullptr;
      if (layout != nullptr)
        for (const auto& [profile, count] : *layout) e["mig-devices"][profile] = count;
      return e;
    };
    const std::size_t gpus_needed = mig.gpu_plans.size();
    if (in_.nodes == nullptr) {
      for (const auto& [name, layout] : mig.configs) configs[name].push_back(entry(YAML::Node("all"), &layout));
      NoteOnce(fmt::format("no --nodes file: label each node of {} with {}=<one of the configs in {}> yourself",
                           plan.target.id, kMigConfigLabel, kMigPartedConfigMap));
    } else {
      std::size_t next = 0;
      for (const KubeNode* n : TargetNodes(kMigConfigLabel, "gpufit-")) {
        if (next >= gpus_needed) break;
        const std::string name = "gpufit-" + n->name;
        std::map<std::string, std::vector<int>> devices_by_layout;  // layout name -> GPU indices
        std::vector<int> spare;
        for (int i = 0; i < n->gpu_count; ++i) {
          if (next < gpus_needed)
            devices_by_layout[mig.gpu_plans[next++].config].push_back(i);
          else
            spare.push_back(i);
        }
        for (const auto& [layout, devices] : devices_by_layout) {
          YAML::Node list;
          for (int d : devices) list.push_back(d);
          configs[name].push_back(entry(list, &mig.configs.at(layout)));
        }
        if (!spare.empty()) {
          YAML::Node list;
          for (int d : spare) list.push_back(d);
          configs[name].push_back(entry(list, nullptr));
        }
        NodeLabel(*n, kMigConfigLabel, name,
                  fmt::format("its {} GPUs take the MIG layouts of the plan's GPUs (mig-parted config {})",
                              n->gpu_count, name));
      }
      if (next < gpus_needed)
        out_.notes.push_back(
            fmt::format("the cluster has too few schedulable {} GPUs for the {} MIG GPUs of the plan: "
                        "add {}",
                        plan.target.id, gpus_needed, gpus_needed - next));
    }
    file["mig-configs"] = configs;
    ConfigMap(kMigPartedConfigMap, "config.yaml", Emit(file),
              fmt::format("mig-parted configs for {} GPUs of {}", gpus_needed, plan.target.id),
              fmt::format("one MIG instance per pod: {} GPUs ({} proven optimal), {} pods whose memory exceeded "
                          "their instance in the replay",
                          mig.gpus, mig.optimal ? "CBC" : "not", plan.mig_pods_exceeding));
    ClusterPolicy("migManager", kMigPartedConfigMap, "all-disabled");

    // Workloads: the largest profile any replica needs.
    std::map<WorkloadKey, std::pair<std::string, const KubePod*>> profile_of;
    std::map<WorkloadKey, std::vector<std::string>> why;
    for (const MigAssignment& a : mig.assignments) {
      if (a.gpu < 0) {
        out_.notes.push_back(
            fmt::format("pod {}: no MIG profile of {} holds it; it keeps a whole GPU", a.workload, plan.target.id));
        continue;
      }
      const auto w = WorkloadOf(a.workload);
      if (!w) continue;
      auto& [profile, pod] = profile_of[w->first];
      if (profile.empty() || memory_of(a.profile) > memory_of(profile)) {
        profile = a.profile;
        pod = w->second;
      }
      why[w->first].push_back(fmt::format("pod {} needs {} ({} MiB)", a.workload, a.profile, memory_of(a.profile)));
    }
    for (const auto& [key, chosen] : profile_of) {
      const auto& [profile, pod] = chosen;
      const std::string resource = "nvidia.com/mig-" + profile;
      Patch& patch = PatchOf(key);
      YAML::Node containers;
      for (const KubeContainer& c : pod->containers) {
        const auto it = c.resources.devices.find(kGpuResource);
        if (it == c.resources.devices.end()) continue;
        if (it->second != 1) {
          out_.notes.push_back(
              fmt::format("{} {}/{}: container {} asks for {} GPUs; one MIG instance per pod is "
                          "planned, so it is left as it is",
                          key.kind, key.ns, key.name, c.name, it->second));
          continue;
        }
        YAML::Node container;
        container["name"] = c.name;
        for (const char* side : {"limits", "requests"}) {
          container["resources"][side][kGpuResource] = YAML::Node(YAML::NodeType::Null);
          container["resources"][side][resource] = 1;
        }
        containers.push_back(container);
      }
      if (containers.size() == 0) {
        out_.notes.push_back(fmt::format("{} {}/{}: no container asks for exactly one {}; add {}: 1 by hand", key.kind,
                                         key.ns, key.name, kGpuResource, resource));
        continue;
      }
      patch.yaml["spec"]["template"]["spec"]["containers"] = containers;
      patch.what.push_back(fmt::format("{} -> {}: 1", kGpuResource, resource));
      SelectTargetModel(patch);
      patch.why = why[key];
    }
    return {};
  }

  void Training() {
    const TrainingPlan& plan = *in_.training;
    for (const TrainingRecommendation& rec : plan.jobs) {
      const std::string& job = plan.workload.jobs[rec.job].name;
      std::set<WorkloadKey> found;
      const KubePod* example = nullptr;
      if (in_.pods != nullptr)
        for (const KubePod& p : *in_.pods)
          if (p.owner.name == job && ApiVersionOf(p.owner.kind) != nullptr) {
            found.insert({p.namespace_name, p.owner.kind, p.owner.name});
            example = &p;
          }
      if (found.size() != 1) {
        out_.notes.push_back(
            fmt::format("training job {}: {} workloads of that name in the --pods file; no patch "
                        "(the training section lists its labels)",
                        job, found.size()));
        continue;
      }
      Patch& patch = PatchOf(*found.begin());
      YAML::Node spec = patch.yaml["spec"]["template"]["spec"];
      for (const auto& [k, v] : rec.scheduling.node_selector) spec["nodeSelector"][k] = v;
      for (const Toleration& t : rec.scheduling.tolerations) {
        YAML::Node n;
        n["key"] = t.key;
        n["operator"] = t.op;
        if (!t.value.empty()) n["value"] = t.value;
        n["effect"] = t.effect;
        spec["tolerations"].push_back(n);
      }
      if (!rec.scheduling.required_affinity.empty()) {
        YAML::Node term;
        for (const NodeRequirement& r : rec.scheduling.required_affinity) {
          YAML::Node e;
          e["key"] = r.key;
          e["operator"] = r.op;
          for (const std::string& v : r.values) e["values"].push_back(v);
          term["matchExpressions"].push_back(e);
        }
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            .push_back(term);
      }
      for (const auto& [k, v] : rec.annotations) patch.yaml["spec"]["template"]["metadata"]["annotations"][k] = v;
      for (const KubeContainer& c : example->containers) {
        if (c.kind != KubeContainer::Kind::kApp) continue;
        YAML::Node container;
        container["name"] = c.name;
        for (const auto& [k, v] : rec.env) {
          YAML::Node e;
          e["name"] = k;
          e["value"] = v;
          container["env"].push_back(e);
        }
        spec["containers"].push_back(container);
      }
      patch.what.push_back(fmt::format("{} with its checkpoint interval", SpotChoiceName(rec.decision.choice)));
      patch.why.push_back(rec.decision.reason);
    }
  }

  const ManifestInputs& in_;
  Manifests out_;
  std::map<WorkloadKey, Patch> patches_;
};

}  // namespace

std::string NormalizedGpuProduct(const std::string& product) {
  std::string p;
  for (char c : product) p += c == ' ' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* prefix : {"NVIDIA-", "TESLA-"})
    if (p.rfind(prefix, 0) == 0) p.erase(0, std::string(prefix).size());
  if (const std::size_t at = p.find("-MIG-"); at != std::string::npos) p.resize(at);
  if (p.size() > 7 && p.compare(p.size() - 7, 7, "-SHARED") == 0) p.resize(p.size() - 7);
  return p;
}

Result<Manifests> BuildManifests(const ManifestInputs& in) { return Builder(in).Build(); }

std::string ManifestsReadme(const Manifests& m, const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string md =
      "# Manifests from gpufit plan\n\n"
      "One object per file. Review, then apply:\n\n"
      "- `workload-*.yaml`: strategic-merge patches of the pod template. Apply each with the command in the table "
      "(`kubectl patch ... --patch-file FILE`), or list them under `patches:` in the kustomization that owns the "
      "workload. A `null` value deletes that key (it removes `nvidia.com/gpu` where a MIG resource replaces it).\n"
      "- `node-*.yaml`: label patches; the GPU Operator reconfigures a node when its label changes "
      "(MIG: the node's GPUs must be idle; the MIG manager drains and may reboot).\n"
      "- `configmap-*.yaml`: full objects for `kubectl apply -f`.\n"
      "- `clusterpolicy-cluster-policy.yaml`: a merge patch of the GPU Operator's ClusterPolicy that points it at "
      "the ConfigMap.\n\n"
      "Order: ConfigMaps, ClusterPolicy, node labels, then workloads.\n\n"
      "| file | changes | why | apply |\n|---|---|---|---|\n";
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
    return out;
  };
  for (const ManifestFile& f : m.files) {
    std::string apply = f.apply;
    apply.replace(apply.find("FILE"), 4, f.name);
    md += fmt::format("| `{}` | {} | {} | `{}` |\n", f.name, cell(f.what), cell(f.why), apply);
  }
  for (const auto& [name, what] : extra)
    md += fmt::format("| `{}` | {} | see the plan | `kubectl apply -f {}` |\n", name, cell(what), name);
  if (!m.notes.empty()) {
    md += "\n## Notes\n\n";
    for (const std::string& n : m.notes) md += "- " + n + "\n";
  }
  return md;
}

}  // namespace gpufit

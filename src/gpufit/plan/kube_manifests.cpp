#include "gpufit/plan/kube_manifests.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/optimize/mig_planner.h"

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

// Numbers and booleans are built with Plain(); every other scalar value is a string and
// is written double-quoted, so a name such as "true", "0x10" or "123" stays a string.
constexpr const char* kPlainTag = "!gpufit-plain";

template <class T>
YAML::Node Plain(T v) {
  YAML::Node n(v);
  n.SetTag(kPlainTag);
  return n;
}

void Write(YAML::Emitter& out, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& kv : n) {
        out << YAML::Key << kv.first.Scalar() << YAML::Value;
        Write(out, kv.second);
      }
      out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : n) Write(out, item);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      if (n.Tag() == kPlainTag)
        out << n.Scalar();
      else
        out << YAML::DoubleQuoted << n.Scalar();
      break;
    default:
      out << YAML::Null;
  }
}

std::string Emit(const YAML::Node& n) {
  YAML::Emitter out;
  Write(out, n);
  return std::string(out.c_str()) + "\n";
}

// A Kubernetes object name (DNS-1123 subdomain: lower-case letters, digits, '-' and '.',
// starting and ending with a letter or digit, at most 253 characters).
bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// A label value: at most 63 characters; a longer name is cut and given a hash suffix.
std::string LabelValue(const std::string& v) {
  if (v.size() <= 63) return v;
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bit
  for (unsigned char c : v) h = (h ^ c) * 1099511628211ull;
  std::string cut = v.substr(0, 54);
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '.')) cut.pop_back();
  return fmt::format("{}-{:08x}", cut, static_cast<std::uint32_t>(h));
}

// The telemetry key "ns/pod" or "ns/pod[i]" -> the pods file's pod.
const KubePod* FindPod(const std::vector<KubePod>& pods, const std::string& telemetry_pod) {
  // "ns/pod[i]" (one GPU of several) and "ns/pod@k" (a later pod of the name) are that pod.
  const std::string_view key = PodKeyOf(telemetry_pod);
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
    if (in_.lending != nullptr) Lending();
    for (auto& [key, patch] : patches_) {
      if (patch.what.empty()) continue;
      const bool job = key.kind == "Job";
      out_.files.push_back({.name = fmt::format("workload-{}-{}-{}.yaml", key.ns, Lower(key.kind), key.name),
                            .yaml = Emit(patch.yaml),
                            .apply = job ? std::string("kustomize: list FILE under patches: of the Job's source")
                                         : fmt::format("kubectl patch {} {} -n {} --type strategic --patch-file FILE",
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
    if (telemetry_pod.find('[') != std::string::npos) {
      NoteOnce(
          fmt::format("pod {}: holds several GPUs, planned one by one; its workload is left as it is", pod->Key()));
      return std::nullopt;
    }
    if (pod->Devices(kGpuResource) > 1) {
      NoteOnce(
          fmt::format("pod {}: asks for {} GPUs; co-location plans pods of one GPU, so its workload is left as "
                      "it is",
                      pod->Key(), pod->Devices(kGpuResource)));
      return std::nullopt;
    }
    if (pod->owner.kind == "DaemonSet") {
      NoteOnce(fmt::format("DaemonSet {}/{}: runs one pod per node, so a node selector would shrink it; left as it is",
                           pod->namespace_name, pod->owner.name));
      return std::nullopt;
    }
    if (!ValidName(pod->owner.name) || !ValidName(pod->namespace_name)) {
      NoteOnce(fmt::format("pod {}: its owner {}/{} is not a valid Kubernetes name; no patch", pod->Key(),
                           pod->namespace_name, pod->owner.name));
      return std::nullopt;
    }
    if (pod->owner.kind == "Pod") {
      out_.notes.push_back(fmt::format("pod {}: no controller owns it; recreate it with the change", pod->Key()));
      return std::nullopt;
    }
    if (ApiVersionOf(pod->owner.kind) == nullptr) {
      out_.notes.push_back(
          fmt::format("pod {}: owned by {} {}, which has no pod template gpufit can patch; change "
                      "it where it is defined",
                      pod->Key(), pod->owner.kind, pod->owner.name));
      return std::nullopt;
    }
    if (pod->owner.kind == "ReplicaSet") {
      NoteOnce(
          fmt::format("ReplicaSet {}/{}: its pods carry no pod-template-hash label, so gpufit cannot tell its "
                      "Deployment; if a Deployment manages it, apply the patch to the Deployment instead",
                      pod->namespace_name, pod->owner.name));
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
  // Schedulable nodes of the target model, without a NoSchedule/NoExecute taint other than
  // nvidia.com/gpu (which GPU pods tolerate); for time-slicing, not in MIG mode.
  std::vector<const KubeNode*> TargetNodes(const std::string& label, const std::string& value_prefix,
                                           bool for_time_slicing) {
    std::vector<const KubeNode*> nodes;
    if (in_.nodes == nullptr) return nodes;
    const std::string target = NormalizedGpuProduct(in_.colocation->target.name);
    for (const KubeNode& n : *in_.nodes) {
      if (n.gpu_count <= 0 || NormalizedGpuProduct(n.gpu_product) != target) continue;
      if (n.unschedulable) {
        NoteOnce(fmt::format("node {}: not used, it is cordoned", n.name));
        continue;
      }
      if (!ValidName(n.name)) {
        NoteOnce(fmt::format("node '{}': not a valid Kubernetes name; not used", n.name));
        continue;
      }
      const auto taint = std::find_if(n.taints.begin(), n.taints.end(), [](const NodeTaint& t) {
        return t.key != kGpuResource && (t.effect == "NoSchedule" || t.effect == "NoExecute");
      });
      if (taint != n.taints.end()) {
        NoteOnce(fmt::format("node {}: not used, its taint {}:{} keeps the workloads off", n.name, taint->key,
                             taint->effect));
        continue;
      }
      const bool mig_mode =
          n.gpu_product.find("-MIG-") != std::string::npos || (!n.mig_config.empty() && n.mig_config != "all-disabled");
      if (for_time_slicing && mig_mode) {
        NoteOnce(fmt::format("node {}: not used for time-slicing, its GPUs are in MIG mode ({})", n.name,
                             n.mig_config.empty() ? n.gpu_product : n.mig_config));
        continue;
      }
      nodes.push_back(&n);
    }
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
    n["metadata"]["labels"][label] = LabelValue(value);
    out_.files.push_back({.name = fmt::format("node-{}.yaml", node.name),
                          .yaml = Emit(n),
                          .apply = fmt::format("kubectl patch node {} --type strategic --patch-file FILE", node.name),
                          .what = fmt::format("node {}: label {}={}", node.name, label, LabelValue(value)),
                          .why = why});
  }

  void ClusterPolicy(const char* section, const char* config_map, const std::string& default_config, bool mixed_mig) {
    YAML::Node n = Object("nvidia.com/v1", "ClusterPolicy", "cluster-policy", "");
    n["spec"][section]["config"]["name"] = config_map;
    if (!default_config.empty()) n["spec"][section]["config"]["default"] = default_config;
    std::string what = fmt::format("GPU Operator: spec.{}.config.name = {}", section, config_map);
    if (mixed_mig) {
      // Per-profile resources (nvidia.com/mig-<profile>) exist only under the mixed strategy.
      n["spec"]["mig"]["strategy"] = "mixed";
      what += ", spec.mig.strategy = mixed";
    }
    out_.files.push_back({.name = "clusterpolicy-cluster-policy.yaml",
                          .yaml = Emit(n),
                          .apply = "kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge --patch-file "
                                   "FILE",
                          .what = what,
                          .why = mixed_mig ? "makes the operator read gpufit's mig-parted configs and advertise one "
                                             "resource per MIG profile (mixed strategy)"
                                           : "makes the operator read gpufit's ConfigMap; nodes pick a config by "
                                             "label"});
  }

  // Values of `label` on the nodes that gpufit does not manage (`ours` and the stock
  // `also_ok` aside).
  std::set<std::string> ForeignConfigs(const char* label, const std::string& ours_prefix,
                                       const std::string& also_ok) const {
    std::set<std::string> out;
    if (in_.nodes == nullptr) return out;
    for (const KubeNode& n : *in_.nodes) {
      const auto it = n.labels.find(label);
      if (it != n.labels.end() && it->second.rfind(ours_prefix, 0) != 0 && it->second != also_ok)
        out.insert(it->second);
    }
    return out;
  }

  static std::string JoinSet(const std::set<std::string>& items) {
    return Join(std::vector<std::string>(items.begin(), items.end()));
  }

  static bool AsksForMig(const KubePod& pod) {
    for (const KubeContainer& c : pod.containers)
      for (const auto& [resource, count] : c.resources.devices)
        if (resource.rfind("nvidia.com/mig-", 0) == 0 && count > 0) return true;
    return false;
  }

  void ConfigMap(const std::string& name, const std::string& key, const std::string& data, const std::string& what,
                 const std::string& why) {
    YAML::Node n = Object("v1", "ConfigMap", name, kGpuOperatorNamespace);
    n["data"][key] = data;
    YAML::Emitter e;
    e << YAML::BeginMap;
    for (const char* k : {"apiVersion", "kind"}) {
      e << YAML::Key << k << YAML::Value;
      Write(e, n[k]);
    }
    e << YAML::Key << "metadata" << YAML::Value;
    Write(e, n["metadata"]);
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
    // Nodes for the shared GPUs.
    std::vector<const KubeNode*> chosen;
    if (in_.nodes == nullptr) {
      NoteOnce(fmt::format("no --nodes file: label {} nodes of {} with {}={} yourself", shared_gpus, plan.target.id,
                           kDevicePluginConfigLabel, kTimeSlicingConfig));
    } else {
      std::size_t gpus = 0;
      for (const KubeNode* n : TargetNodes(kDevicePluginConfigLabel, kTimeSlicingConfig, true)) {
        if (gpus >= shared_gpus) break;
        chosen.push_back(n);
        gpus += static_cast<std::size_t>(n->gpu_count);
      }
      if (chosen.empty()) {
        out_.notes.push_back(
            fmt::format("time-slicing: no schedulable {} node without MIG in --nodes for the {} "
                        "shared GPUs; nothing written for it",
                        plan.target.id, shared_gpus));
        return;
      }
      if (gpus < shared_gpus)
        out_.notes.push_back(fmt::format("the cluster has {} usable {} GPUs for the {} shared ones: add {}", gpus,
                                         plan.target.id, shared_gpus, shared_gpus - gpus));
    }

    YAML::Node config;
    config["version"] = "v1";
    config["flags"]["migStrategy"] = "none";
    YAML::Node resource;
    resource["name"] = kGpuResource;
    resource["replicas"] = Plain(replicas);
    config["sharing"]["timeSlicing"]["resources"].push_back(resource);
    ConfigMap(kDevicePluginConfigMap, kTimeSlicingConfig, Emit(config),
              fmt::format("NVIDIA device plugin config {}: each GPU advertised {} times as {}", kTimeSlicingConfig,
                          replicas, kGpuResource),
              fmt::format("{} GPUs are shared by up to {} pods each; the replay found {} memory overflows and a worst "
                          "collision share of {:.2f}%",
                          shared_gpus, replicas, plan.replay.memory_overflows, 100 * plan.replay.max_collision_share));
    // The ClusterPolicy names one ConfigMap: pointing it at gpufit's would orphan the configs
    // other nodes use.
    const std::set<std::string> foreign = ForeignConfigs(kDevicePluginConfigLabel, kTimeSlicingConfig, "");
    if (foreign.empty()) {
      ClusterPolicy("devicePlugin", kDevicePluginConfigMap, "", false);
    } else {
      out_.notes.push_back(fmt::format(
          "nodes already use device plugin configs ({}) from the ConfigMap the ClusterPolicy names: add the {} key of "
          "configmap-{}-{}.yaml to that ConfigMap instead (no ClusterPolicy patch is written)",
          JoinSet(foreign), kTimeSlicingConfig, kGpuOperatorNamespace, kDevicePluginConfigMap));
    }
    std::size_t gpus = 0;
    for (const KubeNode* n : chosen) {
      gpus += static_cast<std::size_t>(n->gpu_count);
      NodeLabel(
          *n, kDevicePluginConfigLabel, kTimeSlicingConfig,
          fmt::format("hosts shared {} GPUs ({} of {})", plan.target.id, std::min(gpus, shared_gpus), shared_gpus));
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
        if (AsksForMig(*w->second)) {
          NoteOnce(
              fmt::format("{} {}/{}: asks for a MIG resource, which time-sliced full GPUs do not advertise; left "
                          "as it is",
                          w->first.kind, w->first.ns, w->first.name));
          continue;
        }
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
      patch.why.push_back(fmt::format(
          "{} of its pods {} a GPU in the plan ({}); the largest summed peak of "
          "those GPUs is {:.0f} of {:.0f} MiB",
          s.pods.size(), s.pods.size() == 1 ? "shares" : "share", Join(s.pods), s.peak_mib, plan.capacity_mib));
    }
    out_.notes.push_back(
        "time-slicing: the scheduler, not gpufit, picks which pods share each GPU, and time-slicing isolates no "
        "memory; the replay checked the plan's groups only (`gpufit replay` re-checks them against new "
        "telemetry). Use --isolation mig where pods must not share memory");
  }

  Result<void> MigIsolation() {
    const Plan& plan = *in_.colocation;
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
      const auto w = in_.pods ? WorkloadOf(plan.pod_names[i]) : std::nullopt;
      if (!w) {
        if (in_.pods == nullptr)
          NoteOnce("no --pods file: workload patches need each pod's owner (kubectl get pods -A -o json)");
        owner[i] = Owned{.key = {}, .pod = nullptr, .need = need};
        continue;
      }
      owner[i] = Owned{.key = w->first, .pod = w->second, .need = need};
      std::int64_t& most = workload_need[w->first];
      most = std::max(most, need);
    }
    std::vector<MigWorkload> needs;
    std::map<WorkloadKey, const MigProfile*> profile_of;
    for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
      if (plan.keeps_current_gpu(i)) {
        out_.notes.push_back(fmt::format("pod {}: CPU-starved, it keeps its whole {} (no MIG instance)",
                                         plan.pod_names[i], plan.current.id));
        continue;
      }
      const bool mapped = owner[i]->pod != nullptr;
      const MiB need{mapped ? workload_need[owner[i]->key] : owner[i]->need};
      const MigProfile* p = SmallestProfile(**gpu, need);
      if (p == nullptr) {
        out_.notes.push_back(fmt::format("pod {}: no MIG profile of {} holds {} MiB; it keeps a whole GPU",
                                         plan.pod_names[i], plan.target.id, need.value));
        continue;
      }
      if (mapped) profile_of[owner[i]->key] = p;
      needs.push_back({.name = plan.pod_names[i], .memory_need = need, .compute_slices_need = 0, .profile = p->name});
    }
    if (needs.empty()) return {};
    Result<MigPlan> planned = PlanMigLayouts(**gpu, needs);
    if (!planned) return planned.error();
    const MigPlan& mig = *planned;
    if (mig.gpus != plan.mig->gpus)
      out_.notes.push_back(
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
    if (in_.nodes == nullptr) {
      for (const auto& [name, layout] : mig.configs) configs[name].push_back(entry(YAML::Node("all"), &layout));
      NoteOnce(fmt::format("no --nodes file: label each node of {} with {}=<one of the configs in {}> yourself",
                           plan.target.id, kMigConfigLabel, kMigPartedConfigMap));
    } else {
      std::size_t next = 0;
      std::vector<std::pair<const KubeNode*, std::string>> labelled;
      for (const KubeNode* n : TargetNodes(kMigConfigLabel, "gpufit-", false)) {
        if (next >= gpus_needed) break;
        const std::string name = LabelValue("gpufit-" + n->name);
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
        out_.notes.push_back(
            fmt::format("MIG: no schedulable {} node in --nodes; nothing written for it", plan.target.id));
        return {};
      }
      if (next < gpus_needed)
        out_.notes.push_back(
            fmt::format("the cluster has too few usable {} GPUs for the {} MIG GPUs of the plan: "
                        "add {}",
                        plan.target.id, gpus_needed, gpus_needed - next));
      for (const auto& [n, name] : labelled)
        NodeLabel(*n, kMigConfigLabel, name,
                  fmt::format("its {} GPUs take the MIG layouts of the plan's GPUs (mig-parted config {})",
                              n->gpu_count, name));
    }
    YAML::Node file;
    file["version"] = "v1";
    file["mig-configs"] = configs;
    ConfigMap(kMigPartedConfigMap, "config.yaml", Emit(file),
              fmt::format("mig-parted configs for {} GPUs of {}", gpus_needed, plan.target.id),
              fmt::format("one MIG instance per pod: {} GPUs ({} proven optimal), {} pods whose memory exceeded "
                          "their instance in the replay",
                          mig.gpus, mig.optimal ? "CBC" : "not", plan.mig_pods_exceeding));
    ClusterPolicy("migManager", kMigPartedConfigMap, "all-disabled", true);
    if (in_.nodes != nullptr) {
      std::set<std::string> single;
      for (const KubeNode& n : *in_.nodes)
        if (n.mig_strategy == "single") single.insert(n.name);
      if (!single.empty())
        out_.notes.push_back(fmt::format(
            "nodes {} run the single MIG strategy: under mixed (set by the ClusterPolicy patch) their MIG devices "
            "are advertised as nvidia.com/mig-<profile> instead of nvidia.com/gpu, so pods there must ask for the "
            "new names; review before applying",
            JoinSet(single)));
    }
    if (const std::set<std::string> foreign = ForeignConfigs(kMigConfigLabel, "gpufit-", "all-disabled");
        !foreign.empty())
      out_.notes.push_back(
          fmt::format("nodes are labelled with mig-parted configs ({}) that gpufit's ConfigMap does "
                      "not hold: add them to it, or relabel those nodes",
                      JoinSet(foreign)));

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
        out_.notes.push_back(
            gpu_containers.empty()
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
        out_.notes.push_back(
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
      Patch& patch = PatchOf(key);
      patch.yaml["spec"]["template"]["spec"][c.kind == KubeContainer::Kind::kApp ? "containers" : "initContainers"]
          .push_back(container);
      patch.what.push_back(fmt::format("container {}: {}: 1", c.name, resource));
      SelectTargetModel(patch);
      patch.why.push_back(
          fmt::format("{} replica(s) ({}) need up to {} MiB (peak x {:.2f}); {} holds {} MiB; the "
                      "mig-parted layout provides one per replica",
                      names.size(), Join(names), workload_need.at(key), 1 + plan.options.headroom, profile.name,
                      profile.memory.value));
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

  void Lending() {
    const TimeMultiplexPlan& t = *in_.lending;
    if (!t.has_window || t.lent_gpus <= 0) return;
    const std::string apply = "kubectl apply -f FILE";
    auto priority_class = [&](const char* name, int value, bool never_preempts, const std::string& what) {
      YAML::Node n = Object("scheduling.k8s.io/v1", "PriorityClass", name, "");
      n["value"] = Plain(value);
      n["globalDefault"] = Plain(false);
      if (never_preempts) n["preemptionPolicy"] = "Never";
      n["description"] = what;
      out_.files.push_back({.name = fmt::format("priorityclass-{}.yaml", name),
                            .yaml = Emit(n),
                            .apply = apply,
                            .what = what,
                            .why = t.evidence});
    };
    priority_class("gpufit-inference", 100000, false, "inference pods: they preempt GPUs lent at night");
    priority_class("gpufit-night-lending", -100, true,
                   "training on GPUs lent by inference at night: never preempts, goes first");

    YAML::Node flavor = Object("kueue.x-k8s.io/v1beta1", "ResourceFlavor", "gpufit-night", "");
    out_.files.push_back({.name = "kueue-resourceflavor-gpufit-night.yaml",
                          .yaml = Emit(flavor),
                          .apply = apply,
                          .what = "the lent GPUs' flavor (no node labels: add the fleet's nodes' labels)",
                          .why = t.evidence});

    YAML::Node queue = Object("kueue.x-k8s.io/v1beta1", "ClusterQueue", "gpufit-night", "");
    queue["metadata"]["annotations"]["gpufit.io/window-utc"] =
        fmt::format("{:02d}:00-{}", t.window_start_hour, ClockTime(t.lending_end_s()));
    queue["spec"]["namespaceSelector"] = YAML::Node(YAML::NodeType::Map);
    queue["spec"]["stopPolicy"] = "Hold";
    YAML::Node gpus;
    gpus["name"] = kGpuResource;
    gpus["nominalQuota"] = Plain(t.lent_gpus);
    YAML::Node flavor_quota;
    flavor_quota["name"] = "gpufit-night";
    flavor_quota["resources"].push_back(gpus);
    YAML::Node group;
    group["coveredResources"].push_back(kGpuResource);
    group["flavors"].push_back(flavor_quota);
    queue["spec"]["resourceGroups"].push_back(group);
    out_.files.push_back(
        {.name = "kueue-clusterqueue-gpufit-night.yaml",
         .yaml = Emit(queue),
         .apply = apply,
         .what = fmt::format(
             "{} GPUs lendable each night, times in UTC on the telemetry's clock: at {:02d}:00 `kubectl patch "
             "clusterqueue gpufit-night --type merge -p '{{\"spec\":{{\"stopPolicy\":\"None\"}}}}'`; at {} the same "
             "with \"HoldAndDrain\" (lent pods need terminationGracePeriodSeconds >= their checkpoint write); by {} "
             "the "
             "GPUs are back and inference scales up. Lent Jobs set the label `kueue.x-k8s.io/queue-name: gpufit-night` "
             "and `priorityClassName: gpufit-night-lending`; inference pods `priorityClassName: gpufit-inference`. "
             "Needs Kueue >= 0.6",
             t.lent_gpus, t.window_start_hour, ClockTime(t.drain_s()), ClockTime(t.lending_end_s())),
         .why = t.evidence});

    YAML::Node local = Object("kueue.x-k8s.io/v1beta1", "LocalQueue", "gpufit-night", "default");
    local["spec"]["clusterQueue"] = "gpufit-night";
    out_.files.push_back({.name = "kueue-localqueue-gpufit-night.yaml",
                          .yaml = Emit(local),
                          .apply = apply,
                          .what = "the queue lent Jobs name (namespace default: move it to the training namespace)",
                          .why = t.evidence});
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
      "workload. A null value (`~`) deletes that key (it removes `nvidia.com/gpu` where a MIG resource replaces it).\n"
      "- `node-*.yaml`: label patches; the GPU Operator reconfigures a node when its label changes "
      "(MIG: the node's GPUs must be idle; the MIG manager drains and may reboot).\n"
      "- `configmap-*.yaml`: full objects for `kubectl apply -f`.\n"
      "- `clusterpolicy-cluster-policy.yaml`: a merge patch of the GPU Operator's ClusterPolicy that points it at "
      "the ConfigMap.\n"
      "- `priorityclass-*.yaml`, `kueue-*.yaml`: full objects for night lending; the ClusterQueue's row says when to "
      "open and drain it.\n\n"
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

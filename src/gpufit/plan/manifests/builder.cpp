#include "gpufit/plan/manifests/builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "gpufit/plan/workload_keys.h"

namespace gpufit::manifests {

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

// A label value: at most 63 characters; a longer name is cut and given a hash suffix.
std::string LabelValue(const std::string& v) {
  if (v.size() <= 63) return v;
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bit
  for (unsigned char c : v) h = (h ^ c) * 1099511628211ull;
  std::string cut = v.substr(0, 54);
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '.')) cut.pop_back();
  return fmt::format("{}-{:08x}", cut, static_cast<std::uint32_t>(h));
}

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// The workload of a telemetry pod, or none (with a note).
std::optional<std::pair<WorkloadKey, const KubePod*>> Builder::WorkloadOf(const std::string& telemetry_pod) {
  const KubePod* pod = in_.pods != nullptr ? FindKubePod(*in_.pods, telemetry_pod) : nullptr;
  if (pod != nullptr && (telemetry_pod.find('[') != std::string::npos || pod->GpuDevices() > 1)) {
    NoteOnce(pod->GpuDevices() > 1
                 ? fmt::format("pod {}: asks for {} GPUs; co-location plans pods of one GPU, so it is kept whole",
                               pod->Key(), pod->GpuDevices())
                 : fmt::format("pod {}: holds several GPUs (one telemetry series each); co-location plans pods of one "
                               "GPU, so it is kept whole",
                               pod->Key()));
    return std::nullopt;
  }
  return OwnerOf(telemetry_pod);
}

std::optional<std::pair<WorkloadKey, const KubePod*>> Builder::OwnerOf(const std::string& telemetry_pod) {
  if (in_.pods == nullptr) {
    NoteOnce("no --pods file: workload patches need each pod's owner (kubectl get pods -A -o json)");
    return std::nullopt;
  }
  const KubePod* pod = FindKubePod(*in_.pods, telemetry_pod);
  if (pod == nullptr) {
    out_.notes.push_back(
        fmt::format("pod {}: not in the --pods file (or its name is ambiguous): no patch", telemetry_pod));
    return std::nullopt;
  }
  if (pod->owner.kind == "DaemonSet") {
    NoteOnce(fmt::format("DaemonSet {}/{}: runs one pod per node, so a node selector would shrink it; left as it is",
                         pod->namespace_name, pod->owner.name));
    return std::nullopt;
  }
  if (!IsDnsSubdomain(pod->owner.name) || !IsDnsSubdomain(pod->namespace_name)) {
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

Patch& Builder::PatchOf(const WorkloadKey& key) {
  auto [it, fresh] = patches_.try_emplace(key);
  if (fresh) it->second.yaml = Object(ApiVersionOf(key.kind), key.kind, key.name, key.ns);
  return it->second;
}

void Builder::NoteOnce(const std::string& note) {
  if (std::find(out_.notes.begin(), out_.notes.end(), note) == out_.notes.end()) out_.notes.push_back(note);
}

// Target-model nodes, from --nodes; those carrying `label`=`value` already first.
// Schedulable nodes of the target model, without a NoSchedule/NoExecute taint other than
// nvidia.com/gpu (which GPU pods tolerate); for time-slicing, not in MIG mode.
const NodeSharing& Builder::SystemOf(const KubeNode& node) {
  if (const auto it = systems_.find(node.name); it != systems_.end()) return it->second;
  if (!kai_pods_) kai_pods_ = in_.pods != nullptr ? KaiSharingPods(*in_.pods) : std::vector<KubePod>{};
  Result<NodeSharing> s = SharingOfNode(node, &*kai_pods_);
  if (!s) return systems_[node.name] = NodeSharing{.system = "unreadable", .evidence = s.error().message};
  return systems_[node.name] = std::move(*s);
}

std::vector<const KubeNode*> Builder::TargetNodes(const std::string& label, const std::string& value_prefix,
                                                  bool for_time_slicing) {
  std::vector<const KubeNode*> nodes;
  if (in_.nodes == nullptr) return nodes;
  const std::string target = NormalizedGpuProduct(in_.colocation->target.name);
  for (const KubeNode& n : *in_.nodes) {
    if (n.gpu_count <= 0 || NormalizedGpuProduct(n.gpu_product) != target) continue;
    if (const NodeSharing& system = SystemOf(n);
        system.system == "hami" || system.system == "dra" || system.system == "kai" || system.system == "unreadable") {
      NoteOnce(
          fmt::format("node {}: not used for {}: its GPUs are shared by {} ({}), which the NVIDIA device "
                      "plugin's config does not reach",
                      n.name, label, system.system, system.evidence));
      continue;
    }
    if (n.unschedulable) {
      NoteOnce(fmt::format("node {}: not used, it is cordoned", n.name));
      continue;
    }
    if (!IsDnsSubdomain(n.name)) {
      NoteOnce(fmt::format("node '{}': not a valid Kubernetes name; not used", n.name));
      continue;
    }
    const auto taint = std::find_if(n.taints.begin(), n.taints.end(), [](const NodeTaint& t) {
      return t.key != kGpuResource && (t.effect == "NoSchedule" || t.effect == "NoExecute");
    });
    if (taint != n.taints.end()) {
      NoteOnce(
          fmt::format("node {}: not used, its taint {}:{} keeps the workloads off", n.name, taint->key, taint->effect));
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
std::string Builder::TargetProduct() const {
  const std::string target = NormalizedGpuProduct(in_.colocation->target.name);
  if (in_.nodes != nullptr)
    for (const KubeNode& n : *in_.nodes)
      if (NormalizedGpuProduct(n.gpu_product) == target) return n.gpu_product;
  std::string p = in_.colocation->target.name;
  std::replace(p.begin(), p.end(), ' ', '-');
  return p;
}

void Builder::SelectTargetModel(Patch& patch) {
  const Plan& plan = *in_.colocation;
  if (plan.target.id == plan.current.id) return;
  patch.yaml["spec"]["template"]["spec"]["nodeSelector"][kGpuProductLabel] = TargetProduct();
  patch.what.push_back(fmt::format("runs on {} ({})", plan.target.id, kGpuProductLabel));
}

void Builder::NodeLabel(const KubeNode& node, const std::string& label, const std::string& value,
                        const std::string& why) {
  YAML::Node n = Object("v1", "Node", node.name, "");
  n["metadata"]["labels"][label] = LabelValue(value);
  out_.files.push_back({.name = fmt::format("node-{}.yaml", node.name),
                        .yaml = Emit(n),
                        .apply = fmt::format("kubectl patch node {} --type strategic --patch-file FILE", node.name),
                        .what = fmt::format("node {}: label {}={}", node.name, label, LabelValue(value)),
                        .why = why});
}

void Builder::ClusterPolicy(const char* section, const char* config_map, const std::string& default_config,
                            bool mixed_mig) {
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
std::set<std::string> Builder::ForeignConfigs(const char* label, const std::string& ours_prefix,
                                              const std::string& also_ok) const {
  std::set<std::string> out;
  if (in_.nodes == nullptr) return out;
  for (const KubeNode& n : *in_.nodes) {
    const auto it = n.labels.find(label);
    if (it != n.labels.end() && it->second.rfind(ours_prefix, 0) != 0 && it->second != also_ok) out.insert(it->second);
  }
  return out;
}

bool Builder::AsksForMig(const KubePod& pod) {
  for (const KubeContainer& c : pod.containers)
    for (const auto& [resource, count] : c.resources.devices)
      if (resource.rfind("nvidia.com/mig-", 0) == 0 && count > 0) return true;
  return false;
}

void Builder::RequireNode(Patch& patch, const std::string& key, const std::string& op,
                          const std::vector<std::string>& values) {
  YAML::Node terms = patch.yaml["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                               ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  if (terms.size() == 0) terms.push_back(YAML::Node(YAML::NodeType::Map));
  YAML::Node e;
  e["key"] = key;
  e["operator"] = op;
  for (const std::string& v : values) e["values"].push_back(v);
  terms[0]["matchExpressions"].push_back(e);
}

void Builder::ConfigMap(const std::string& name, const std::string& key, const std::string& data,
                        const std::string& what, const std::string& why) {
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
  e << YAML::Key << "data" << YAML::Value << YAML::BeginMap << YAML::Key << key << YAML::Value << YAML::Literal << data
    << YAML::EndMap << YAML::EndMap;
  out_.files.push_back({.name = fmt::format("configmap-{}-{}.yaml", kGpuOperatorNamespace, name),
                        .yaml = std::string(e.c_str()) + "\n",
                        .apply = "kubectl apply -f FILE",
                        .what = what,
                        .why = why});
}

namespace {

// `from`'s keys into `into`, maps merged key by key, anything else replaced.
void MergeInto(YAML::Node into, const YAML::Node& from) {
  for (const auto& kv : from) {
    const std::string key = kv.first.as<std::string>();
    if (kv.second.IsMap() && into[key] && into[key].IsMap())
      MergeInto(into[key], kv.second);
    else
      into[key] = kv.second;
  }
}

}  // namespace

void Builder::AddContainer(Patch& patch, const KubeContainer& c, const YAML::Node& container) {
  // One entry per container: emitters that both patch it (a sharing back end, the engine's
  // setting) add to the same entry, as the strategic merge would merge them by name.
  YAML::Node list =
      patch.yaml["spec"]["template"]["spec"][c.kind == KubeContainer::Kind::kApp ? "containers" : "initContainers"];
  for (YAML::Node entry : list)
    if (entry["name"] && entry["name"].as<std::string>() == c.name) {
      MergeInto(entry, container);
      return;
    }
  list.push_back(container);
}

const KubeContainer* Builder::GpuContainer(const KubePod& pod, const WorkloadKey& key) {
  std::vector<const KubeContainer*> found;
  for (const KubeContainer& c : pod.containers)
    for (const auto& [r, count] : c.resources.devices)
      if ((r == kGpuResource || r.rfind("nvidia.com/mig-", 0) == 0) && count > 0) {
        found.push_back(&c);
        break;
      }
  if (found.size() == 1) return found.front();
  Note(found.empty() ? fmt::format("{}: no container asks for a GPU; left as it is", key.Text())
                     : fmt::format("{}: {} containers ask for GPUs, one GPU share per pod was planned; left as it is",
                                   key.Text(), found.size()));
  return nullptr;
}

std::map<WorkloadKey, Builder::Shared> Builder::SharedWorkloads() {
  std::map<WorkloadKey, Shared> shared_by;
  for (const GpuReplay& gpu : plan().replay.gpus) {
    if (gpu.pods.size() < 2) continue;
    for (std::size_t p : gpu.pods) {
      const auto w = WorkloadOf(plan().pod_names[p]);
      if (!w) continue;
      if (AsksForMig(*w->second)) {
        NoteOnce(fmt::format("{}: asks for a MIG resource, which shared whole GPUs do not advertise; left as it is",
                             w->first.Text()));
        continue;
      }
      Shared& s = shared_by[w->first];
      s.pods.push_back(p);
      s.example = w->second;
      s.peak_mib = std::max(s.peak_mib, gpu.peak_mib);
    }
  }
  return shared_by;
}

Manifests Builder::Finish() {
  for (auto& [key, patch] : patches_) {
    if (patch.what.empty()) continue;
    const bool job = key.kind == "Job";
    out_.files.push_back({.name = fmt::format("workload-{}-{}-{}.yaml", key.ns, Lower(key.kind), key.name),
                          .yaml = Emit(patch.yaml),
                          .apply = job ? std::string("kustomize: list FILE under patches: of the Job's source")
                                       : fmt::format("kubectl patch {} {} -n {} --type strategic --patch-file FILE",
                                                     Lower(key.kind), key.name, key.ns),
                          .what = fmt::format("{}: {}", key.Text(), Join(patch.what, "; ")),
                          .why = Join(patch.why, "; ")});
    if (job)
      out_.notes.push_back(
          fmt::format("Job {}/{}: a Job's pod template cannot change after creation; apply "
                      "workload-{}-job-{}.yaml to its source manifest (kustomize patches) for the next run",
                      key.ns, key.name, key.ns, key.name));
  }
  std::sort(out_.files.begin(), out_.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.name < b.name; });
  return std::move(out_);
}

}  // namespace gpufit::manifests

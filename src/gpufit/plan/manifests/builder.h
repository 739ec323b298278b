// What every emitter of plan/kube_manifests.h shares: the inputs, the files and notes
// written so far, one strategic-merge patch per workload (emitters add to it), and the
// YAML and Kubernetes naming helpers. Internal to plan/manifests; the public entry is
// BuildManifests (plan/kube_manifests.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/ingest/kube/node_sharing.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit::manifests {

// A workload: the top-level owner of pods (model/kube_cluster.h).
struct WorkloadKey {
  std::string ns, kind, name;
  auto operator<=>(const WorkloadKey&) const = default;
  std::string Text() const { return kind + " " + ns + "/" + name; }
};

std::string Lower(std::string s);
std::string Join(const std::vector<std::string>& items, const char* sep = ", ");
// apps/v1 or batch/v1 for the kinds with a pod template gpufit patches; null otherwise.
const char* ApiVersionOf(const std::string& kind);
YAML::Node Object(const std::string& api_version, const std::string& kind, const std::string& name,
                  const std::string& ns);
// Numbers and booleans are built with Plain() and written plain; every other scalar is
// written double-quoted, so that a name such as "true", "0x10" or "123" stays a string.
inline constexpr const char* kPlainTag = "!gpufit-plain";
template <class T>
YAML::Node Plain(T v) {
  YAML::Node n(v);
  n.SetTag(kPlainTag);
  return n;
}
void Write(YAML::Emitter& out, const YAML::Node& n);
std::string Emit(const YAML::Node& n);
// A label value: at most 63 characters; a longer one is cut and given a hash suffix.
std::string LabelValue(const std::string& v);

// One workload patch being built, and why.
struct Patch {
  YAML::Node yaml;
  std::vector<std::string> what, why;
};

class Builder {
 public:
  explicit Builder(const ManifestInputs& in) : in_(in) {}

  const ManifestInputs& in() const { return in_; }
  const Plan& plan() const { return *in_.colocation; }
  Manifests& out() { return out_; }
  const std::map<WorkloadKey, Patch>& patches() const { return patches_; }

  void AddFile(ManifestFile f) { out_.files.push_back(std::move(f)); }
  void Note(const std::string& note) { out_.notes.push_back(note); }
  void NoteOnce(const std::string& note);

  // The workload of a telemetry pod of one GPU, or none (with a note saying why; a pod on
  // several GPUs is none: co-location plans pods of one GPU).
  std::optional<std::pair<WorkloadKey, const KubePod*>> WorkloadOf(const std::string& telemetry_pod);
  // The workload of any telemetry pod that gpufit can patch, or none (with a note).
  std::optional<std::pair<WorkloadKey, const KubePod*>> OwnerOf(const std::string& telemetry_pod);
  Patch& PatchOf(const WorkloadKey& key);

  // The sharing system of a --nodes node (ingest/kube/node_sharing.h); "unreadable" when its
  // HAMi annotation does not decode.
  const NodeSharing& SystemOf(const KubeNode& node);

  // Schedulable target-model nodes from --nodes, without a NoSchedule/NoExecute taint other
  // than nvidia.com/gpu, run by the NVIDIA device plugin (not HAMi, DRA or KAI, whose nodes
  // its config does not reach); for time-slicing not in MIG mode; those labelled `label`
  // with a value starting with `value_prefix` first.
  std::vector<const KubeNode*> TargetNodes(const std::string& label, const std::string& value_prefix,
                                           bool for_time_slicing);
  // The GFD product value of the target model: a node's own, else from the catalog name.
  std::string TargetProduct() const;
  // Adds nodeSelector nvidia.com/gpu.product when the target differs from the current model.
  void SelectTargetModel(Patch& patch);
  void NodeLabel(const KubeNode& node, const std::string& label, const std::string& value, const std::string& why);
  // A merge patch of the GPU Operator's ClusterPolicy naming `config_map` for `section`.
  void ClusterPolicy(const char* section, const char* config_map, const std::string& default_config, bool mixed_mig);
  void ConfigMap(const std::string& name, const std::string& key, const std::string& data, const std::string& what,
                 const std::string& why);
  // Values of `label` on the nodes that gpufit does not manage.
  std::set<std::string> ForeignConfigs(const char* label, const std::string& ours_prefix,
                                       const std::string& also_ok) const;
  static bool AsksForMig(const KubePod& pod);
  // Adds one matchExpressions entry to the pod template's required node affinity, in its
  // first nodeSelectorTerm (terms are ORed, expressions of one term ANDed: every emitter's
  // requirement must hold together).
  static void RequireNode(Patch& patch, const std::string& key, const std::string& op,
                          const std::vector<std::string>& values);
  // Adds `container` (a patch naming container c) under containers, or initContainers for an
  // init container or native sidecar.
  static void AddContainer(Patch& patch, const KubeContainer& c, const YAML::Node& container);
  // The one container of `pod` that asks for a GPU (whole or MIG), or null with a note.
  const KubeContainer* GpuContainer(const KubePod& pod, const WorkloadKey& key);

  // The workloads whose pods share a GPU in the plan, with those pods (indices into
  // Plan::pod_names) and the largest summed peak of a GPU they share. Pods that cannot be
  // patched are noted and left out.
  struct Shared {
    std::vector<std::size_t> pods;
    const KubePod* example = nullptr;
    double peak_mib = 0;
  };
  std::map<WorkloadKey, Shared> SharedWorkloads();

  // The files: the workload patches are added, then everything sorted by name.
  Manifests Finish();

 private:
  const ManifestInputs& in_;
  Manifests out_;
  std::map<WorkloadKey, Patch> patches_;
  std::map<std::string, NodeSharing> systems_;
  std::optional<std::vector<KubePod>> kai_pods_;  // KaiSharingPods of in().pods, once
};

}  // namespace gpufit::manifests

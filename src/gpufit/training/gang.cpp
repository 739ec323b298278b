#include "gpufit/training/gang.h"

#include <array>
#include <string_view>

namespace gpufit {
namespace {

struct Key {
  std::string_view name;
  bool annotation;
};

// In the order of the header.
constexpr std::array<Key, 6> kKeys = {{{"kueue.x-k8s.io/pod-group-name", false},
                                       {"scheduling.x-k8s.io/pod-group", false},
                                       {"scheduling.k8s.io/group-name", true},
                                       {"volcano.sh/job-name", false},
                                       {"jobset.sigs.k8s.io/jobset-name", false},
                                       {"training.kubeflow.org/job-name", false}}};

constexpr std::array<std::string_view, 10> kGangOwners = {"PyTorchJob",      "TFJob",  "MPIJob",   "XGBoostJob",
                                                          "PaddleJob",       "JAXJob", "TrainJob", "JobSet",
                                                          "LeaderWorkerSet", "Job"};

}  // namespace

std::optional<GangRef> GangOf(const std::string& namespace_name, const std::map<std::string, std::string>& labels,
                              const std::map<std::string, std::string>& annotations, const WorkloadRef& owner) {
  for (const Key& k : kKeys) {
    const auto& from = k.annotation ? annotations : labels;
    const auto it = from.find(std::string(k.name));
    if (it == from.end() || it->second.empty()) continue;
    return GangRef{.key = namespace_name + "/" + std::string(k.name) + "=" + it->second,
                   .name = it->second,
                   .how = (k.annotation ? "annotation " : "label ") + std::string(k.name) + "=" + it->second};
  }
  const auto label = [&](const char* key) {
    const auto it = labels.find(key);
    return it == labels.end() ? std::string() : it->second;
  };
  if (const std::string job = label("ray.io/originated-from-cr-name");
      !job.empty() && label("ray.io/originated-from-crd") == "RayJob") {
    return GangRef{.key = namespace_name + "/RayJob=" + job,
                   .name = job,
                   .how = "label ray.io/originated-from-cr-name=" + job + " (RayJob)"};
  }
  if (const std::string cluster = label("ray.io/cluster"); !cluster.empty()) {
    return GangRef{.key = namespace_name + "/ray.io/cluster=" + cluster,
                   .name = cluster,
                   .how = "label ray.io/cluster=" + cluster};
  }
  for (const std::string_view kind : kGangOwners) {
    if (owner.kind != kind || owner.name.empty()) continue;
    return GangRef{.key = namespace_name + "/" + owner.kind + "=" + owner.name,
                   .name = owner.name,
                   .how = "owner " + owner.kind + "/" + owner.name};
  }
  return std::nullopt;
}

}  // namespace gpufit

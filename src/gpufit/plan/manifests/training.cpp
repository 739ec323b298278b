// Training jobs (plan --training-jobs): per job found among the pods' owners, a patch with
// the job's node selector, tolerations, required node affinity, checkpoint annotations and
// environment (plan/training_plan.h).
#include <fmt/format.h>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/emitters.h"

namespace gpufit::manifests {

void EmitTraining(Builder& b) {
  const TrainingPlan& plan = *b.in().training;
  for (const TrainingRecommendation& rec : plan.jobs) {
    const std::string& job = plan.workload.jobs[rec.job].name;
    if (rec.job < plan.workload.origins.size() && plan.workload.origins[rec.job]) {
      // Found running in the cluster: a Job's pod template cannot change (Kubernetes
      // rejects it), so the labels go to its next submission, not into a patch.
      b.Note(
          fmt::format("training job {} (found running): apply its training-section labels and annotations to its "
                      "next submission; a running job's pod template cannot be patched",
                      job));
      continue;
    }
    std::set<WorkloadKey> found;
    const KubePod* example = nullptr;
    if (b.in().pods != nullptr)
      for (const KubePod& p : *b.in().pods)
        if (p.owner.name == job && ApiVersionOf(p.owner.kind) != nullptr) {
          found.insert({p.namespace_name, p.owner.kind, p.owner.name});
          example = &p;
        }
    if (found.size() != 1) {
      b.Note(
          fmt::format("training job {}: {} workloads of that name in the --pods file; no patch "
                      "(the training section lists its labels)",
                      job, found.size()));
      continue;
    }
    Patch& patch = b.PatchOf(*found.begin());
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
    for (const NodeRequirement& r : rec.scheduling.required_affinity)
      Builder::RequireNode(patch, r.key, r.op, r.values);
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

}  // namespace gpufit::manifests

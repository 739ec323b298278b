// The emit stage: the Kubernetes objects that apply the plan, with their README.
#include "gpufit/pipeline/internal/stages.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit::pipeline::internal {

Result<void> EmitStage::Run(PlanContext& c) const {
  if (!c.in.emit_manifests) return {};
  const TimeMultiplexPlan* lending =
      c.ancillary && c.ancillary->time_multiplex ? &*c.ancillary->time_multiplex : nullptr;
  const Result<Manifests> m = BuildManifests({.colocation = c.plan ? &*c.plan : nullptr,
                                              .training = c.training ? &*c.training : nullptr,
                                              .nodes = c.nodes(),
                                              .pods = c.pods(),
                                              .lending = lending,
                                              .sharing = c.in.sharing,
                                              .kai_queue = c.in.kai_queue,
                                              .compute_caps = c.in.compute_caps});
  if (!m) return m.error();
  for (const std::string& note : m->notes)
    if (note.find("nothing caps them") != std::string::npos || note.find("nothing written for it") != std::string::npos)
      c.Note("warning: " + note);
  std::vector<std::pair<std::string, std::string>>& files = c.document.manifest_files;
  std::vector<std::pair<std::string, std::string>> extra;
  for (const ManifestFile& file : m->files) files.emplace_back(file.name, file.yaml);
  for (const auto& [name, yaml] : c.inference_manifests) {
    files.emplace_back(name, yaml);
    extra.emplace_back(name, "inference autoscaler (see the inference section)");
  }
  files.emplace_back("README.md", ManifestsReadme(*m, extra));
  return {};
}

}  // namespace gpufit::pipeline::internal

// The inference stage: the services file's, and with a Prometheus server the services its
// serving metrics show; the demo's embedded services.
#include "gpufit/pipeline/inference_section.h"
#include "gpufit/pipeline/internal/stages.h"

namespace gpufit::pipeline::internal {

Result<void> InferenceStage::Run(PlanContext& c) const {
  Result<std::optional<InferenceSectionOutput>> i = std::optional<InferenceSectionOutput>();
  if (!c.in.demo_services.empty()) {
    Result<InferenceSectionOutput> d =
        InferenceSection({}, std::move(c.in.demo_services), {}, c.catalog, c.in.autoscaler);
    if (!d) return d.error();
    i = std::optional<InferenceSectionOutput>(std::move(*d));
  } else {
    i = PlanInferenceSection(c.in.inference, c.in.origin, c.in.serving, c.in.options.target_gpu, c.catalog,
                             c.in.autoscaler);
  }
  if (!i) return i.error();
  if (*i) {
    c.sections.emplace_back("inference", std::make_pair((*i)->json, (*i)->markdown));
    c.inference_manifests = std::move((*i)->manifests);
  }
  return {};
}

}  // namespace gpufit::pipeline::internal

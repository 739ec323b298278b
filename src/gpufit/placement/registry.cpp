#include "gpufit/placement/registry.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "gpufit/placement/fgd.h"
#include "gpufit/placement/filters.h"
#include "gpufit/placement/gpu_pickers.h"
#include "gpufit/placement/gpufit_policy.h"
#include "gpufit/placement/scores.h"

namespace gpufit {
namespace {

// State shared by the plugins of one policy (FGD's score and GPU picker share a cache).
struct Shared {
  const PolicyContext& context;
  std::shared_ptr<FgdModel> fgd;
  std::shared_ptr<GpufitModel> gpufit;
  std::shared_ptr<FgdModel> Fgd() {
    if (!fgd) fgd = std::make_shared<FgdModel>(context.target);
    return fgd;
  }
  std::shared_ptr<GpufitModel> Gpufit() {
    if (!gpufit) gpufit = std::make_shared<GpufitModel>(context.target, GpufitPolicyOptions{});
    return gpufit;
  }
};

using ScoreFactory = std::function<std::unique_ptr<ScorePlugin>(Shared&)>;
using PickerFactory = std::function<std::unique_ptr<GpuPicker>(Shared&)>;

const std::map<std::string_view, ScoreFactory>& ScoreRegistry() {
  static const std::map<std::string_view, ScoreFactory> r = {
      {"constant", [](Shared&) { return std::make_unique<ConstantScore>(); }},
      {"best-fit", [](Shared&) { return std::make_unique<BestFitScore>(); }},
      {"dot-product", [](Shared&) { return std::make_unique<DotProductScore>(); }},
      {"gpu-packing", [](Shared&) { return std::make_unique<GpuPackingScore>(); }},
      {"gpu-clustering", [](Shared&) { return std::make_unique<GpuClusteringScore>(); }},
      {"fgd", [](Shared& s) { return std::make_unique<FgdScore>(s.Fgd()); }},
      {"gpufit", [](Shared& s) { return std::make_unique<GpufitScore>(s.Gpufit()); }},
  };
  return r;
}

const std::map<std::string_view, PickerFactory>& PickerRegistry() {
  static const std::map<std::string_view, PickerFactory> r = {
      {"best-fit-gpu", [](Shared&) { return std::make_unique<BestFitGpu>(); }},
      {"random-gpu", [](Shared&) { return std::make_unique<RandomGpu>(); }},
      {"fgd-gpu", [](Shared& s) { return std::make_unique<FgdGpu>(s.Fgd()); }},
      {"gpufit-gpu", [](Shared& s) { return std::make_unique<GpufitGpu>(s.Gpufit()); }},
  };
  return r;
}

struct PolicySpec {
  std::string_view name;
  std::vector<std::pair<std::string_view, int>> scores;  // plugin name, weight
  std::string_view picker;
  TieBreak tie_break;
  bool needs_target;
};

const std::vector<PolicySpec>& PolicySpecs() {
  static const std::vector<PolicySpec> specs = {
      {"random", {{"constant", 1}}, "random-gpu", TieBreak::kRandom, false},
      {"first-fit", {{"constant", 1}}, "best-fit-gpu", TieBreak::kFirst, false},
      {"best-fit", {{"best-fit", 1000}}, "best-fit-gpu", TieBreak::kFirst, false},
      {"dot-product", {{"dot-product", 1000}}, "best-fit-gpu", TieBreak::kFirst, false},
      {"gpu-packing", {{"gpu-packing", 1000}}, "best-fit-gpu", TieBreak::kFirst, false},
      {"gpu-clustering", {{"gpu-clustering", 1000}}, "best-fit-gpu", TieBreak::kFirst, false},
      {"fgd", {{"fgd", 1000}}, "fgd-gpu", TieBreak::kFirst, true},
      {"gpufit", {{"gpufit", 1}}, "gpufit-gpu", TieBreak::kFirst, true},
  };
  return specs;
}

}  // namespace

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  for (const PolicySpec& s : PolicySpecs()) names.emplace_back(s.name);
  return names;
}

std::vector<std::unique_ptr<FilterPlugin>> StandardFilters() {
  std::vector<std::unique_ptr<FilterPlugin>> filters;
  filters.push_back(std::make_unique<GpuModelFits>());
  filters.push_back(std::make_unique<GpuFits>());
  filters.push_back(std::make_unique<CpuFits>());
  filters.push_back(std::make_unique<MemoryFits>());
  return filters;
}

Result<Policy> MakePolicy(std::string_view name, const PolicyContext& context) {
  const PolicySpec* spec = nullptr;
  for (const PolicySpec& s : PolicySpecs()) {
    if (s.name == name) spec = &s;
  }
  if (!spec) return NotFound("unknown policy '{}' (known: {})", name, fmt::join(PolicyNames(), ", "));
  if (spec->needs_target && (!context.target || context.target->empty()))
    return InvalidArgument("policy '{}' needs the target workload (typical pods) of the trace", name);
  Shared shared{context, nullptr, nullptr};
  std::vector<WeightedScore> scores;
  for (const auto& [plugin, weight] : spec->scores) scores.push_back({ScoreRegistry().at(plugin)(shared), weight});
  return Policy(std::string(spec->name), StandardFilters(), std::move(scores),
                PickerRegistry().at(spec->picker)(shared), spec->tie_break);
}

}  // namespace gpufit

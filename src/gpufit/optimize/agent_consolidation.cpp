#include "gpufit/optimize/agent_consolidation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpufit {

std::vector<AgentConsolidation> FindDuplicatedAgents(const std::vector<KubePod>& pods,
                                                     const std::function<NodeRates(const std::string&)>& rates) {
  std::map<std::pair<std::string, std::string>, AgentConsolidation> groups;  // (node, image repository)
  for (const KubePod& p : pods) {
    if (p.node_name.empty() || p.phase == "Succeeded" || p.phase == "Failed") continue;
    for (const KubeContainer& c : p.containers) {
      if (c.kind == KubeContainer::Kind::kInit) continue;
      const ContainerKind kind = ClassifyContainer(c.name, c.image, c.resources.HoldsGpu());
      if (!IsNodeAgent(kind)) continue;
      AgentConsolidation& g = groups[{p.node_name, ImageRepository(c.image)}];
      g.node = p.node_name;
      g.kind = kind;
      g.image_repository = ImageRepository(c.image);
      g.copies.push_back(p.Key() + "/" + c.name);
      const MilliCpu cpu = c.resources.cpu_request.value_or(MilliCpu{0});
      const MiB memory = c.resources.memory_request.value_or(MiB{0});
      g.cpu_requests += cpu;
      g.memory_requests += memory;
      g.cpu_kept = MilliCpu{std::max(g.cpu_kept.value, cpu.value)};
      g.memory_kept = MiB{std::max(g.memory_kept.value, memory.value)};
    }
  }
  std::vector<AgentConsolidation> out;
  for (auto& [key, g] : groups) {
    if (g.copies.size() < 2) continue;
    std::sort(g.copies.begin(), g.copies.end());
    g.rates = rates(g.node);
    const double cores = static_cast<double>((g.cpu_requests - g.cpu_kept).value) / 1000.0;
    const double gib = static_cast<double>((g.memory_requests - g.memory_kept).value) / 1024.0;
    g.usd_per_month_saving = (cores * g.rates.usd_per_core_hour + gib * g.rates.usd_per_gib_hour) * kHoursPerMonth;
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const AgentConsolidation& a, const AgentConsolidation& b) {
    if (a.usd_per_month_saving != b.usd_per_month_saving) return a.usd_per_month_saving > b.usd_per_month_saving;
    return std::tie(a.node, a.image_repository) < std::tie(b.node, b.image_repository);
  });
  return out;
}

}  // namespace gpufit

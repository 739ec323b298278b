#include "gpufit/placement/fragmentation.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

namespace gpufit {
namespace {

// A pod shape as the simulator keys it: GPU types as the trace spells them.
struct ShapeKey {
  std::int64_t cpu;
  std::int64_t milli;
  int count;
  std::string types;
  auto Tie() const { return std::tie(cpu, milli, count, types); }
  bool operator<(const ShapeKey& o) const { return Tie() < o.Tie(); }
};

std::string JoinTypes(const std::vector<std::string>& types) {
  std::string out;
  for (const std::string& t : types) {
    if (!out.empty()) out += '|';
    out += t;
  }
  return out;
}

}  // namespace

std::vector<TypicalPod> TypicalPods(const std::vector<PodSpec>& pods, const ClusterState& cluster,
                                    const TypicalPodsOptions& options) {
  std::map<ShapeKey, double> counts;
  std::map<ShapeKey, const PodSpec*> example;
  double total = 0;
  for (const PodSpec& p : pods) {
    if (!options.include_cpu_pods && p.gpu_count == 0) continue;
    const ShapeKey key{p.cpu.value == 0 ? 100 : p.cpu.value, p.gpu_per_gpu.value, p.gpu_count, JoinTypes(p.gpu_models)};
    double weight = 1;
    if (options.gpu_weight > 0 && p.gpu_per_gpu.value == 1000) weight = 1 + p.gpu_count * options.gpu_weight;
    counts[key] += weight;
    example.emplace(key, &p);
    total += weight;
  }
  std::vector<std::pair<ShapeKey, double>> order(counts.begin(), counts.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return b.first < a.first;
  });
  const double wanted = options.popularity * total;
  double kept = 0;
  std::size_t n = 0;
  while (n < order.size() && kept < wanted) kept += order[n++].second;

  std::vector<TypicalPod> out;
  for (std::size_t i = 0; i < n; ++i) {
    const Workload w = cluster.WorkloadFor(*example.at(order[i].first));
    out.push_back({.cpu = MilliCpu{order[i].first.cpu},
                   .gpu_count = w.gpu_count,
                   .gpu_per_gpu = w.gpu_per_gpu,
                   .any_model = w.any_model,
                   .model_mask = w.model_mask,
                   .share = order[i].second / kept});
  }
  return out;
}

NodeFree NodeFree::Of(const NodeState& node) {
  NodeFree f{.cpu = node.cpu_free(), .model = node.model, .gpu_count = node.gpu_count};
  f.gpu = node.gpu_free;
  return f;
}

NodeFree NodeFree::After(const Workload& w, GpuSet gpus) const {
  NodeFree f = *this;
  f.cpu = f.cpu - w.cpu;
  for (int g = 0; g < gpu_count; ++g) {
    if ((gpus >> g) & 1) f.gpu[static_cast<std::size_t>(g)] = f.gpu[static_cast<std::size_t>(g)] - w.gpu_per_gpu;
  }
  return f;
}

GpuMilli NodeFree::gpu_total() const {
  GpuMilli t;
  for (int g = 0; g < gpu_count; ++g) t += gpu[static_cast<std::size_t>(g)];
  return t;
}

double FragMilli(const NodeFree& node, std::span<const TypicalPod> target) {
  // Free milli-GPU per GPU, largest first: "GPUs with at least m free" is then a prefix.
  std::array<std::int64_t, kMaxGpusPerNode> free{};
  std::int64_t total = 0;
  for (int g = 0; g < node.gpu_count; ++g) {
    std::int64_t v = node.gpu[static_cast<std::size_t>(g)].value;
    total += v;
    int k = g;
    for (; k > 0 && free[static_cast<std::size_t>(k - 1)] < v; --k)
      free[static_cast<std::size_t>(k)] = free[static_cast<std::size_t>(k - 1)];
    free[static_cast<std::size_t>(k)] = v;
  }
  if (total == 0) return 0;
  double frag = 0;
  for (const TypicalPod& t : target) {
    double usable = 0;  // milli-GPU that t can use on this node
    if (t.gpu_per_gpu.value > 0 && node.cpu >= t.cpu &&
        (t.any_model || (node.model >= 0 && ((t.model_mask >> node.model) & 1)))) {
      int count = 0;
      std::int64_t sum = 0;
      while (count < node.gpu_count && free[static_cast<std::size_t>(count)] >= t.gpu_per_gpu.value)
        sum += free[static_cast<std::size_t>(count++)];
      if (count >= t.gpu_count) usable = static_cast<double>(sum);
    }
    frag += t.share * (static_cast<double>(total) - usable);
  }
  return frag;
}

}  // namespace gpufit

#include "gpufit/ingest/prometheus/opencost.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpufit/core/rfc3339.h"

namespace gpufit {
namespace {

std::string Label(const PromSeries& s, const char* name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string() : it->second;
}

// OpenCost's node: `node`, else `instance` (deprecated by OpenCost, the same name).
std::string NodeOf(const PromSeries& s) {
  std::string node = Label(s, "node");
  return node.empty() ? Label(s, "instance") : node;
}

struct Mean {
  double sum = 0;
  std::size_t n = 0;
  void Add(const PromSeries& s) {
    for (double v : s.value)
      if (std::isfinite(v) && v >= 0) sum += v, ++n;
  }
  std::optional<double> Get() const {
    return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
  }
};

RangeQuery Coarse(const std::string& query, const TelemetryRange& range) {
  const double step = ClusterStepFor(range);
  return {
      .query = query, .start_s = std::min(range.until_s, range.since_s + step), .end_s = range.until_s, .step_s = step};
}

std::string Window(const TelemetryRange& range) {
  return fmt::format("[{}ms]", static_cast<long long>(std::llround(ClusterStepFor(range) * 1000)) - 1);
}

}  // namespace

double ClusterStepFor(const TelemetryRange& range) {
  return std::max(range.step_s, std::ceil((range.until_s - range.since_s) / 720.0));
}

Result<void> CheckOpenCostSeries(const std::vector<PromSeries>& gpu, const std::vector<PromSeries>& cpu,
                                 const std::vector<PromSeries>& ram, const std::vector<PromSeries>& gpu_count) {
  struct Bound {
    const std::vector<PromSeries>* series;
    const char* metric;
    double max;
    const char* unit;
  };
  const Bound bounds[] = {{&gpu, "node_gpu_hourly_cost", kMaxUsdPerGpuHour, "USD per GPU-hour"},
                          {&cpu, "node_cpu_hourly_cost", kMaxUsdPerCoreHour, "USD per vCPU-hour"},
                          {&ram, "node_ram_hourly_cost", kMaxUsdPerGibHour, "USD per GiB-hour"},
                          {&gpu_count, "node_gpu_count", kMaxNodeGpus, "GPUs"}};
  for (const Bound& b : bounds)
    for (const PromSeries& s : *b.series)
      for (std::size_t i = 0; i < s.value.size(); ++i) {
        const double v = s.value[i];
        if (v >= 0 && v <= b.max) continue;  // false for NaN
        const std::string node = NodeOf(s);
        return InvalidArgument(
            "{} of node {} at {} is {:g}: expected a number from 0 to {:g} {} (prometheus_opencost.h: far above any "
            "list price; a broken exporter or a typo)",
            b.metric, node.empty() ? "(no node label)" : node, FormatRfc3339(s.time_s[i]), v, b.max, b.unit);
      }
  return {};
}

std::vector<NodePrice> NodePricesFromSeries(const std::vector<PromSeries>& gpu, const std::vector<PromSeries>& cpu,
                                            const std::vector<PromSeries>& ram,
                                            const std::vector<PromSeries>& gpu_count) {
  struct Acc {
    NodePrice price;
    Mean gpu, cpu, ram, count;
  };
  std::map<std::string, Acc> by_node;
  auto add = [&](const std::vector<PromSeries>& series, Mean Acc::*mean) {
    for (const PromSeries& s : series) {
      const std::string node = NodeOf(s);
      if (node.empty()) continue;
      Acc& a = by_node[node];
      a.price.node = node;
      if (a.price.instance_type.empty()) a.price.instance_type = Label(s, "instance_type");
      if (a.price.region.empty()) a.price.region = Label(s, "region");
      (a.*mean).Add(s);
    }
  };
  add(gpu, &Acc::gpu);
  add(cpu, &Acc::cpu);
  add(ram, &Acc::ram);
  add(gpu_count, &Acc::count);
  std::vector<NodePrice> out;
  for (auto& [node, a] : by_node) {
    a.price.usd_per_gpu_hour = a.gpu.Get();
    a.price.usd_per_core_hour = a.cpu.Get();
    a.price.usd_per_gib_hour = a.ram.Get();
    if (const auto c = a.count.Get()) a.price.gpus = static_cast<int>(std::lround(*c));
    a.price.samples = std::max({a.gpu.n, a.cpu.n, a.ram.n});
    out.push_back(std::move(a.price));
  }
  return out;
}

std::map<std::string, std::string> NodeGpuProductsFromSeries(const std::vector<PromSeries>& node_labels,
                                                             const std::vector<PromSeries>& dcgm_models) {
  std::map<std::string, std::string> out;
  for (const PromSeries& s : node_labels) {
    const std::string node = Label(s, "node"), product = Label(s, "label_nvidia_com_gpu_product");
    if (!node.empty() && !product.empty()) out.emplace(node, product);
  }
  for (const PromSeries& s : dcgm_models) {
    std::string host = Label(s, "Hostname");
    if (host.empty()) host = Label(s, "hostname");
    const std::string model = Label(s, "modelName");
    if (!host.empty() && !model.empty()) out.emplace(host, model);  // the label, when present, wins
  }
  return out;
}

Result<std::vector<NodePrice>> ReadOpenCostPrices(const PrometheusOptions& options, const TelemetryRange& range) {
  std::vector<std::vector<PromSeries>> answers;
  for (const char* metric :
       {"node_gpu_hourly_cost", "node_cpu_hourly_cost", "node_ram_hourly_cost", "node_gpu_count"}) {
    Result<std::vector<PromSeries>> a =
        QueryRange(options, Coarse(fmt::format("avg_over_time({}{})", metric, Window(range)), range));
    if (!a) return a.error();
    answers.push_back(std::move(*a));
  }
  if (Result<void> ok = CheckOpenCostSeries(answers[0], answers[1], answers[2], answers[3]); !ok) return ok.error();
  return NodePricesFromSeries(answers[0], answers[1], answers[2], answers[3]);
}

Result<std::map<std::string, std::string>> ReadNodeGpuProducts(const PrometheusOptions& options,
                                                               const TelemetryRange& range) {
  Result<std::vector<PromSeries>> labels = QueryRange(
      options,
      Coarse(fmt::format("max_over_time(kube_node_labels{{label_nvidia_com_gpu_product!=\"\"}}{})", Window(range)),
             range));
  if (!labels) return labels.error();
  Result<std::vector<PromSeries>> dcgm = QueryRange(
      options, Coarse(fmt::format("count by (Hostname, hostname, modelName) (max_over_time(DCGM_FI_DEV_FB_USED{}))",
                                  Window(range)),
                      range));
  if (!dcgm) return dcgm.error();
  return NodeGpuProductsFromSeries(*labels, *dcgm);
}

}  // namespace gpufit

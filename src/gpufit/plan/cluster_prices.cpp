#include "gpufit/plan/cluster_prices.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "gpufit/core/text.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit {
namespace {

using json = nlohmann::json;

std::string SourceOf(const ClusterPrices* prices, const std::string& gpu) {
  const GpuModelPrice* m = prices != nullptr ? prices->Find(gpu) : nullptr;
  if (m == nullptr) return "catalog";
  return fmt::format("opencost ({} nodes)", m->nodes.size());
}

std::string Words(const ClusterPrices* prices, const std::string& no_opencost_reason, const GpuModel& m) {
  const GpuModelPrice* p = prices != nullptr ? prices->Find(m.id) : nullptr;
  if (p != nullptr)
    return fmt::format(
        "{:.4g} USD/GPU-hour from OpenCost (node_gpu_hourly_cost, mean per GPU over {} nodes, {} GPUs; catalog "
        "list price {:.4g})",
        p->usd_per_gpu_hour, p->nodes.size(), p->gpus, p->catalog_usd_per_gpu_hour);
  if (prices == nullptr)
    return fmt::format("{:.4g} USD/GPU-hour, catalog list price ({})", m.on_demand_per_gpu_hour.value,
                       no_opencost_reason);
  std::vector<std::string> zero;  // nodes of this model whose price is 0
  for (const NodePrice& n : prices->nodes)
    if (const auto id = prices->node_gpu.find(n.node);
        id != prices->node_gpu.end() && id->second == m.id && n.usd_per_gpu_hour && *n.usd_per_gpu_hour == 0)
      zero.push_back(n.node);
  if (!zero.empty())
    return fmt::format(
        "{:.4g} USD/GPU-hour, catalog list price (node_gpu_hourly_cost is 0 on every {} node that publishes it: {}; "
        "OpenCost publishes 0 where it has no price, so 0 is not taken as the price)",
        m.on_demand_per_gpu_hour.value, m.id, fmt::join(zero, ", "));
  return fmt::format("{:.4g} USD/GPU-hour, catalog list price (no {} node publishes node_gpu_hourly_cost)",
                     m.on_demand_per_gpu_hour.value, m.id);
}

}  // namespace

ClusterPrices PriceFromCluster(const std::vector<NodePrice>& nodes, const std::map<std::string, std::string>& products,
                               const std::vector<KubeNode>* kube_nodes, const GpuCatalog& catalog) {
  ClusterPrices out;
  out.opencost = !nodes.empty();
  out.nodes = nodes;
  std::map<std::string, const KubeNode*> kube;
  if (kube_nodes != nullptr)
    for (const KubeNode& n : *kube_nodes) kube[n.name] = &n;
  std::map<std::string, std::string> by_product;  // normalized product -> catalog id
  for (const GpuModel& m : catalog.models()) by_product.emplace(NormalizedGpuProduct(m.name), m.id);
  struct Sum {
    double usd = 0;
    int gpus = 0;
    std::vector<std::string> nodes;
  };
  std::map<std::string, Sum> sums;
  for (const NodePrice& n : nodes) {
    std::string product;
    int kube_gpus = 0;
    if (const auto k = kube.find(n.node); k != kube.end())
      product = k->second->gpu_product, kube_gpus = k->second->gpu_count;
    if (product.empty())
      if (const auto p = products.find(n.node); p != products.end()) product = p->second;
    if (!product.empty())
      if (const auto id = by_product.find(NormalizedGpuProduct(product)); id != by_product.end())
        out.node_gpu[n.node] = id->second;
    if (!n.usd_per_gpu_hour) continue;
    if (!(*n.usd_per_gpu_hour > 0)) {
      if (const auto id = out.node_gpu.find(n.node); id != out.node_gpu.end())
        out.unpriced.push_back(
            fmt::format("{}: node_gpu_hourly_cost is 0 (OpenCost's value where it has no price): the catalog prices {}",
                        n.node, id->second));
      continue;
    }
    if (product.empty()) {
      out.unpriced.push_back(n.node +
                             ": GPU model unknown (no nvidia.com/gpu.product label, no dcgm-exporter modelName)");
      continue;
    }
    const auto id = out.node_gpu.find(n.node);
    if (id == out.node_gpu.end()) {
      out.unpriced.push_back(fmt::format("{}: GPU '{}' is not in the catalog", n.node, product));
      continue;
    }
    const int gpus = n.gpus && *n.gpus > 0 ? *n.gpus : kube_gpus > 0 ? kube_gpus : 1;
    Sum& s = sums[id->second];
    s.usd += *n.usd_per_gpu_hour * gpus;
    s.gpus += gpus;
    s.nodes.push_back(n.node);
  }
  for (auto& [id, s] : sums) {
    const Result<GpuModel> m = catalog.Find(id);
    out.models.push_back({.gpu = id,
                          .usd_per_gpu_hour = s.usd / s.gpus,
                          .catalog_usd_per_gpu_hour = m ? m->on_demand_per_gpu_hour.value : 0,
                          .nodes = std::move(s.nodes),
                          .gpus = s.gpus});
  }
  return out;
}

GpuCatalog ApplyClusterPrices(const GpuCatalog& catalog, const ClusterPrices& prices) {
  std::map<std::string, Usd> by_id;
  for (const GpuModelPrice& m : prices.models) by_id[m.gpu] = Usd{m.usd_per_gpu_hour};
  return catalog.WithOnDemandPrices(by_id);
}

std::string ClusterPricesToJson(const ClusterPrices* prices, const std::string& no_opencost_reason,
                                const GpuModel& current, const GpuModel& target) {
  json models = json::array(), nodes = json::array(), unpriced = json::array();
  if (prices != nullptr) {
    for (const GpuModelPrice& m : prices->models)
      models.push_back({{"gpu", m.gpu},
                        {"usd_per_gpu_hour", m.usd_per_gpu_hour},
                        {"catalog_usd_per_gpu_hour", m.catalog_usd_per_gpu_hour},
                        {"source", "opencost"},
                        {"metric", "node_gpu_hourly_cost"},
                        {"rule", "mean per GPU over the nodes: sum(price x GPUs) / sum(GPUs)"},
                        {"nodes", m.nodes},
                        {"gpus", m.gpus}});
    for (const NodePrice& n : prices->nodes) {
      const auto gpu = prices->node_gpu.find(n.node);
      const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
      nodes.push_back({{"node", n.node},
                       {"gpu", gpu == prices->node_gpu.end() ? json(nullptr) : json(gpu->second)},
                       {"instance_type", n.instance_type},
                       {"region", n.region},
                       {"gpus", n.gpus ? json(*n.gpus) : json(nullptr)},
                       {"usd_per_gpu_hour", opt(n.usd_per_gpu_hour)},
                       {"usd_per_core_hour", opt(n.usd_per_core_hour)},
                       {"usd_per_gib_hour", opt(n.usd_per_gib_hour)},
                       {"samples", n.samples}});
    }
    for (const std::string& u : prices->unpriced) unpriced.push_back(u);
  }
  const bool any = prices != nullptr && !prices->models.empty();
  auto model = [&](const GpuModel& m) {
    return json{{"gpu", m.id},
                {"usd_per_gpu_hour", m.on_demand_per_gpu_hour.value},
                {"source", SourceOf(prices, m.id)},
                {"basis", Words(prices, no_opencost_reason, m)}};
  };
  json j = {{"source", any ? "opencost" : "catalog"},
            {"basis", any ? "OpenCost's node_gpu_hourly_cost for the GPU models the cluster's nodes have; the "
                            "catalog's list price for the others"
                      : prices == nullptr ? "catalog list prices: " + no_opencost_reason
                                          : "catalog list prices: no node's node_gpu_hourly_cost matched a "
                                            "catalog GPU model"},
            {"current_gpu", model(current)},
            {"target_gpu", model(target)},
            {"gpu_models", models},
            {"nodes", nodes},
            {"unpriced_nodes", unpriced}};
  return j.dump(2) + "\n";
}

std::string ClusterPricesToMarkdown(const ClusterPrices* prices, const std::string& no_opencost_reason,
                                    const GpuModel& current, const GpuModel& target) {
  std::string s = "## Prices\n\n";
  s += fmt::format("- current GPU {}: {}\n", current.id, Words(prices, no_opencost_reason, current));
  if (target.id != current.id)
    s += fmt::format("- target GPU {}: {}\n", target.id, Words(prices, no_opencost_reason, target));
  if (prices != nullptr && !prices->nodes.empty()) {
    s += "\n| node | GPU | GPUs | USD/GPU-hour | USD/core-hour | USD/GiB-hour |\n|---|---|---:|---:|---:|---:|\n";
    const auto num = [](const std::optional<double>& v) { return v ? fmt::format("{:.4g}", *v) : std::string("-"); };
    for (const NodePrice& n : prices->nodes) {
      const auto gpu = prices->node_gpu.find(n.node);
      s += fmt::format("| {} | {} | {} | {} | {} | {} |\n", MarkdownText(n.node),
                       gpu == prices->node_gpu.end() ? "-" : MarkdownText(gpu->second),
                       n.gpus ? fmt::format("{}", *n.gpus) : "-", num(n.usd_per_gpu_hour), num(n.usd_per_core_hour),
                       num(n.usd_per_gib_hour));
    }
    s += "\nFrom OpenCost (node_gpu_hourly_cost per GPU, node_cpu_hourly_cost per vCPU, node_ram_hourly_cost per "
         "GiB; the window's mean).\n";
  }
  if (prices != nullptr)
    for (const std::string& u : prices->unpriced) s += fmt::format("- not priced from OpenCost: {}\n", u);
  return s;
}

}  // namespace gpufit

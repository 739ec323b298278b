#include "gpufit/plan/current_gpus.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpufit/plan/kube_manifests.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit {
namespace {

std::string Names(const std::vector<std::string>& pods) {
  std::string out;
  for (std::size_t i = 0; i < pods.size() && i < 5; ++i) out += (i == 0 ? "" : ", ") + pods[i];
  if (pods.size() > 5) out += fmt::format(" and {} more", pods.size() - 5);
  return out;
}

}  // namespace

std::string CatalogIdOfProduct(const GpuCatalog& catalog, const std::string& product) {
  if (product.empty()) return "";
  const std::string key = NormalizedGpuProduct(product);
  for (const GpuModel& m : catalog.models())
    if (NormalizedGpuProduct(m.name) == key) return m.id;
  return "";
}

CurrentGpus ResolveCurrentGpus(const CurrentGpuInputs& in) {
  CurrentGpus out;
  const std::string assumed = in.override_id.empty() ? in.fallback_id : in.override_id;
  const std::string assumed_source = in.override_id.empty() ? "assumed: --gpu" : "--current-gpu";
  std::map<std::string, const KubeNode*> node_by_name;
  if (in.nodes != nullptr)
    for (const KubeNode& n : *in.nodes) node_by_name[n.name] = &n;
  std::map<std::string, std::vector<std::string>> unknown;     // model name -> pods
  std::map<std::string, std::vector<std::string>> overridden;  // data's id -> pods
  for (const PodSeries& p : in.telemetry->pods) {
    std::string id, source, named = p.gpu_model;
    if (!named.empty()) source = "modelName";
    if (named.empty() && in.pods != nullptr) {
      if (const KubePod* k = FindKubePod(*in.pods, p.pod); k != nullptr && !k->node_name.empty()) {
        if (const auto n = node_by_name.find(k->node_name);
            n != node_by_name.end() && !n->second->gpu_product.empty()) {
          named = n->second->gpu_product;
          source = fmt::format("node {} label {}", k->node_name, kGpuProductLabel);
        }
      }
    }
    if (!named.empty()) {
      id = CatalogIdOfProduct(*in.catalog, named);
      if (id.empty()) unknown[named].push_back(p.pod);
    }
    if (id.empty()) {
      id = assumed;
      source = assumed_source;
    } else {
      ++out.named_by_data;
      if (!in.override_id.empty() && id != in.override_id) overridden[id].push_back(p.pod);
    }
    out.id_of[p.pod] = id;
    out.source_of[p.pod] = source;
  }
  for (const auto& [name, pods] : unknown)
    out.warnings.push_back(fmt::format("the catalog has no GPU named '{}' ({} pod{}: {}); priced as {} ({})", name,
                                       pods.size(), pods.size() == 1 ? "" : "s", Names(pods), assumed, assumed_source));
  for (const auto& [id, pods] : overridden)
    out.warnings.push_back(
        fmt::format("--current-gpu {} is contradicted by the data: {} pod{} run on {} ({}); their own model is used",
                    in.override_id, pods.size(), pods.size() == 1 ? "" : "s", id, Names(pods)));
  std::map<std::string, std::size_t> count;
  for (const auto& [pod, id] : out.id_of) ++count[id];
  std::size_t most = 0;
  for (const GpuModel& m : in.catalog->models())
    if (const auto c = count.find(m.id); c != count.end() && c->second > most) {
      most = c->second;
      out.most_common = m.id;
    }
  if (out.most_common.empty()) out.most_common = assumed;
  return out;
}

}  // namespace gpufit

#include "gpufit/catalog/gpu_catalog.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "gpufit/catalog/embedded_catalog.h"
#include "gpufit/core/input_file.h"

namespace gpufit {
namespace {

Result<double> NonNegative(const YAML::Node& gpu, const char* field, std::string_view source, std::string_view id) {
  const YAML::Node n = gpu[field];
  if (!n || n.IsNull()) return InvalidArgument("{}: gpu '{}': missing field {}", source, id, field);
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    return InvalidArgument("{}: gpu '{}': {} is not a number", source, id, field);
  }
  if (!(v >= 0)) return InvalidArgument("{}: gpu '{}': {} must be >= 0, got {}", source, id, field, v);
  if (!(v <= 1e12)) return InvalidArgument("{}: gpu '{}': {} must be finite and <= 1e12, got {}", source, id, field, v);
  return v;
}

}  // namespace

Result<GpuCatalog> GpuCatalog::Parse(std::string_view yaml_text, std::string_view source) {
  // yaml-cpp reports syntax errors and wrongly shaped documents (a list where a map is
  // expected, text where a number is) by exceptions; each becomes one error naming the line.
  try {
    return ParseDocument(YAML::Load(std::string(yaml_text)), source);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return InvalidArgument("{}: {}", source, e.msg);
    return InvalidArgument("{}: line {}: {}", source, e.mark.line + 1, e.msg);
  }
}

Result<GpuCatalog> GpuCatalog::ParseDocument(const YAML::Node& root, std::string_view source) {
  if (!root.IsMap()) return InvalidArgument("{}: expected a YAML map with a list 'gpus'", source);
  const YAML::Node gpus = root["gpus"];
  if (!gpus || !gpus.IsSequence()) return InvalidArgument("{}: missing list 'gpus'", source);
  const double reference = root["reference_bf16_tflops"] ? root["reference_bf16_tflops"].as<double>(0) : 0;
  GpuCatalog catalog;
  std::set<std::string> seen;
  for (const YAML::Node& g : gpus) {
    GpuModel m;
    if (!g["id"] || !g["id"].IsScalar()) return InvalidArgument("{}: a gpu entry has no id", source);
    m.id = g["id"].as<std::string>();
    if (!seen.insert(m.id).second) return InvalidArgument("{}: duplicate gpu id '{}'", source, m.id);
    m.name = g["name"] ? g["name"].as<std::string>() : m.id;
    const Result<double> mem = NonNegative(g, "memory_mib", source, m.id);
    if (!mem) return mem.error();
    if (*mem <= 0) return InvalidArgument("{}: gpu '{}': memory_mib must be > 0", source, m.id);
    const Result<double> od = NonNegative(g, "on_demand_usd_per_gpu_hour", source, m.id);
    if (!od) return od.error();
    const Result<double> spot = NonNegative(g, "spot_usd_per_gpu_hour", source, m.id);
    if (!spot) return spot.error();
    m.memory = MiB{static_cast<std::int64_t>(*mem)};
    m.on_demand_per_gpu_hour = Usd{*od};
    m.spot_per_gpu_hour = Usd{*spot};
    m.spot_estimated = g["spot_estimated"].as<bool>(true);
    m.mig = g["mig"].as<bool>(false);
    m.price_verified = g["price_verified"].as<bool>(true);
    const YAML::Node bf16 = g["dense_bf16_tflops"];
    if (bf16 && !bf16.IsNull()) {
      const Result<double> tflops = NonNegative(g, "dense_bf16_tflops", source, m.id);
      if (!tflops) return tflops.error();
      if (*tflops > 0) m.bf16_tflops = *tflops;
      if (reference > 0) m.relative_bf16 = *tflops / reference;
    }
    if (g["memory_bandwidth_gb_s"] && !g["memory_bandwidth_gb_s"].IsNull()) {
      const Result<double> bw = NonNegative(g, "memory_bandwidth_gb_s", source, m.id);
      if (!bw) return bw.error();
      if (*bw > 0) m.memory_bandwidth_gb_s = *bw;
    }
    catalog.models_.push_back(std::move(m));
  }
  catalog.SortModels();
  return catalog;
}

void GpuCatalog::SortModels() {
  std::sort(models_.begin(), models_.end(), [](const GpuModel& a, const GpuModel& b) {
    if (a.on_demand_per_gpu_hour != b.on_demand_per_gpu_hour)
      return a.on_demand_per_gpu_hour < b.on_demand_per_gpu_hour;
    if (a.memory != b.memory) return a.memory < b.memory;
    return a.id < b.id;
  });
}

GpuCatalog GpuCatalog::WithOnDemandPrices(const std::map<std::string, Usd>& by_id) const {
  GpuCatalog out = *this;
  for (GpuModel& m : out.models_)
    if (const auto it = by_id.find(m.id); it != by_id.end()) m.on_demand_per_gpu_hour = it->second;
  out.SortModels();
  return out;
}

const GpuCatalog& GpuCatalog::Embedded() {
  static const GpuCatalog catalog = [] {
    Result<GpuCatalog> c = Parse(kEmbeddedGpuCatalogYaml, "data/gpu_catalog.yaml (embedded)");
    assert(c.has_value() && "the embedded catalog is checked by catalog tests");
    return *std::move(c);
  }();
  return catalog;
}

Result<GpuCatalog> GpuCatalog::Load(const std::string& path) {
  if (Result<void> ok = CheckInputFile(path); !ok) return ok.error();
  std::ifstream in(path);
  if (!in) return NotFound("{}: cannot open the catalog file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

Result<GpuModel> GpuCatalog::Find(std::string_view id) const {
  for (const GpuModel& m : models_) {
    if (m.id == id) return m;
  }
  std::string known;
  for (const GpuModel& m : models_) known += (known.empty() ? "" : ", ") + m.id;
  return NotFound("unknown GPU model '{}' (known: {})", id, known);
}

}  // namespace gpufit

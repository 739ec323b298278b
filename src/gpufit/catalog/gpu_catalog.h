// The GPU catalog: the models gpufit can recommend, with memory, prices and throughput.
//
// The facts and their sources live in the project's data file `data/gpu_catalog.yaml`
// (embedded into the binary at build time, so gpufit needs no data file at run time).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"

namespace YAML {
class Node;
}
#include "gpufit/core/units.h"

namespace gpufit {

struct GpuModel {
  std::string id;    // lowercase catalog id, e.g. "h100-80gb"
  std::string name;  // marketing name, e.g. "NVIDIA H100 80GB HBM3"
  MiB memory;        // usable memory as nvidia-smi / DCGM_FI_DEV_FB_TOTAL report it
  Usd on_demand_per_gpu_hour;
  Usd spot_per_gpu_hour;
  bool spot_estimated = true;                   // spot price derived from a discount ratio, not listed
  std::optional<double> relative_bf16;          // dense BF16 throughput / H100 SXM's; nullopt = unknown
  std::optional<double> bf16_tflops;            // dense BF16 tensor TFLOPS (datasheet); nullopt = unknown
  std::optional<double> memory_bandwidth_gb_s;  // peak memory bandwidth, GB/s; nullopt = unknown
  bool mig = false;                             // supports NVIDIA MIG
  bool price_verified = true;
};

class GpuCatalog {
 public:
  // Parses a catalog in the format of data/gpu_catalog.yaml. `source` names the text in
  // errors. Errors (kInvalidArgument): YAML syntax, a document of the wrong shape, a
  // missing, non-numeric or negative field, a duplicate id.
  static Result<GpuCatalog> Parse(std::string_view yaml_text, std::string_view source);
  // The catalog embedded at build time from data/gpu_catalog.yaml.
  static const GpuCatalog& Embedded();
  // Loads a catalog file. kNotFound if it cannot be read.
  static Result<GpuCatalog> Load(const std::string& path);

  // kNotFound naming the id and listing the known ids.
  Result<GpuModel> Find(std::string_view id) const;
  // All models, ordered by on-demand price, then memory, then id.
  const std::vector<GpuModel>& models() const { return models_; }
  // A copy whose models named in `by_id` (catalog id -> USD per GPU-hour) cost that on
  // demand instead, e.g. what the cluster itself publishes (plan/cluster_prices.h); spot
  // prices and every other field stay the catalog's. Unknown ids are ignored.
  GpuCatalog WithOnDemandPrices(const std::map<std::string, Usd>& by_id) const;

 private:
  void SortModels();
  static Result<GpuCatalog> ParseDocument(const YAML::Node& root, std::string_view source);
  std::vector<GpuModel> models_;
};

}  // namespace gpufit

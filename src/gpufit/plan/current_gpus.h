// Each pod's current GPU: the model it runs on today, which prices the "before" of every
// plan and is what right-sizing shrinks from. A cluster may mix models (A100 and H100 pods),
// so it is found per pod, from the first source that names it:
//  1. its own telemetry: dcgm-exporter's `modelName` label of its device (PodSeries::gpu_model);
//  2. its node's `nvidia.com/gpu.product` label (GPU Feature Discovery), the node being its
//     `.spec.nodeName` in --pods, the label from --nodes;
//  3. --current-gpu, else --gpu: an assumption, reported as one.
// Names are matched to catalog models by NormalizedGpuProduct (plan/kube_manifests.h), which
// puts dcgm-exporter's "NVIDIA A100-SXM4-80GB" and GFD's "NVIDIA-A100-SXM4-80GB" on the same
// key as the catalog's name.
//
// --current-gpu is an override for data that names no model. Where the data names another
// model, the data wins and a warning names the pods (the premise is contradicted); a model
// the catalog does not know is warned about and the pod falls back to --current-gpu/--gpu.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct CurrentGpuInputs {
  const Telemetry* telemetry = nullptr;
  const GpuCatalog* catalog = nullptr;
  const std::vector<KubePod>* pods = nullptr;    // --pods, or null
  const std::vector<KubeNode>* nodes = nullptr;  // --nodes, or null
  std::string override_id{};                     // --current-gpu, or ""
  std::string fallback_id{};                     // --gpu: assumed where nothing else says
};

struct CurrentGpus {
  std::map<std::string, std::string> id_of;      // telemetry pod -> catalog id, for every pod
  std::map<std::string, std::string> source_of;  // telemetry pod -> "modelName", "node <name> label", ...
  // The model most pods run on (ties: the first id in catalog order): the plan's `current`.
  std::string most_common{};
  std::size_t named_by_data = 0;      // pods whose model came from modelName or a node label
  std::vector<std::string> warnings;  // contradicted premises and unknown models, one line each
};

// The catalog id of a GPU product or model name ("NVIDIA H100 80GB HBM3",
// "NVIDIA-H100-80GB-HBM3-SHARED"), or "" when no catalog model has that name.
std::string CatalogIdOfProduct(const GpuCatalog& catalog, const std::string& product);

CurrentGpus ResolveCurrentGpus(const CurrentGpuInputs& in);

}  // namespace gpufit

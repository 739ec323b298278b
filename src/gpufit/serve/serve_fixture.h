// Kubernetes objects for the extender's tests, as kubectl and kube-scheduler write them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/model/cluster.h"

namespace gpufit::serve::testing {

// A Node with `cpu` cores, `memory` (a quantity) and `gpus` nvidia.com/gpu of `product`.
inline nlohmann::json NodeJson(const std::string& name, int cpu, const std::string& memory, int gpus,
                               const std::string& product) {
  nlohmann::json resources{{"cpu", std::to_string(cpu)}, {"memory", memory}, {"pods", "110"}};
  if (gpus > 0) resources["nvidia.com/gpu"] = std::to_string(gpus);
  nlohmann::json labels{{"kubernetes.io/hostname", name}};
  if (!product.empty()) labels["nvidia.com/gpu.product"] = product;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

// A Pod asking `cpu` (a quantity), `memory` and `gpus` whole nvidia.com/gpu, bound to `node`
// (and Running) when it is not empty.
inline nlohmann::json PodJson(const std::string& name, const std::string& cpu, const std::string& memory, int gpus,
                              const std::string& node = "") {
  nlohmann::json resources{{"requests", {{"cpu", cpu}, {"memory", memory}}}};
  if (gpus > 0) resources["limits"] = {{"nvidia.com/gpu", std::to_string(gpus)}};
  nlohmann::json pod{{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}}},
                     {"spec", {{"containers", {{{"name", "main"}, {"image", "trainer:1"}, {"resources", resources}}}}}},
                     {"status", {{"phase", "Pending"}}}};
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
    pod["status"]["phase"] = "Running";
  }
  return pod;
}

// The Node kubectl would show for a trace node (sim's NodeSpec): allocatable CPU in
// millicores, memory in MiB, nvidia.com/gpu and the GPU type label.
inline nlohmann::json NodeJsonOf(const NodeSpec& n) {
  nlohmann::json resources{{"cpu", std::to_string(n.cpu.value) + "m"}, {"memory", std::to_string(n.memory.value) + "Mi"}};
  nlohmann::json labels = nlohmann::json::object();
  if (n.gpu_count > 0) {
    resources["nvidia.com/gpu"] = std::to_string(n.gpu_count);
    labels["nvidia.com/gpu.product"] = n.gpu_model;
  }
  return {{"kind", "Node"},
          {"metadata", {{"name", n.name}, {"labels", labels}}},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

// The Pod kube-scheduler would send for a trace pod (sim's PodSpec): CPU and memory requests,
// whole GPUs as nvidia.com/gpu, a share of one GPU as open-gpu-share's annotations, one GPU
// type as a node selector. Pending; bound (Running) to `node` when it is not empty.
inline nlohmann::json PodJsonOf(const PodSpec& p, const std::string& name, const std::string& node = "") {
  nlohmann::json resources{{"requests", {{"cpu", std::to_string(p.cpu.value) + "m"}, {"memory", std::to_string(p.memory.value) + "Mi"}}}};
  nlohmann::json annotations = nlohmann::json::object();
  if (p.gpu_count > 0 && !p.SharesGpu()) resources["limits"] = {{"nvidia.com/gpu", std::to_string(p.gpu_count)}};
  if (p.SharesGpu()) {
    annotations["alibabacloud.com/gpu-milli"] = std::to_string(p.gpu_per_gpu.value);
    annotations["alibabacloud.com/gpu-count"] = "1";
  }
  nlohmann::json spec{{"containers", {{{"name", "main"}, {"resources", resources}}}}};
  if (p.gpu_models.size() == 1) spec["nodeSelector"] = {{"nvidia.com/gpu.product", p.gpu_models[0]}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"metadata", {{"name", name}, {"namespace", "trace"}, {"uid", "uid-" + name}, {"annotations", annotations}}},
          {"spec", spec},
          {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
}

// (A vector, not a braced list: nlohmann reads `{x}` as x itself, not as a one-item array.)
inline nlohmann::json ListOf(const std::vector<nlohmann::json>& items, const std::string& kind) {
  return {{"apiVersion", "v1"}, {"kind", kind}, {"metadata", nlohmann::json::object()}, {"items", nlohmann::json(items)}};
}

}  // namespace gpufit::serve::testing

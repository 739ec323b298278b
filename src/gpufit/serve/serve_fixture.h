// Kubernetes objects for the extender's tests, as kubectl and kube-scheduler write them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// (A vector, not a braced list: nlohmann reads `{x}` as x itself, not as a one-item array.)
inline nlohmann::json ListOf(const std::vector<nlohmann::json>& items, const std::string& kind) {
  return {{"apiVersion", "v1"}, {"kind", kind}, {"metadata", nlohmann::json::object()}, {"items", nlohmann::json(items)}};
}

}  // namespace gpufit::serve::testing

#include "gpufit/ingest/kube/node_sharing.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

namespace gpufit {
namespace {

using Json = nlohmann::json;

Result<int> Int(const std::string& text, const std::string& where) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    return InvalidArgument("{}: '{}' is not a whole number >= 0", where, text);
  return v;
}

// What HAMi itself would never register: no share, no memory, a core share past 100%, a mode
// it does not have (hami-core, mig, mps: pkg/device/nvidia/device.go).
Result<void> Check(const HamiDevice& d, const std::string& where) {
  if (d.split_count < 1)
    return InvalidArgument("{}: count {}: a GPU is shared by at least 1 pod", where, d.split_count);
  if (d.memory.value < 1) return InvalidArgument("{}: devmem {}: a GPU has memory", where, d.memory.value);
  if (d.cores < 1 || d.cores > 100)
    return InvalidArgument("{}: devcore {}: not a percentage in 1..100", where, d.cores);
  if (d.mode != "hami-core" && d.mode != "mig" && d.mode != "mps")
    return InvalidArgument("{}: mode '{}': HAMi writes hami-core, mig or mps", where, d.mode);
  return {};
}

Result<HamiDevice> FromFields(const std::vector<std::string>& f, const std::string& where) {
  if (f.size() != 7 && f.size() != 9)
    return InvalidArgument(
        "{}: {} fields; HAMi writes 7 (up to v2.4) or 9 (v2.5-v2.7): id,count,devmem,devcore,"
        "type,numa,health[,index,mode]",
        where, f.size());
  HamiDevice d;
  d.uuid = f[0];
  if (d.uuid.empty()) return InvalidArgument("{}: id: empty", where);
  const Result<int> count = Int(f[1], where + ": count");
  const Result<int> mem = Int(f[2], where + ": devmem");
  const Result<int> cores = Int(f[3], where + ": devcore");
  for (const Result<int>* r : {&count, &mem, &cores})
    if (!*r) return r->error();
  d.split_count = *count;
  d.memory = MiB{*mem};
  d.cores = *cores;
  d.type = f[4];
  if (f[6] != "true" && f[6] != "false") return InvalidArgument("{}: health: '{}' is not true or false", where, f[6]);
  d.healthy = f[6] == "true";
  d.mode = f.size() == 9 ? f[8] : "hami-core";
  if (Result<void> ok = Check(d, where); !ok) return ok.error();
  return d;
}

Result<std::vector<HamiDevice>> FromJson(const std::string& value) {
  const Json doc = Json::parse(value, nullptr, false);
  if (doc.is_discarded() || !doc.is_array())
    return InvalidArgument("{}: starts with '[' but is not a JSON array (HAMi v2.8+ format)", kHamiRegisterAnnotation);
  if (doc.empty()) return InvalidArgument("{}: no GPU in '{}'", kHamiRegisterAnnotation, value);
  std::vector<HamiDevice> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const Json& d = doc[i];
    const std::string where = fmt::format("{}: [{}]", kHamiRegisterAnnotation, i);
    if (!d.is_object()) return InvalidArgument("{}: expected an object", where);
    HamiDevice h;
    const auto text = [&](const char* key) {
      return d.contains(key) && d[key].is_string() ? d[key].get<std::string>() : "";
    };
    const auto number = [&](const char* key) -> Result<int> {
      if (!d.contains(key)) return 0;  // omitempty: absent is 0
      if (!d[key].is_number_integer() || d[key].get<std::int64_t>() < 0 || d[key].get<std::int64_t>() > 1 << 30)
        return InvalidArgument("{}.{}: expected a whole number >= 0", where, key);
      return d[key].get<int>();
    };
    h.uuid = text("id");
    if (h.uuid.empty()) return InvalidArgument("{}.id: missing", where);
    const Result<int> count = number("count"), mem = number("devmem"), cores = number("devcore");
    for (const Result<int>* r : {&count, &mem, &cores})
      if (!*r) return r->error();
    h.split_count = *count;
    h.memory = MiB{*mem};
    h.cores = *cores;
    for (const char* key : {"id", "type", "mode"})
      if (d.contains(key) && !d[key].is_string()) return InvalidArgument("{}.{}: expected a string", where, key);
    if (d.contains("health") && !d["health"].is_boolean())
      return InvalidArgument("{}.health: expected true or false", where);
    h.type = text("type");
    h.healthy = d.contains("health") && d["health"].get<bool>();
    h.mode = text("mode").empty() ? "hami-core" : text("mode");
    if (Result<void> ok = Check(h, where); !ok) return ok.error();
    out.push_back(std::move(h));
  }
  return out;
}

bool HasGpu(const KubeNode& n) {
  for (const auto* list : {&n.devices_capacity, &n.devices_allocatable})
    for (const auto& [name, count] : *list)
      if (count > 0 &&
          (name == "nvidia.com/gpu" || name.starts_with("nvidia.com/mig-") || name == "nvidia.com/gpu.shared"))
        return true;
  return !n.gpu_product.empty();
}

}  // namespace

Result<std::vector<HamiDevice>> DecodeHamiRegister(const std::string& value) {
  const std::size_t start = value.find_first_not_of(" \t\n");
  if (start != std::string::npos && value[start] == '[') return FromJson(value.substr(start));
  std::vector<HamiDevice> out;
  std::size_t begin = 0;
  while (begin < value.size()) {
    const std::size_t end = std::min(value.find(':', begin), value.size());
    const std::string entry = value.substr(begin, end - begin);
    begin = end + 1;
    if (entry.empty()) continue;
    std::vector<std::string> fields;
    for (std::size_t b = 0;;) {
      const std::size_t e = entry.find(',', b);
      fields.push_back(entry.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    Result<HamiDevice> d = FromFields(fields, fmt::format("{}: GPU {}", kHamiRegisterAnnotation, out.size()));
    if (!d) return d.error();
    out.push_back(std::move(*d));
  }
  if (out.empty()) return InvalidArgument("{}: no GPU in '{}'", kHamiRegisterAnnotation, value);
  return out;
}

std::string HamiProduct(const std::string& type) {
  if (type.starts_with("NVIDIA-")) {
    const std::string rest = type.substr(7);
    if (rest.starts_with("NVIDIA") || type.find(' ') != std::string::npos) return rest;
  }
  return type;
}

Result<NodeSharing> SharingOfNode(const KubeNode& node, const std::vector<KubePod>* pods) {
  NodeSharing out;
  if (const auto it = node.annotations.find(kHamiRegisterAnnotation); it != node.annotations.end()) {
    Result<std::vector<HamiDevice>> devices = DecodeHamiRegister(it->second);
    if (!devices) return InvalidArgument("node {}: {}", node.name, devices.error().message);
    out.system = "hami";
    out.physical_gpus = static_cast<int>(devices->size());
    out.product = HamiProduct(devices->front().type);
    out.evidence = fmt::format("annotation {} ({} GPU{}, {})", kHamiRegisterAnnotation, devices->size(),
                               devices->size() == 1 ? "" : "s", out.product);
    return out;
  }
  if (node.dra_gpus > 0) {
    out.system = "dra";
    out.physical_gpus = node.dra_gpus;
    out.product = node.dra_product;
    out.evidence =
        fmt::format("{} gpu.nvidia.com device{} in ResourceSlices", node.dra_gpus, node.dra_gpus == 1 ? "" : "s");
    return out;
  }
  out.product = node.gpu_product;
  out.physical_gpus = node.gpu_count;
  if (pods != nullptr)
    for (const KubePod& p : *pods)
      if (p.node_name == node.name &&
          (p.annotations.contains("gpu-fraction") || p.annotations.contains("gpu-memory"))) {
        out.system = "kai";
        out.evidence = fmt::format("pod {} shares a GPU by KAI-Scheduler's annotation {}", p.Key(),
                                   p.annotations.contains("gpu-fraction") ? "gpu-fraction" : "gpu-memory");
        return out;
      }
  if (node.mig_strategy == "single" || node.mig_strategy == "mixed" ||
      (!node.mig_config.empty() && node.mig_config != "all-disabled")) {
    out.system = "mig";
    out.evidence = node.mig_strategy.empty() ? fmt::format("label nvidia.com/mig.config={}", node.mig_config)
                                             : fmt::format("label nvidia.com/mig.strategy={}", node.mig_strategy);
    return out;
  }
  if (node.sharing_strategy == "time-slicing" || node.sharing_strategy == "mps") {
    out.system = node.sharing_strategy;
    out.evidence = fmt::format("label nvidia.com/gpu.sharing-strategy={}", node.sharing_strategy);
    return out;
  }
  if (node.gpu_replicas > 1) {
    out.system = "time-slicing";
    out.evidence = fmt::format("label nvidia.com/gpu.replicas={}", node.gpu_replicas);
    return out;
  }
  if (HasGpu(node)) {
    out.system = "device-plugin";
    out.evidence = "NVIDIA device plugin (nvidia.com/gpu, no sharing label)";
  }
  return out;
}

Result<HamiLimits> HamiLimitsOf(const std::vector<KubeNode>& nodes, const std::string& product_key,
                                std::string (*normalize)(const std::string&)) {
  std::vector<HamiDevice> all, matching;
  for (const KubeNode& n : nodes) {
    const auto it = n.annotations.find(kHamiRegisterAnnotation);
    if (it == n.annotations.end()) continue;
    Result<std::vector<HamiDevice>> d = DecodeHamiRegister(it->second);
    if (!d) return InvalidArgument("node {}: {}", n.name, d.error().message);
    for (HamiDevice& g : *d) {
      if (normalize(HamiProduct(g.type)) == product_key) matching.push_back(g);
      all.push_back(std::move(g));
    }
  }
  const std::vector<HamiDevice>& use = matching.empty() ? all : matching;
  HamiLimits out;
  if (use.empty()) return out;
  out.memory_mib = use.front().memory.value;
  out.pods = use.front().split_count;
  for (const HamiDevice& g : use) {
    out.memory_mib = std::min(out.memory_mib, g.memory.value);
    out.pods = std::min(out.pods, g.split_count);
  }
  out.basis = fmt::format("{} HAMi GPU{}{}: devmem {} MiB, count {} (the smallest registered)", use.size(),
                          use.size() == 1 ? "" : "s", matching.empty() ? " (none of the target model)" : "",
                          out.memory_mib, out.pods);
  return out;
}

std::string BackendOfSystem(const std::string& system) {
  if (system == "hami") return "hami";
  if (system == "dra") return "dra-mps";
  if (system == "kai") return "kai";
  return system.empty() ? "" : "time-slicing";
}

std::vector<KubePod> KaiSharingPods(const std::vector<KubePod>& pods) {
  std::vector<KubePod> out;
  for (const KubePod& p : pods)
    if (!p.node_name.empty() && (p.annotations.contains("gpu-fraction") || p.annotations.contains("gpu-memory")))
      out.push_back(p);
  return out;
}

Result<SharingChoice> ChooseSharing(const std::vector<KubeNode>& nodes, const std::vector<KubePod>* all_pods) {
  static const char* const kOrder[] = {"hami", "dra-mps", "kai", "time-slicing"};
  const std::vector<KubePod> kai = all_pods != nullptr ? KaiSharingPods(*all_pods) : std::vector<KubePod>{};
  const std::vector<KubePod>* pods = &kai;
  std::map<std::string, std::pair<int, int>> by_backend;  // nodes, GPUs
  for (const KubeNode& n : nodes) {
    Result<NodeSharing> s = SharingOfNode(n, pods);
    if (!s) return s.error();
    if (s->system.empty()) continue;
    auto& [count, gpus] = by_backend[BackendOfSystem(s->system)];
    ++count;
    gpus += std::max(1, s->physical_gpus);
  }
  SharingChoice out{.backend = "time-slicing", .why = "no GPU node in the nodes file"};
  int most = -1;
  for (const char* b : kOrder) {
    const auto it = by_backend.find(b);
    if (it == by_backend.end()) continue;
    out.why = (most < 0 ? "" : out.why + "; ") + fmt::format("{}: {} node{}, {} GPU{}", b, it->second.first,
                                                             it->second.first == 1 ? "" : "s", it->second.second,
                                                             it->second.second == 1 ? "" : "s");
    if (it->second.second > most) {
      most = it->second.second;
      out.backend = b;
    }
  }
  return out;
}

}  // namespace gpufit

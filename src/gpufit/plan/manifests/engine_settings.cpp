// The engine's own setting for servers that pre-allocate GPU memory (plan/preallocated.h):
// vLLM's --gpu-memory-utilization, the share of the GPU's total memory it reserves at start
// (vLLM engine arguments; vllm/config/cache.py CacheConfig.gpu_memory_utilization). Written
// into the workload patch as the container's full `args` (a strategic merge patch replaces a
// list of strings whole), the flag's value replaced where it is already given, appended
// otherwise; in `command` instead when the flag is there.
//
// The share is of the memory the process sees as the GPU's total: under HAMi and MPS (dra-mps)
// that is the pod's cap (HAMi-core reports nvidia.com/gpumem as the device's memory; MPS its
// pinned device memory limit), elsewhere the target GPU's memory. need / that memory, rounded up
// to 0.01 (GpuMemoryUtilization).
#include <fmt/format.h>

#include <algorithm>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/emitters.h"

namespace gpufit::manifests {
namespace {

constexpr const char* kFlag = "--gpu-memory-utilization";

// `list` with the flag set to `value`; false when the flag is absent.
bool Replace(std::vector<std::string>& list, const std::string& value) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == kFlag && i + 1 < list.size()) {
      list[i + 1] = value;
      return true;
    }
    if (list[i].starts_with(std::string(kFlag) + "=")) {
      list[i] = std::string(kFlag) + "=" + value;
      return true;
    }
  }
  return false;
}

}  // namespace

void EmitEngineSettings(Builder& b, const std::string& backend) {
  const Plan& plan = b.plan();
  std::set<WorkloadKey> done;
  for (const PreallocatedServer& s : plan.preallocated.servers) {
    if (!s.sized) continue;
    const auto pod = std::find(plan.pod_names.begin(), plan.pod_names.end(), s.pod);
    if (pod == plan.pod_names.end()) continue;
    const auto p = static_cast<std::size_t>(pod - plan.pod_names.begin());
    const bool capped = (backend == "hami" || backend == "dra-mps") && p < plan.memory_cap_mib.size();
    const double memory = capped ? plan.memory_cap_mib[p] : static_cast<double>(plan.target.memory.value);
    const std::string value = fmt::format("{:.2f}", GpuMemoryUtilization(s.need_mib, memory));
    const auto w = b.OwnerOf(s.pod);
    if (!w) {
      b.Note(fmt::format("{}: set {}={} yourself (its workload cannot be patched)", s.pod, kFlag, value));
      continue;
    }
    if (!done.insert(w->first).second) continue;  // one pod template serves every replica
    const KubeContainer* c = b.GpuContainer(*w->second, w->first);
    if (c == nullptr) continue;
    std::vector<std::string> args = c->args, command = c->command;
    const char* field = "args";
    std::vector<std::string>* list = &args;
    if (!Replace(args, value)) {
      if (Replace(command, value)) {
        field = "command";
        list = &command;
      } else {
        args.push_back(std::string(kFlag) + "=" + value);
      }
    }
    Patch& patch = b.PatchOf(w->first);
    YAML::Node container;
    container["name"] = c->name;
    for (const std::string& a : *list) container[field].push_back(a);
    Builder::AddContainer(patch, *c, container);
    patch.what.push_back(fmt::format("container {}: {}={} ({} of {:.0f} MiB{})", c->name, kFlag, value, s.engine,
                                     memory, capped ? ", its cap" : ""));
    patch.why.push_back(
        fmt::format("{} reserves {:.0f} MiB whatever its load; its KV cache of {:.0f} MiB was {:.0f}% used at the tail "
                    "(peak {:.0f}%), so it needs {:.0f} MiB: {:.0f} MiB beside the cache and a cache of {:.0f} MiB",
                    s.pod, s.reserved_mib, s.kv_cache_mib.value_or(0), 100 * s.kv_usage_quantile, 100 * s.kv_usage_peak,
                    s.need_mib, s.reserved_mib - s.kv_cache_mib.value_or(0), s.new_kv_cache_mib));
  }
}

}  // namespace gpufit::manifests

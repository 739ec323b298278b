#include "gpufit/plan/preallocated.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "gpufit/analyze/profile.h"
#include "gpufit/inference/llm_service.h"

namespace gpufit {
namespace {

// The built-in architecture whose name the model_name holds ("meta-llama/Llama-3.1-8B-Instruct"
// -> llama-3.1-8b), or none.
std::optional<LlmArchitecture> ArchitectureOf(const std::string& model_name) {
  std::string lower;
  for (char c : model_name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t slash = lower.rfind('/');
  const std::string base = slash == std::string::npos ? lower : lower.substr(slash + 1);
  for (const char* id : {"llama-3.1-70b", "llama-3.1-8b", "llama-2-13b"})
    if (base.starts_with(id) && (base.size() == std::string(id).size() ||
                                 !std::isdigit(static_cast<unsigned char>(base[std::string(id).size()]))))
      return *FindLlmArchitecture(id);
  return std::nullopt;
}

}  // namespace

double GpuMemoryUtilization(double need_mib, double memory_mib) {
  return std::min(1.0, std::ceil(need_mib / memory_mib * 100 - 1e-9) / 100);
}

Preallocation SizePreallocatedServers(const Telemetry& telemetry, double quantile, double headroom,
                                      const std::function<double(const PodSeries&)>& gpu_memory_mib) {
  Preallocation out;
  for (const PodSeries& p : telemetry.pods) {
    if (p.running_samples() == 0 || p.fb_used_mib.empty()) continue;
    float lo = p.fb_used_mib[p.first], hi = lo;
    for (std::size_t t = p.first; t <= p.last; ++t) {
      lo = std::min(lo, p.fb_used_mib[t]);
      hi = std::max(hi, p.fb_used_mib[t]);
    }
    if (!p.kv_cache) {
      const double memory = gpu_memory_mib(p);
      if (memory > 0 && hi >= 0.8 * memory && hi - lo <= 0.02 * hi) out.flat_without_metrics.push_back(p.pod);
      continue;
    }
    PreallocatedServer s;
    s.pod = p.pod;
    s.engine = p.kv_cache->engine;
    s.model = p.kv_cache->model;
    s.reserved_mib = hi;
    s.need_mib = hi;
    const KvCacheConfig& c = *p.kv_cache;
    if (c.kv_cache_mib) {
      s.kv_cache_mib = *c.kv_cache_mib;
      s.kv_cache_source = "kv_cache_memory_bytes";
    } else if (const std::optional<LlmArchitecture> arch = ArchitectureOf(c.model);
               arch && c.num_gpu_blocks > 0 && c.block_size > 0) {
      LlmArchitecture a = *arch;
      if (c.cache_dtype.starts_with("fp8")) a.bytes_per_kv = 1;
      s.kv_cache_mib = c.num_gpu_blocks * c.block_size * a.KvBytesPerToken() / (1024.0 * 1024.0);
      s.kv_cache_source = fmt::format("num_gpu_blocks {:g} x block_size {:g} x {:g} KV bytes per token ({})",
                                      c.num_gpu_blocks, c.block_size, a.KvBytesPerToken(), a.name);
    }
    std::vector<float> used;
    for (std::size_t t = p.first; t <= p.last && t < p.kv_cache_usage.size(); ++t)
      if (!std::isnan(p.kv_cache_usage[t])) used.push_back(p.kv_cache_usage[t]);
    s.samples = used.size();
    if (!used.empty()) {
      s.kv_usage_peak = *std::max_element(used.begin(), used.end());
      std::vector<float> ranked = used;
      s.kv_usage_quantile = NearestRank(ranked, 100 * quantile);
    }
    if (!s.kv_cache_mib) {
      s.why = c.model.empty() || !ArchitectureOf(c.model)
                  ? fmt::format(
                        "the cache's size is unknown: no kv_cache_memory_bytes, and model '{}' is not one "
                        "whose KV bytes per token gpufit knows (llama-2-13b, llama-3.1-8b, llama-3.1-70b)",
                        c.model)
                  : "the cache's size is unknown: no vllm:cache_config_info with num_gpu_blocks and block_size";
    } else if (*s.kv_cache_mib >= s.reserved_mib) {
      s.why = fmt::format(
          "its cache ({:.0f} MiB) is not smaller than the memory it holds ({:.0f} MiB): the numbers "
          "contradict",
          *s.kv_cache_mib, s.reserved_mib);
    } else if (used.empty()) {
      s.why = "no cache usage sample inside its life";
    } else {
      const double k = *s.kv_cache_mib;
      s.new_kv_cache_mib = k * std::min(1.0, s.kv_usage_quantile * (1 + headroom));
      s.need_mib = std::ceil(s.reserved_mib - k + s.new_kv_cache_mib);
      s.sized = true;
      for (float u : used) s.samples_above += k * u > s.new_kv_cache_mib + 1e-9;
    }
    out.servers.push_back(std::move(s));
  }
  return out;
}

bool AnySized(const Preallocation& p) {
  return std::any_of(p.servers.begin(), p.servers.end(), [](const PreallocatedServer& s) { return s.sized; });
}

void ApplyPreallocation(const Preallocation& p, Telemetry& telemetry) {
  for (const PreallocatedServer& s : p.servers) {
    if (!s.sized) continue;
    for (PodSeries& q : telemetry.pods)
      if (q.pod == s.pod)
        for (std::size_t t = q.first; t <= q.last; ++t) q.fb_used_mib[t] = static_cast<float>(s.need_mib);
  }
}

}  // namespace gpufit

#include "gpufit/ingest/prometheus/kv_cache.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "gpufit/ingest/prometheus/telemetry.h"

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;

std::string LabelOf(const Labels& l, const char* name) {
  const auto it = l.find(name);
  return it == l.end() ? "" : it->second;
}

// A config label as a number; nullopt when absent or "None".
Result<std::optional<double>> Number(const Labels& l, const char* name, const std::string& pod) {
  const std::string v = LabelOf(l, name);
  if (v.empty() || v == "None") return std::optional<double>();
  double out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(out) || out < 0)
    return InvalidArgument("vllm:cache_config_info of pod {}: label {}='{}' is not a number >= 0", pod, name, v);
  return std::optional<double>(out);
}

}  // namespace

Result<std::size_t> AddVllmKvCacheSeries(const std::vector<PromSeries>& usage, const std::vector<PromSeries>& old_usage,
                                         const std::vector<PromSeries>& config, Telemetry& telemetry) {
  std::map<std::string, std::vector<PodSeries*>> by_key;  // "namespace/pod" -> its series (one per GPU)
  for (PodSeries& p : telemetry.pods) by_key[std::string(PodKeyOf(p.pod))].push_back(&p);
  std::map<std::string, const std::vector<PromSeries>*> source;  // pod -> the usage metric it has
  for (const PromSeries& s : usage) source.emplace(PodKeyFromLabels(s.labels), &usage);
  std::size_t found = 0;
  for (const std::vector<PromSeries>* answer : {&usage, &old_usage}) {
    for (const PromSeries& s : *answer) {
      const std::string key = PodKeyFromLabels(s.labels);
      const auto pods = by_key.find(key);
      if (pods == by_key.end()) continue;
      if (answer == &old_usage && source.count(key)) continue;  // the new name wins
      for (PodSeries* p : pods->second) {
        if (p->kv_cache_usage.empty()) {
          p->kv_cache_usage.assign(telemetry.samples, std::numeric_limits<float>::quiet_NaN());
          p->kv_cache = KvCacheConfig{};
          p->kv_cache->engine = "vllm";
          p->kv_cache->model = LabelOf(s.labels, "model_name");
          ++found;
        }
        for (std::size_t i = 0; i < s.time_s.size() && i < s.value.size(); ++i) {
          const double k = std::round((s.time_s[i] - telemetry.start_s) / telemetry.step_s);
          if (k < 0 || k >= static_cast<double>(telemetry.samples) || !std::isfinite(s.value[i])) continue;
          float& at = p->kv_cache_usage[static_cast<std::size_t>(k)];
          const auto v = static_cast<float>(std::clamp(s.value[i], 0.0, 1.0));
          if (std::isnan(at) || v > at) at = v;
        }
      }
    }
  }
  for (const PromSeries& s : config) {
    const std::string key = PodKeyFromLabels(s.labels);
    const auto pods = by_key.find(key);
    if (pods == by_key.end()) continue;
    const Result<std::optional<double>> util = Number(s.labels, "gpu_memory_utilization", key);
    const Result<std::optional<double>> blocks = Number(s.labels, "num_gpu_blocks", key);
    const Result<std::optional<double>> block_size = Number(s.labels, "block_size", key);
    const Result<std::optional<double>> bytes = Number(s.labels, "kv_cache_memory_bytes", key);
    for (const auto* r : {&util, &blocks, &block_size, &bytes})
      if (!*r) return r->error();
    for (PodSeries* p : pods->second) {
      if (!p->kv_cache) continue;  // a config without usage says nothing about use
      KvCacheConfig& c = *p->kv_cache;
      c.gpu_memory_utilization = util->value_or(0);
      c.num_gpu_blocks = blocks->value_or(0);
      c.block_size = block_size->value_or(0);
      c.cache_dtype = LabelOf(s.labels, "cache_dtype");
      if (*bytes) c.kv_cache_mib = **bytes / (1024.0 * 1024.0);
    }
  }
  return found;
}

Result<std::size_t> AddVllmKvCaches(const PrometheusOptions& options, Telemetry& telemetry) {
  if (telemetry.samples == 0) return std::size_t{0};
  const auto step_ms = static_cast<long long>(std::llround(telemetry.step_s * 1000));
  const std::string window = fmt::format("[{}ms]", step_ms - 1);
  const RangeQuery base{.query = "",
                        .start_s = telemetry.start_s,
                        .end_s = telemetry.start_s + static_cast<double>(telemetry.samples - 1) * telemetry.step_s,
                        .step_s = telemetry.step_s};
  std::vector<std::vector<PromSeries>> answers;
  for (const std::string& q : {"max_over_time(vllm:kv_cache_usage_perc" + window + ")",
                               "max_over_time(vllm:gpu_cache_usage_perc" + window + ")",
                               "last_over_time(vllm:cache_config_info" + window + ")"}) {
    RangeQuery rq = base;
    rq.query = q;
    Result<std::vector<PromSeries>> r = QueryRange(options, rq);
    if (!r) return r.error();
    answers.push_back(std::move(*r));
  }
  return AddVllmKvCacheSeries(answers[0], answers[1], answers[2], telemetry);
}

}  // namespace gpufit

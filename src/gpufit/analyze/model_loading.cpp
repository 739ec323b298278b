#include "gpufit/analyze/model_loading.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpufit/analyze/profile.h"
#include "gpufit/core/units.h"

namespace gpufit {

ModelLoadingReport AnalyzeModelLoading(const Telemetry& telemetry, const std::vector<ModelLoad>& loads,
                                       double usd_per_gpu_hour, const ModelLoadingOptions& options) {
  ModelLoadingReport r;
  r.cache_gb_per_s = options.cache_gb_per_s;
  std::map<std::string, std::vector<const ModelLoad*>> by_pod;
  for (const ModelLoad& l : loads) by_pod[l.pod].push_back(&l);
  std::map<std::string, const PodSeries*> series;
  for (const PodSeries& p : telemetry.pods) series[p.pod] = &p;

  std::vector<float> all_durations, pod_sizes;
  for (auto& [pod, list] : by_pod) {
    std::stable_sort(list.begin(), list.end(),
                     [](const ModelLoad* a, const ModelLoad* b) { return a->time_s < b->time_s; });
    const auto it = series.find(pod);
    if (it == series.end()) {  // counted apart; everything else is over the pods in the telemetry
      ++r.pods_not_in_telemetry;
      r.loads_not_in_telemetry += list.size();
      continue;
    }
    const PodSeries* s = it->second;
    PodModelLoading p;
    p.pod = pod;
    p.loads = list.size();
    std::vector<float> durations, rises;
    for (const ModelLoad* l : list) {
      durations.push_back(static_cast<float>(l->seconds));
      all_durations.push_back(static_cast<float>(l->seconds));
      p.loading_s += l->seconds;
      if (telemetry.step_s <= 0) continue;
      const double k = std::round((l->time_s - telemetry.start_s) / telemetry.step_s);
      if (k < 1 || k + 1 >= static_cast<double>(telemetry.samples)) continue;
      const auto at = static_cast<std::size_t>(k);
      if (at - 1 < s->first || at + 1 > s->last) continue;
      const double rise = static_cast<double>(s->fb_used_mib[at + 1]) - s->fb_used_mib[at - 1];
      if (rise >= options.min_step_mib) rises.push_back(static_cast<float>(rise));
    }
    p.first_s = list.front()->seconds;
    p.p50_s = NearestRank(durations, 50);
    p.p95_s = NearestRank(durations, 95);
    p.life_s = static_cast<double>(s->running_samples()) * telemetry.step_s;
    p.share = p.life_s > 0 ? p.loading_s / p.life_s : 0;
    if (!rises.empty()) {
      p.model_mib = NearestRank(rises, 50);
      p.size_estimated_from_pod = true;
      pod_sizes.push_back(static_cast<float>(p.model_mib));
    }
    r.pods.push_back(std::move(p));
  }
  r.loads = all_durations.size();
  r.cold_start_p50_s = NearestRank(all_durations, 50);
  r.cold_start_p95_s = NearestRank(all_durations, 95);
  if (options.model_gib) {
    r.model_mib = *options.model_gib * 1024;
    r.size_basis = fmt::format("given: {:g} GiB", *options.model_gib);
  } else if (!pod_sizes.empty()) {
    const std::size_t estimated = pod_sizes.size();
    r.model_mib = NearestRank(pod_sizes, 50);
    r.size_basis = fmt::format("estimated: median rise of {} across a load of >= {:g} MiB, on {} of {} pods{}",
                               kDcgmFbUsed, options.min_step_mib, estimated, r.pods.size(),
                               estimated < r.pods.size() ? " (the others take the median)" : "");
  } else {
    r.size_basis = "unknown: no load raised GPU memory; give the model size";
  }
  std::vector<float> throughput;
  for (PodModelLoading& p : r.pods) {
    if (options.model_gib || !p.size_estimated_from_pod) p.model_mib = r.model_mib;
    const double bytes = p.model_mib * static_cast<double>(kBytesPerMiB);
    p.cached_load_s = bytes / (options.cache_gb_per_s * 1e9);
    const auto& list = by_pod[p.pod];
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i]->seconds > 0 && bytes > 0) throughput.push_back(static_cast<float>(bytes / 1e9 / list[i]->seconds));
      if (i == 0) continue;
      ++r.repeat_loads;
      if (bytes > 0) p.saved_s += std::max(0.0, list[i]->seconds - p.cached_load_s);
    }
    if (p.life_s > 0) {
      r.loading_gpu_hours += p.loading_s / 3600;
      r.pod_gpu_hours += p.life_s / 3600;
      r.saved_gpu_hours += p.saved_s / 3600;
    }
  }
  r.observed_gb_per_s_p50 = NearestRank(throughput, 50);
  r.share = r.pod_gpu_hours > 0 ? r.loading_gpu_hours / r.pod_gpu_hours : 0;
  r.share_after = r.pod_gpu_hours > 0 ? (r.loading_gpu_hours - r.saved_gpu_hours) / r.pod_gpu_hours : 0;
  const double window_hours = telemetry.window_hours();
  r.saved_usd_per_month = window_hours > 0 ? r.saved_gpu_hours / window_hours * kHoursPerMonth * usd_per_gpu_hour : 0;
  return r;
}

}  // namespace gpufit

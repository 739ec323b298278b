#include "gpufit/report/report_series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace gpufit::report {
namespace {

using nlohmann::json;

double Hours(const Telemetry& t, std::size_t sample) { return static_cast<double>(sample) * t.step_s / 3600.0; }

// Rounded for the page: a tenth of a MiB, a thousandth of an hour, a tenth of a percent.
double Round(double v, double unit) { return std::round(v / unit) * unit; }

json Holdout(const Telemetry& t, const json& plan) {
  const json* splits = plan.contains("backtest") ? &plan["backtest"]["splits"] : nullptr;
  if (splits == nullptr || !splits->is_array() || splits->empty()) return nullptr;
  std::size_t begin = t.samples, end = 0;
  for (const json& s : *splits) {
    const json& test = s["test_samples"];
    if (!test.is_array() || test.size() != 2) continue;
    begin = std::min(begin, test[0].get<std::size_t>());
    end = std::max(end, test[1].get<std::size_t>());
  }
  if (begin >= end) return nullptr;
  return {{"begin_h", Round(Hours(t, begin), 1e-3)},
          {"end_h", Round(Hours(t, end), 1e-3)},
          {"label", splits->size() == 1
                        ? "backtest's hold-out: the backtest rebuilt the plan without it and replayed it there"
                        : "backtest's hold-out days: each replayed on a plan rebuilt from the days before it"}};
}

json GpuMemory(const Telemetry& t, const std::vector<const PodSeries*>& pods, std::size_t bucket) {
  json hours = json::array(), mib = json::array();
  std::vector<json> rows(pods.size(), json::array());
  double peak = 0;
  for (std::size_t b = 0; b < t.samples; b += bucket) {
    std::size_t best = b;
    double best_sum = -1;
    for (std::size_t k = b; k < std::min(t.samples, b + bucket); ++k) {
      double sum = 0;
      for (const PodSeries* p : pods) sum += p->fb_used_mib[k];
      if (sum > best_sum) best_sum = sum, best = k;
    }
    peak = std::max(peak, best_sum);
    hours.push_back(Round(Hours(t, b), 1e-3));
    for (std::size_t i = 0; i < pods.size(); ++i) rows[i].push_back(Round(pods[i]->fb_used_mib[best], 0.1));
  }
  for (json& r : rows) mib.push_back(std::move(r));
  json names = json::array();
  for (const PodSeries* p : pods) names.push_back(p->pod);
  return {{"pods", std::move(names)}, {"hours", std::move(hours)}, {"mib", std::move(mib)}, {"peak_mib", Round(peak, 0.1)}};
}

json DutyByHour(const Telemetry& t, std::size_t& omitted) {
  std::vector<std::pair<double, const PodSeries*>> by_hours;
  for (const PodSeries& p : t.pods) by_hours.emplace_back(static_cast<double>(p.running_samples()), &p);
  std::stable_sort(by_hours.begin(), by_hours.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  omitted = by_hours.size() > kMaxPods ? by_hours.size() - kMaxPods : 0;
  by_hours.resize(std::min(by_hours.size(), kMaxPods));
  json names = json::array(), pct = json::array();
  for (const auto& [h, p] : by_hours) {
    double sum[24] = {}, n[24] = {};
    for (std::size_t k = p->first; k <= p->last && k < t.samples; ++k) {
      const double clock = t.start_s + static_cast<double>(k) * t.step_s;
      const int hour = static_cast<int>(std::floor(std::fmod(std::fmod(clock, 86400.0) + 86400.0, 86400.0) / 3600.0));
      sum[hour % 24] += p->gpu_util_pct[k];
      n[hour % 24] += 1;
    }
    json row = json::array();
    for (int h24 = 0; h24 < 24; ++h24) row.push_back(n[h24] > 0 ? json(Round(sum[h24] / n[h24], 0.1)) : json(nullptr));
    names.push_back(p->pod);
    pct.push_back(std::move(row));
  }
  json hours = json::array();
  for (int h24 = 0; h24 < 24; ++h24) hours.push_back(h24);
  return {{"pods", std::move(names)}, {"hours", std::move(hours)}, {"pct", std::move(pct)}};
}

}  // namespace

std::string ReportSeriesJson(const Telemetry& telemetry, std::string_view plan_json) {
  const json plan = json::parse(plan_json, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) throw std::invalid_argument("report: the plan is not a JSON object");
  const std::size_t bucket = std::max<std::size_t>(1, (telemetry.samples + kMaxPoints - 1) / kMaxPoints);
  std::map<std::string, const PodSeries*, std::less<>> by_name;
  for (const PodSeries& p : telemetry.pods) by_name.emplace(p.pod, &p);

  struct Shared {
    json entry;
    double fill;
  };
  std::vector<Shared> shared;
  const json& groups = plan.contains("groups") ? plan["groups"] : json::array();
  const double capacity = plan.value("capacity_mib", 0.0);
  const double packing = plan.contains("memory_envelope") && plan["memory_envelope"].is_object()
                             ? plan["memory_envelope"].value("packing_capacity_mib", capacity)
                             : capacity;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::vector<const PodSeries*> pods;
    for (const json& name : groups[g].value("pods", json::array()))
      if (auto it = by_name.find(name.get<std::string>()); it != by_name.end()) pods.push_back(it->second);
    if (pods.size() < 2) continue;
    json entry = GpuMemory(telemetry, pods, bucket);
    entry["gpu"] = g;
    entry["capacity_mib"] = capacity;
    entry["packing_capacity_mib"] = packing;
    const double fill = capacity > 0 ? entry["peak_mib"].get<double>() / capacity : 0;
    shared.push_back({std::move(entry), fill});
  }
  std::stable_sort(shared.begin(), shared.end(), [](const Shared& a, const Shared& b) { return a.fill > b.fill; });
  json gpu_memory = json::array();
  for (std::size_t i = 0; i < std::min(shared.size(), kMaxGpus); ++i) gpu_memory.push_back(std::move(shared[i].entry));

  std::size_t duty_omitted = 0;
  json out = {{"step_s", telemetry.step_s},
              {"samples", telemetry.samples},
              {"start_s", telemetry.start_s},
              {"bucket_samples", bucket},
              {"holdout", Holdout(telemetry, plan)},
              {"gpu_memory", std::move(gpu_memory)},
              {"gpu_memory_omitted", shared.size() > kMaxGpus ? shared.size() - kMaxGpus : 0},
              {"duty_by_hour", DutyByHour(telemetry, duty_omitted)}};
  out["duty_pods_omitted"] = duty_omitted;
  return out.dump();
}

}  // namespace gpufit::report

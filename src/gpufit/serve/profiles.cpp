#include "gpufit/serve/profiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "gpufit/core/json_input.h"

namespace gpufit::serve {
namespace {

using nlohmann::json;

// A finite number >= 0 (and <= `max`) at `j[key]`, or an error naming `where`.key.
Result<double> Number(const json& j, const char* key, const std::string& where, double max = HUGE_VAL) {
  const auto it = j.find(key);
  if (it == j.end()) return InvalidArgument("{}.{}: missing", where, key);
  if (!it->is_number()) return InvalidArgument("{}.{}: expected a number, got {}", where, key, it->type_name());
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > max)
    return InvalidArgument("{}.{}: expected a number in 0..{}, got {}", where, key, max, v);
  return v;
}

}  // namespace

ProfileBook::ProfileBook(std::vector<ServeProfile> profiles, double margin_mib, double reserve_mib,
                         std::vector<OutsideMemory> outside)
    : margin_mib_(margin_mib), reserve_mib_(reserve_mib), outside_(std::move(outside)) {
  for (ServeProfile& p : profiles) profiles_.emplace(p.workload, std::move(p));
}

Result<ProfileBook> ProfileBook::FromPlanJson(const std::string& path) {
  const Result<json> doc = ReadJsonFile(path);
  if (!doc) return doc.error();
  if (!doc->is_object()) return InvalidArgument("{}: expected a plan.json object", path);
  const auto section = doc->find("workload_profiles");
  if (section == doc->end() || !section->is_object())
    return InvalidArgument(
        "{}: workload_profiles: missing (a plan.json from `gpufit plan` with --telemetry or "
        "--prometheus has it)",
        path);
  const Result<double> margin = Number(*section, "margin_mib", path + ": workload_profiles");
  if (!margin) return margin.error();
  const auto options = doc->find("options");
  if (options == doc->end() || !options->is_object()) return InvalidArgument("{}: options: missing", path);
  const Result<double> reserve = Number(*options, "reserve_mib", path + ": options");
  if (!reserve) return reserve.error();
  const auto list = section->find("workloads");
  if (list == section->end() || !list->is_array())
    return InvalidArgument("{}: workload_profiles.workloads: expected an array", path);
  std::vector<ServeProfile> profiles;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& w = (*list)[i];
    const std::string where = fmt::format("{}: workload_profiles.workloads[{}]", path, i);
    if (!w.is_object()) return InvalidArgument("{}: expected an object", where);
    const auto name = w.find("workload");
    if (name == w.end() || !name->is_string() || name->get<std::string>().empty())
      return InvalidArgument("{}.workload: expected a workload key (e.g. deployment/ml/web)", where);
    ServeProfile p{.workload = name->get<std::string>()};
    if (const auto [it, fresh] = seen.emplace(p.workload, i); !fresh)
      return InvalidArgument("{}.workload: '{}' is also workloads[{}]", where, p.workload, it->second);
    const Result<double> peak = Number(w, "memory_peak_mib", where);
    if (!peak) return peak.error();
    const Result<double> duty = Number(w, "duty_pct", where, 100);
    if (!duty) return duty.error();
    p.memory_peak_mib = *peak;
    const auto hours = w.find("duty_pct_by_hour");
    if (hours == w.end() || !hours->is_array() || hours->size() != 24)
      return InvalidArgument("{}.duty_pct_by_hour: expected 24 entries (hours 0..23), got {}", where,
                             hours == w.end() ? std::string("none") : hours->dump());
    for (std::size_t h = 0; h < 24; ++h) {
      const json& v = (*hours)[h];
      if (v.is_null()) {
        p.duty_pct[h] = *duty;  // not observed: the workload's overall figure
        --p.observed_hours;
        continue;
      }
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 100)
        return InvalidArgument("{}.duty_pct_by_hour[{}]: expected a percent in 0..100 or null, got {}", where, h,
                               v.dump());
      p.duty_pct[h] = v.get<double>();
    }
    profiles.push_back(std::move(p));
  }
  std::vector<OutsideMemory> outside;
  if (const auto reserved = doc->find("reserved_gpus"); reserved != doc->end() && !reserved->is_null()) {
    if (!reserved->is_array()) return InvalidArgument("{}: reserved_gpus: expected an array", path);
    for (std::size_t i = 0; i < reserved->size(); ++i) {
      const json& r = (*reserved)[i];
      const std::string where = fmt::format("{}: reserved_gpus[{}]", path, i);
      if (!r.is_object()) return InvalidArgument("{}: expected an object", where);
      OutsideMemory o;
      for (auto [key, into] : {std::pair{"gpu", &o.gpu}, std::pair{"host", &o.host}}) {
        const auto it = r.find(key);
        if (it == r.end() || !it->is_string()) return InvalidArgument("{}.{}: expected a string", where, key);
        *into = it->get<std::string>();
      }
      const Result<double> peak = Number(r, "outside_pods_peak_mib", where);
      if (!peak) return peak.error();
      o.peak_mib = *peak;
      // "<host>/gpu<N>": the GPU's index on its node.
      const std::string prefix = o.host + "/gpu";
      const std::string digits = o.gpu.starts_with(prefix) ? o.gpu.substr(prefix.size()) : std::string();
      if (!o.host.empty() && !digits.empty() && digits.size() <= 4 &&
          std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
        o.index = std::stoi(digits);
      outside.push_back(std::move(o));
    }
  }
  return ProfileBook(std::move(profiles), *margin, *reserve, std::move(outside));
}

std::vector<std::string> ProfileBook::Unmatchable() const {
  std::vector<std::string> out;
  for (const auto& [key, p] : profiles_)
    if (std::count(key.begin(), key.end(), '/') < 2) out.push_back(key);
  return out;
}

const ServeProfile* ProfileBook::Find(const std::string& workload) const {
  const auto it = profiles_.find(workload);
  return it == profiles_.end() ? nullptr : &it->second;
}

std::int64_t ProfileBook::MilliOn(double mib, double gpu_memory_mib) const {
  const double capacity = gpu_memory_mib - reserve_mib_ - margin_mib_;
  if (capacity <= 0 || mib >= capacity) return 1000;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(1000.0 * mib / capacity)), 1, 1000);
}

std::string WorkloadKeyOfPod(const KubePod& pod) {
  // WorkloadKeyOf's first rule, for the pod itself (its owner as the kubectl reader resolved it).
  if (pod.owner.kind.empty() || pod.owner.kind == "Pod") return "pod/" + pod.Key();
  std::string kind = pod.owner.kind;
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  return fmt::format("{}/{}/{}", kind, pod.namespace_name, pod.owner.name);
}

}  // namespace gpufit::serve

#include "gpufit/plan/fleet_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "gpufit/optimize/colocate.h"
#include "gpufit/optimize/memory_envelope.h"
#include "gpufit/optimize/throughput_scaling.h"
#include "gpufit/plan/plan.h"

namespace gpufit {
namespace {

// The search's view: pods, candidate models, each pod's admission on each model.
class FleetSearch {
 public:
  FleetSearch(const Telemetry& packed, const Plan& plan, std::vector<GpuModel> models, const FleetOptions& options)
      : t_(packed), plan_(plan), models_(std::move(models)) {
    limit_ = CollisionLimit(packed.samples, plan.options.max_collision_share);
    margin_ = plan.options.memory_caps ? 0.0 : plan.memory_margin_mib;
    per_pod_ = plan.options.memory_caps ? 0.0 : plan.group_margin.per_pod_mib;
    admit_.resize(packed.pods.size());
    duty_.resize(packed.pods.size());
    for (std::size_t p = 0; p < packed.pods.size(); ++p) {
      const bool latency = options.LatencyBound(packed.pods[p]);
      for (const GpuModel& m : models_)
        admit_[p].push_back(AdmitPod(packed.pods[p], plan.current_gpu(p), m, latency, limit_));
      duty_[p].resize(models_.size());
      const auto& series = packed.pods[p].fb_used_mib;
      peak_.push_back(series.empty() ? 0.0 : *std::max_element(series.begin(), series.end()));
    }
  }

  std::size_t models() const { return models_.size(); }
  const GpuModel& model(std::size_t m) const { return models_[m]; }
  const Admission& admission(std::size_t pod, std::size_t m) const { return admit_[pod][m]; }
  std::int64_t collision_limit() const { return limit_; }

  // Whether model m holds `pods` (fleet_plan.h's rules); fills `out` when it does.
  bool Holds(const std::vector<std::size_t>& pods, std::size_t m, FleetGpu* out = nullptr) {
    const GpuModel& model = models_[m];
    for (std::size_t p : pods)
      if (!admit_[p][m].admitted) return false;
    const double memory = static_cast<double>(model.memory.value);
    if (pods.size() == 1) {
      const std::size_t p = pods.front();
      const double need = plan_.options.memory_caps ? plan_.memory_cap_mib[p]
                                                    : static_cast<double>(plan_.right_sizing[p].required.value);
      if (need > memory) return false;
      if (out != nullptr) {
        *out = {.model = model.id,
                .pods = pods,
                .usd_per_month = Price(m),
                .oom_line_mib = memory,
                .packing_line_mib = memory,
                .peak_mib = peak_[p],
                .collisions = Collisions(pods, m),
                .collision_p_if_active = 0};
      }
      return true;
    }
    if (!plan_.apart(pods)) return false;  // replicas of one workload never share a GPU
    if (plan_.options.max_pods_per_gpu > 0 && pods.size() > plan_.options.max_pods_per_gpu) return false;
    const double oom_line = memory - static_cast<double>(plan_.options.reserve.value);
    // The group margin (memory_envelope.h): each live pod counts per_pod_ more against a line
    // per_pod_ higher, so k live pods keep margin_ + (k - 1) x per_pod_ free, as the packer does.
    const double line = oom_line - margin_;
    if (line <= 0) return false;
    double peaks = 0;
    std::size_t first = t_.samples, last = 0;
    for (std::size_t p : pods) {
      if (peak_[p] > line) return false;
      peaks += peak_[p] + per_pod_;
      first = std::min(first, t_.pods[p].first);
      last = std::max(last, t_.pods[p].last);
    }
    double peak = 0;
    std::int64_t collisions = 0;
    if (first <= last) {
      mem_.assign(last - first + 1, 0.0);
      util_.assign(last - first + 1, 0.0);
      live_.assign(last - first + 1, 0);
      for (std::size_t p : pods) {
        const PodSeries& s = t_.pods[p];
        const double f = admit_[p][m].factor;
        for (std::size_t k = s.first; k <= s.last; ++k) {
          mem_[k - first] += s.fb_used_mib[k];
          ++live_[k - first];
          const float u = s.gpu_util_pct[k];
          if (u > 0) util_[k - first] += static_cast<double>(u) * f;
        }
      }
      for (std::size_t k = 0; k < mem_.size(); ++k) {
        peak = std::max(peak, mem_[k]);
        const double kept = live_[k] > 1 ? static_cast<double>(live_[k] - 1) * per_pod_ : 0.0;
        if (peaks > line + per_pod_ && mem_[k] + kept > line) return false;
        collisions += util_[k] > 100.0;
      }
      if (collisions > limit_) return false;
    }
    double p_active = 0;
    if (plan_.options.robust) {
      std::vector<const ActiveDuty*> duty;
      for (std::size_t p : pods) duty.push_back(&ScaledDuty(p, m));
      p_active = CollisionProbabilityIfActive(duty);
      if (p_active > plan_.options.max_collision_share + 1e-12) return false;
    }
    if (out != nullptr) {
      *out = {.model = model.id,
              .pods = pods,
              .usd_per_month = Price(m),
              .oom_line_mib = oom_line,
              .packing_line_mib = line - static_cast<double>(pods.size() - 1) * per_pod_,
              .peak_mib = peak,
              .collisions = collisions,
              .collision_p_if_active = p_active};
    }
    return true;
  }

  // The cheapest model that holds `pods`, at most `below` USD per month; nullopt if none.
  std::optional<std::size_t> Cheapest(const std::vector<std::size_t>& pods, double below = INFINITY) {
    for (std::size_t m = 0; m < models_.size(); ++m) {
      if (Price(m) >= below) break;
      if (Holds(pods, m)) return m;
    }
    return std::nullopt;
  }

  double Price(std::size_t m) const { return models_[m].on_demand_per_gpu_hour.value * kHoursPerMonth; }

  // Telemetry of `pods` with each duty scaled for model m (and 0 where missing), for the packer.
  Telemetry Scaled(const std::vector<std::size_t>& pods, std::size_t m) const {
    Telemetry out;
    out.start_s = t_.start_s;
    out.step_s = t_.step_s;
    out.samples = t_.samples;
    for (std::size_t p : pods) {
      PodSeries s;
      s.pod = t_.pods[p].pod;
      s.first = t_.pods[p].first;
      s.last = t_.pods[p].last;
      s.fb_used_mib = t_.pods[p].fb_used_mib;
      s.gpu_util_pct = ScaledUtil(p, m);
      out.pods.push_back(std::move(s));
    }
    return out;
  }

 private:
  // Pod p's duty on model m: scaled by its slowdown there, 0 where idle or missing.
  std::vector<float> ScaledUtil(std::size_t p, std::size_t m) const {
    std::vector<float> util = t_.pods[p].gpu_util_pct;
    for (float& u : util) u = u > 0 ? static_cast<float>(u * admit_[p][m].factor) : 0.0f;
    return util;
  }
  std::int64_t Collisions(const std::vector<std::size_t>& pods, std::size_t m) const {
    std::int64_t n = 0;
    const PodSeries& s = t_.pods[pods.front()];
    for (std::size_t k = s.first; k <= s.last; ++k)
      n += s.gpu_util_pct[k] > 0 && static_cast<double>(s.gpu_util_pct[k]) * admit_[pods.front()][m].factor > 100.0;
    return n;
  }
  const ActiveDuty& ScaledDuty(std::size_t p, std::size_t m) {
    std::optional<ActiveDuty>& d = duty_[p][m];
    if (!d) {
      PodSeries s;
      s.first = t_.pods[p].first;
      s.last = t_.pods[p].last;
      s.gpu_util_pct = ScaledUtil(p, m);
      d = ActiveDutyOf(s);
    }
    return *d;
  }

  const Telemetry& t_;
  const Plan& plan_;
  std::vector<GpuModel> models_;  // by price
  std::int64_t limit_ = 0;
  double margin_ = 0, per_pod_ = 0;
  std::vector<std::size_t> live_;
  std::vector<std::vector<Admission>> admit_;                 // [pod][model]
  std::vector<std::vector<std::optional<ActiveDuty>>> duty_;  // [pod][model], scaled, when asked
  std::vector<double> peak_;
  std::vector<double> mem_, util_;  // scratch
};

struct Unit {
  std::vector<std::size_t> pods;  // ascending
  std::size_t model = 0;
};

// Step 2: each unit to its cheapest model; units no model holds are split, pods no model
// admits are kept.
// With whole workloads (dra-mps: one claim per pod template) a unit stays whole: kept.
void MoveToCheapest(FleetSearch& s, std::vector<Unit>& units, std::vector<std::size_t>& kept, bool whole) {
  std::vector<Unit> out;
  for (Unit& u : units) {
    if (const std::optional<std::size_t> m = s.Cheapest(u.pods)) {
      out.push_back({std::move(u.pods), *m});
      continue;
    }
    if (whole) {
      kept.insert(kept.end(), u.pods.begin(), u.pods.end());
      continue;
    }
    for (std::size_t p : u.pods) {
      if (const std::optional<std::size_t> m = s.Cheapest({p})) {
        out.push_back({{p}, *m});
      } else {
        kept.push_back(p);
      }
    }
  }
  units = std::move(out);
}

// Step 3: pack each model's pods again on it; kept when fewer GPUs.
void RepackPerModel(FleetSearch& s, std::vector<Unit>& units, const Plan& plan) {
  std::vector<std::size_t> count(s.models(), 0);
  for (const Unit& u : units) ++count[u.model];
  std::size_t repacked = 0;
  for (std::size_t m = 0; m < s.models(); ++m) repacked += count[m] >= 2;
  if (repacked == 0) return;
  std::vector<std::size_t> same_model_pods = plan.too_big;
  for (const GpuReplay& g : plan.replay.gpus)
    same_model_pods.insert(same_model_pods.end(), g.pods.begin(), g.pods.end());
  std::sort(same_model_pods.begin(), same_model_pods.end());
  for (std::size_t m = 0; m < s.models(); ++m) {
    if (count[m] < 2) continue;
    std::vector<std::size_t> pods;
    for (const Unit& u : units)
      if (u.model == m) pods.insert(pods.end(), u.pods.begin(), u.pods.end());
    std::sort(pods.begin(), pods.end());
    // The same-model search already packed exactly these pods on this model, unscaled (the
    // target is today's model), with the whole budget: half of it would not do better.
    if (s.model(m).id == plan.target.id && plan.target.id == plan.current.id && !plan.mixed_current() &&
        pods == same_model_pods)
      continue;
    const Telemetry scaled = s.Scaled(pods, m);
    ColocateOptions co;
    co.gpu_memory = s.model(m).memory;
    co.reserve = plan.options.reserve;
    if (co.gpu_memory <= co.reserve) continue;
    co.memory_margin_mib = plan.options.memory_caps ? 0.0 : plan.memory_margin_mib;
    co.per_pod_margin_mib = plan.options.memory_caps ? 0.0 : plan.group_margin.per_pod_mib;
    if (static_cast<double>((co.gpu_memory - co.reserve).value) <= co.memory_margin_mib) continue;
    co.collisions_if_active = plan.options.robust;
    co.max_collision_share = plan.options.max_collision_share;
    co.seed = plan.options.seed;
    // The same-model search had the whole budget; each model's repacking gets a share.
    co.search_budget = plan.options.search_budget / static_cast<std::int64_t>(2 * repacked);
    co.threads = plan.options.threads;
    if (!plan.replica_set.empty())
      for (std::size_t p : pods) co.apart.push_back(plan.replica_set[p]);
    co.max_pods_per_gpu = plan.options.max_pods_per_gpu;
    const Colocation c = Colocate(scaled, co);
    if (c.groups.size() + c.too_big.size() >= count[m]) continue;
    std::vector<Unit> again;
    bool holds = true;
    for (const std::vector<std::size_t>& g : c.groups) {
      Unit u{{}, m};
      for (std::size_t k : g) u.pods.push_back(pods[k]);
      holds = holds && s.Holds(u.pods, m);
      again.push_back(std::move(u));
    }
    for (std::size_t k : c.too_big) {
      again.push_back({{pods[k]}, m});
      holds = holds && s.Holds({pods[k]}, m);
    }
    if (!holds) continue;  // the packer's rule and Holds agree; a mismatch keeps the old units
    std::erase_if(units, [&](const Unit& u) { return u.model == m; });
    units.insert(units.end(), again.begin(), again.end());
  }
}

// Step 4: merge the pair that saves most into one GPU of the cheapest model holding both.
bool MergePairs(FleetSearch& s, std::vector<Unit>& units) {
  if (units.size() > kMaxMergeGpus) return false;
  struct Merge {
    double saving = 0;
    std::size_t model = 0;
  };
  auto price = [&](const Unit& u) { return s.Price(u.model); };
  auto best_for = [&](const Unit& a, const Unit& b) {
    std::vector<std::size_t> pods = a.pods;
    pods.insert(pods.end(), b.pods.begin(), b.pods.end());
    std::sort(pods.begin(), pods.end());
    const double both = price(a) + price(b);
    const std::optional<std::size_t> m = s.Cheapest(pods, both - 1e-6);
    return m ? Merge{both - s.Price(*m), *m} : Merge{};
  };
  std::vector<std::vector<Merge>> merge(units.size(), std::vector<Merge>(units.size()));
  for (std::size_t a = 0; a < units.size(); ++a)
    for (std::size_t b = a + 1; b < units.size(); ++b) merge[a][b] = best_for(units[a], units[b]);
  while (true) {
    std::size_t best_a = 0, best_b = 0;
    double best = 0;
    for (std::size_t a = 0; a < units.size(); ++a)
      for (std::size_t b = a + 1; b < units.size(); ++b)
        if (merge[a][b].saving > best + 1e-9) {
          best = merge[a][b].saving;
          best_a = a;
          best_b = b;
        }
    if (best <= 0) break;
    Unit& into = units[best_a];
    into.pods.insert(into.pods.end(), units[best_b].pods.begin(), units[best_b].pods.end());
    std::sort(into.pods.begin(), into.pods.end());
    into.model = merge[best_a][best_b].model;
    units.erase(units.begin() + static_cast<std::ptrdiff_t>(best_b));
    merge.erase(merge.begin() + static_cast<std::ptrdiff_t>(best_b));
    for (std::vector<Merge>& row : merge) row.erase(row.begin() + static_cast<std::ptrdiff_t>(best_b));
    for (std::size_t k = 0; k < units.size(); ++k) {
      if (k == best_a) continue;
      const std::size_t a = std::min(k, best_a), b = std::max(k, best_a);
      merge[a][b] = best_for(units[a], units[b]);
    }
  }
  return true;
}

// Step 5: move one pod to another GPU, or alone, when the two GPUs then cost less (each
// priced at the cheapest model holding its pods); repeated while a pass saves.
void MovePods(FleetSearch& s, std::vector<Unit>& units, bool whole) {
  if (whole || units.size() > kMaxMergeGpus) return;
  const auto without = [](const std::vector<std::size_t>& pods, std::size_t p) {
    std::vector<std::size_t> out;
    for (std::size_t q : pods)
      if (q != p) out.push_back(q);
    return out;
  };
  const auto with = [](std::vector<std::size_t> pods, std::size_t p) {
    pods.insert(std::upper_bound(pods.begin(), pods.end(), p), p);
    return pods;
  };
  for (int pass = 0; pass < 4; ++pass) {
    bool moved = false;
    for (std::size_t u = 0; u < units.size(); ++u) {
      for (std::size_t k = 0; k < units[u].pods.size(); ++k) {
        const std::size_t p = units[u].pods[k];
        const std::vector<std::size_t> rest = without(units[u].pods, p);
        std::optional<std::size_t> rest_model;
        if (!rest.empty() && !(rest_model = s.Cheapest(rest))) continue;
        const double rest_usd = rest.empty() ? 0 : s.Price(*rest_model);
        const double now = s.Price(units[u].model);
        // Best target: another GPU (its cheapest model with p), or a GPU of its own.
        double best = -1e-6;
        std::optional<std::size_t> best_unit, best_model;
        for (std::size_t v = 0; v < units.size(); ++v) {
          if (v == u) continue;
          const double budget = now + s.Price(units[v].model) - rest_usd;  // what the new v may cost to save
          const std::optional<std::size_t> m = s.Cheapest(with(units[v].pods, p), budget + best);
          if (!m) continue;
          const double saving = budget - s.Price(*m);
          if (saving > -best) best = -saving, best_unit = v, best_model = m;
        }
        if (!rest.empty()) {
          const std::optional<std::size_t> m = s.Cheapest({p}, now - rest_usd + best);
          if (m && now - rest_usd - s.Price(*m) > -best)
            best = -(now - rest_usd - s.Price(*m)), best_unit.reset(), best_model = m;
        }
        if (!best_model) continue;
        if (best_unit) {
          units[*best_unit].pods = with(units[*best_unit].pods, p);
          units[*best_unit].model = *best_model;
        } else {
          units.push_back({{p}, *best_model});
        }
        if (rest.empty()) {
          units.erase(units.begin() + static_cast<std::ptrdiff_t>(u));
          --u;
          moved = true;
          break;
        }
        units[u].pods = rest;
        units[u].model = *rest_model;
        moved = true;
        --k;
      }
    }
    if (!moved) break;
  }
}

}  // namespace

std::map<std::string, std::size_t> FleetPlan::GpusByModel() const {
  std::map<std::string, std::size_t> out;
  for (const FleetGpu& g : gpus) ++out[g.model];
  return out;
}

Result<FleetPlan> BuildFleetPlan(const Telemetry& packed, const Plan& plan, const GpuCatalog& catalog,
                                 const FleetOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<GpuModel> models;
  if (options.models.empty()) {
    models = catalog.models();
  } else {
    for (const std::string& id : options.models) {
      Result<GpuModel> m = catalog.Find(id);
      if (!m) return Error{m.error().code, "--gpus: " + m.error().message};
      if (std::none_of(models.begin(), models.end(), [&](const GpuModel& x) { return x.id == m->id; }))
        models.push_back(std::move(*m));
    }
    // catalog order: price, then memory, then id
    std::vector<GpuModel> ordered;
    for (const GpuModel& m : catalog.models())
      if (std::any_of(models.begin(), models.end(), [&](const GpuModel& x) { return x.id == m.id; }))
        ordered.push_back(m);
    models = std::move(ordered);
  }
  FleetSearch s(packed, plan, models, options);
  FleetPlan out;
  for (const GpuModel& m : models) out.candidates.push_back(m.id);
  out.collision_limit = s.collision_limit();
  for (std::size_t p = 0; p < packed.pods.size(); ++p) out.latency_bound_pods += options.LatencyBound(packed.pods[p]);

  std::vector<Unit> units;
  for (const GpuReplay& g : plan.replay.gpus) units.push_back({g.pods, 0});
  for (std::size_t p : plan.too_big) units.push_back({{p}, 0});
  out.kept = plan.kept_on_current_gpu();
  const bool whole = plan.options.whole_workloads;
  MoveToCheapest(s, units, out.kept, whole);
  if (!whole) {  // repacking would split a workload's pods
    RepackPerModel(s, units, plan);
    MoveToCheapest(s, units, out.kept, whole);
  }
  out.merged_pairs = MergePairs(s, units);
  MovePods(s, units, whole);

  std::sort(out.kept.begin(), out.kept.end());
  out.model_of.clear();
  for (std::size_t p = 0; p < packed.pods.size(); ++p) out.model_of.push_back(plan.current_gpu(p).id);
  out.slowdown.assign(packed.pods.size(), 1.0);
  out.refusals.assign(packed.pods.size(), "");
  for (const Unit& u : units) {
    FleetGpu g;
    if (!s.Holds(u.pods, u.model, &g))
      return Internal("fleet plan: {} pods on {} break the rules", u.pods.size(), s.model(u.model).id);
    out.usd_per_month += g.usd_per_month;
    for (std::size_t p : u.pods) {
      out.model_of[p] = g.model;
      out.slowdown[p] = s.admission(p, u.model).factor;
    }
    out.gpus.push_back(std::move(g));
  }
  for (std::size_t p = 0; p < packed.pods.size(); ++p) {
    // The cheapest model cheaper than the pod's own GPU that refused it: why it is not there.
    const auto it = std::find(out.candidates.begin(), out.candidates.end(), out.model_of[p]);
    const std::size_t own = static_cast<std::size_t>(it - out.candidates.begin());
    const auto need = static_cast<std::int64_t>(
        plan.options.memory_caps ? plan.memory_cap_mib[p] : static_cast<double>(plan.right_sizing[p].required.value));
    for (std::size_t m = 0; m < std::min(own, s.models()); ++m) {
      if (s.model(m).memory.value >= need && !s.admission(p, m).admitted) {
        out.refusals[p] = fmt::format("not {}: {}", s.model(m).id, s.admission(p, m).reason);
        break;
      }
    }
  }
  for (std::size_t p : out.kept) {
    out.kept_gpus += plan.gpus_of(p);
    out.usd_per_month_kept += plan.usd_per_hour_today(p) * kHoursPerMonth;  // a MIG pod keeps its slice's share
  }
  for (std::size_t p = 0; p < packed.pods.size(); ++p)
    out.refused_on_target += !AdmitPod(packed.pods[p], plan.current_gpu(p), plan.target,
                                       options.LatencyBound(packed.pods[p]), out.collision_limit)
                                  .admitted;
  out.usd_per_month += out.usd_per_month_kept;
  std::sort(out.gpus.begin(), out.gpus.end(), [](const FleetGpu& a, const FleetGpu& b) {
    return std::tie(a.usd_per_month, a.model, a.pods) < std::tie(b.usd_per_month, b.model, b.pods);
  });
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

FleetReplay ReplayFleet(const Telemetry& telemetry, const FleetPlan& fleet, double max_collision_share) {
  FleetReplay out;
  const std::int64_t limit = CollisionLimit(telemetry.samples, max_collision_share);
  std::vector<double> mem(telemetry.samples), util(telemetry.samples);
  for (const FleetGpu& g : fleet.gpus) {
    std::fill(mem.begin(), mem.end(), 0.0);
    std::fill(util.begin(), util.end(), 0.0);
    for (std::size_t p : g.pods) {
      const PodSeries& s = telemetry.pods[p];
      const double f = p < fleet.slowdown.size() ? fleet.slowdown[p] : 1.0;
      for (std::size_t t = s.first; t <= s.last && t < telemetry.samples; ++t) {
        mem[t] += s.fb_used_mib[t];
        if (s.gpu_util_pct[t] > 0) util[t] += static_cast<double>(s.gpu_util_pct[t]) * f;
      }
    }
    std::int64_t over = 0, collisions = 0;
    double peak = 0;
    for (std::size_t t = 0; t < telemetry.samples; ++t) {
      peak = std::max(peak, mem[t]);
      over += mem[t] > g.oom_line_mib;
      collisions += util[t] > 100.0;
    }
    out.memory_overflows += over;
    out.overflow_gpus += over > 0;
    out.worst_over_mib = std::max(out.worst_over_mib, peak - g.oom_line_mib);
    out.gpus_over_collision_limit += collisions > limit;
    if (telemetry.samples > 0)
      out.max_collision_share =
          std::max(out.max_collision_share, static_cast<double>(collisions) / static_cast<double>(telemetry.samples));
  }
  out.safe = out.memory_overflows == 0 && out.gpus_over_collision_limit == 0;
  return out;
}

}  // namespace gpufit

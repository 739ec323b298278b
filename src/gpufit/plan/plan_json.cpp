#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "gpufit/plan/plan_writers.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit {
namespace {

// How the Prometheus server was read (null for files): ingest/prometheus/split.h.
nlohmann::json QueriesJson(const std::optional<TelemetryQueries>& q) {
  if (!q) return nullptr;
  return {{"requests", q->requests},
          {"series_lookups", q->series_lookups},
          {"queries", q->queries},
          {"split_queries", q->split_queries},
          {"parts", q->parts},
          {"answer_bytes", q->answer_bytes},
          {"max_answer_bytes", q->max_answer_bytes},
          {"requested_step_s", q->requested_step_s},
          {"step_s", q->step_s},
          {"max_points_per_series", q->max_points_per_series},
          {"step_rule", q->step_rule},
          {"scope", q->scope}};
}

using nlohmann::json;

json ToJson(const Percentiles& p) {
  return {{"peak", p.peak}, {"p99", p.p99}, {"p95", p.p95}, {"p50", p.p50}, {"mean", p.mean}};
}

json ToJson(const PodProfile& p) {
  return {{"fb_used_mib", ToJson(p.fb_used_mib)},
          {"gpu_util_pct", ToJson(p.gpu_util_pct)},
          {"idle_share", p.idle_share},
          {"running_samples", p.running_samples},
          {"filled_samples", p.filled_samples},
          {"gpu_hours_allocated", p.gpu_hours_allocated},
          {"gpu_hours_used", p.gpu_hours_used},
          {"gpu_hours_wasted", p.gpu_hours_wasted()},
          {"sm_active_pct", p.sm_active_pct ? ToJson(*p.sm_active_pct) : json(nullptr)},
          {"duty_cycle_field", p.util_field.empty() ? json(nullptr) : json(p.util_field)},
          {"device", p.device.empty() ? json(nullptr) : json(p.device)}};
}

json ToJson(const ContainerProfile& c) {
  auto optional = [](const auto& v) { return v ? json(v->value) : json(nullptr); };
  return {{"pod", c.pod},
          {"container", c.container},
          {"image", c.image},
          {"cpu_samples", c.cpu_samples},
          {"memory_samples", c.memory_samples},
          {"cpu_cores", ToJson(c.cpu_cores)},
          {"cpu_throttled_ratio", ToJson(c.cpu_throttled_ratio)},
          {"memory_working_set_mib", ToJson(c.memory_working_set_mib)},
          {"requests", {{"cpu_millicores", optional(c.cpu_request)}, {"memory_mib", optional(c.memory_request)}}},
          {"limits", {{"cpu_millicores", optional(c.cpu_limit)}, {"memory_mib", optional(c.memory_limit)}}}};
}

json ToJson(const std::vector<ContainerProfile>& containers) {
  json out = json::array();
  for (const ContainerProfile& c : containers) out.push_back(ToJson(c));
  return out;
}

// [{"workload": key, "replicas": n}], or null for a plan without --pods.
json ToJson(const std::vector<WorkloadSlots>& slots, bool keyed) {
  if (!keyed) return nullptr;
  json out = json::array();
  for (const WorkloadSlots& s : slots) out.push_back({{"workload", s.workload}, {"replicas", s.replicas}});
  return out;
}

json ToJson(const GpuModel& m) {
  return {{"id", m.id},
          {"name", m.name},
          {"memory_mib", m.memory.value},
          {"on_demand_usd_per_gpu_hour", m.on_demand_per_gpu_hour.value}};
}

// plan/workload_profiles.h; read back by serve/profiles.h.
json ToJson(const WorkloadProfiles& p) {
  json workloads = json::array();
  for (const WorkloadProfile& w : p.workloads) {
    json hours = json::array();
    for (const std::optional<double>& h : w.duty_pct_by_hour) hours.push_back(h ? json(*h) : json(nullptr));
    workloads.push_back({{"workload", w.workload},
                         {"replicas", w.replicas},
                         {"samples", w.samples},
                         {"memory_peak_mib", w.memory_peak_mib},
                         {"duty_pct", w.duty_pct},
                         {"duty_pct_by_hour", hours},
                         {"walk_forward",
                          {{"margin_mib", p.earlier_margin_mib},
                           {"later_samples", w.later_samples},
                           {"memory_over_peak_plus_margin", w.later_memory_over},
                           {"duty_over_hour_quantile", w.later_duty_over}}}});
  }
  return {{"duty_quantile", p.duty_quantile},
          {"margin_mib", p.margin_mib},
          {"workloads", workloads},
          {"unmeasured", p.unmeasured}};
}

std::string CurrentSource(const Plan& plan, std::size_t pod) {
  const auto it = plan.options.current_gpu_source_of.find(plan.pod_names[pod]);
  if (it != plan.options.current_gpu_source_of.end()) return it->second;
  return plan.options.current_gpu.empty() ? "assumed: --gpu" : "--current-gpu";
}

// Today's GPUs by model: pods, GPUs (gpus_of each) and their monthly on-demand cost
// (usd_per_hour_today: they add up to totals.usd_per_month_before).
json CurrentGpusJson(const Plan& plan) {
  std::map<std::string, std::tuple<std::size_t, std::size_t, double>> by_model;
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    auto& [pods, gpus, usd] = by_model[plan.current_gpu(i).id];
    ++pods;
    gpus += plan.gpus_of(i);
    usd += plan.usd_per_hour_today(i) * kHoursPerMonth;
  }
  json out = json::array();
  for (const auto& [id, v] : by_model)
    out.push_back({{"id", id}, {"pods", std::get<0>(v)}, {"gpus", std::get<1>(v)}, {"usd_per_month", std::get<2>(v)}});
  return out;
}

}  // namespace

std::string PlanToJson(const Plan& plan) {
  const bool keyed = !plan.workload_of.empty();
  const WorkloadPlan by_workload = keyed ? WorkloadPlanOf(plan) : WorkloadPlan{};
  json pods = json::array();
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    const RightSizing& r = plan.right_sizing[i];
    pods.push_back({{"pod", plan.pod_names[i]},
                    {"profile", ToJson(plan.profiles[i])},
                    {"current_gpu",
                     {{"id", plan.current_gpu(i).id},
                      {"source", CurrentSource(plan, i)},
                      {"usd_per_gpu_hour", plan.current_gpu(i).on_demand_per_gpu_hour.value}}},
                    {"right_sizing",
                     {{"current_gpu", r.current_gpu},
                      {"recommended_gpu", r.recommended_gpu ? json(*r.recommended_gpu) : json(nullptr)},
                      {"required_mib", r.required.value},
                      {"reason", r.reason},
                      {"usd_per_month_current", r.usd_per_month_current},
                      {"usd_per_month_recommended", r.usd_per_month_recommended}}},
                    {"group", plan.group_of[i] ? json(*plan.group_of[i]) : json(nullptr)},
                    {"workload", keyed ? json(plan.workload_of[i]) : json(nullptr)}});
  }
  json groups = json::array();
  for (std::size_t g = 0; g < plan.replay.gpus.size(); ++g) {
    const GpuReplay& r = plan.replay.gpus[g];
    json names = json::array();
    for (std::size_t p : r.pods) names.push_back(plan.pod_names[p]);
    groups.push_back({{"gpu", g},
                      {"gpu_model", plan.target.id},
                      {"pods", names},
                      {"workloads", ToJson(keyed ? by_workload.groups[g] : std::vector<WorkloadSlots>{}, keyed)},
                      {"peak_fb_used_mib", r.peak_mib},
                      {"pods_at_once", plan.pods_at_once(g)},
                      {"packing_line_mib", plan.packing_line_mib(plan.pods_at_once(g))},
                      {"mean_gpu_util_pct", r.mean_util_pct},
                      {"memory_overflows", r.memory_overflows},
                      {"collision_samples", r.collisions},
                      {"collision_share", r.collision_share},
                      {"collision_p_if_active",
                       g < plan.collision_p_if_active.size() ? json(plan.collision_p_if_active[g]) : json(nullptr)}});
    if (!plan.memory_cap_mib.empty()) {
      // The cap each pod runs under, in the order of `pods`; they add up to <= capacity_mib.
      json caps = json::array();
      for (std::size_t p : r.pods) caps.push_back(plan.memory_cap_mib[p]);
      groups.back()["memory_caps_mib"] = caps;
    }
  }
  json too_big = json::array(), kept = json::array(), starvation = json::array();
  for (std::size_t p : plan.too_big) too_big.push_back(plan.pod_names[p]);
  for (std::size_t p : plan.kept_on_current_gpu()) kept.push_back(plan.pod_names[p]);
  for (const CpuStarvation& s : plan.cpu_starvation) {
    starvation.push_back({{"pod", s.pod_name},
                          {"activity_metric", s.activity_metric},
                          {"observed_samples", s.observed_samples},
                          {"starved_samples", s.starved_samples},
                          {"starved_share", s.starved_share()},
                          {"cpu_limit_cores", s.cpu_limit_cores > 0 ? json(s.cpu_limit_cores) : json(nullptr)},
                          {"cpu_used_p50_starved_cores", s.cpu_used_p50_starved},
                          {"throttled_ratio_p50_starved", s.throttled_p50_starved},
                          {"activity_p50_starved_pct", s.activity_p50_starved},
                          {"activity_per_core_pct", s.activity_per_core},
                          {"cores_needed", s.cores_needed},
                          {"recommended_cpu_cores_per_gpu", s.recommended_cores},
                          {"capped", s.capped},
                          {"activity_mean_pct_now", s.activity_mean_pct_now},
                          {"activity_mean_pct_expected", s.activity_mean_pct_expected},
                          {"kept_gpu", plan.current.id},
                          {"evidence", s.evidence}});
  }
  json ended = json::array(), reserved = json::array();
  std::size_t dropped = 0;
  for (const PodEnd& e : plan.ended) {
    ended.push_back({{"pod", e.pod}, {"end_s", e.end_s}, {"source", e.source}, {"dropped_samples", e.dropped_samples}});
    dropped += e.dropped_samples;
  }
  for (const ReservedGpu& r : plan.reserved_gpus)
    reserved.push_back({{"gpu", r.reserved.gpu},
                        {"host", r.reserved.host},
                        {"outside_pods_peak_mib", r.reserved.peak.value},
                        {"capacity_for_pods_mib", r.capacity_mib},
                        {"group", r.group ? json(*r.group) : json(nullptr)}});
  json multi_gpu = json::array();
  for (const MultiGpuPod& m : plan.multi_gpu) {
    json series = json::array();
    for (std::size_t p : m.series) series.push_back(plan.pod_names[p]);
    json ask = nullptr;
    if (m.ask_for_one) {
      const AskForOne& a = *m.ask_for_one;
      json idle = json::array();
      for (std::size_t p : a.idle) idle.push_back(plan.pod_names[p]);
      ask = {{"devices_now", m.devices},
             {"devices_recommended", 1},
             {"busy", plan.pod_names[a.busy]},
             {"busy_device", plan.profiles[a.busy].device},
             {"busy_peak_mib", a.busy_peak_mib},
             {"busy_peak_duty_pct", a.busy_peak_duty_pct},
             {"idle", idle},
             {"idle_peak_mib", a.idle_peak_mib},
             {"idle_peak_duty_pct", a.idle_peak_duty_pct},
             {"recommendation", a.text}};
    }
    multi_gpu.push_back({{"pod", m.pod},
                         {"series", series},
                         {"devices", m.devices},
                         {"spec_devices", m.spec_devices > 0 ? json(m.spec_devices) : json(nullptr)},
                         {"mig", m.mig},
                         {"kept_gpu", plan.current.id},
                         {"evidence", m.evidence},
                         {"ask_for_one", ask}});
  }
  const PlanTotals& t = plan.totals;
  json j = {
      {"schema_version", 1},
      {"source", plan.source},
      {"telemetry",
       {{"pods", plan.pod_names.size()},
        {"samples", plan.samples},
        {"step_s", plan.step_s},
        {"window_hours", plan.window_hours},
        {"skipped", plan.skipped},
        {"ended", ended},
        {"samples_dropped_after_end", dropped},
        {"queries", QueriesJson(plan.queries)}}},
      {"options",
       {{"current_gpu", plan.current.id},
        {"target_gpu", plan.target.id},
        {"headroom", plan.options.headroom},
        {"max_collision_share", plan.options.max_collision_share},
        {"reserve_mib", plan.options.reserve.value},
        {"robust", plan.options.robust},
        {"sharing", plan.options.sharing.empty() ? json(nullptr) : json(plan.options.sharing)},
        {"replicas_apart", plan.options.replicas_apart},
        {"largest_replica_set", plan.largest_replica_set},
        {"memory_risk", plan.options.memory_risk},
        {"min_window_hours", plan.options.min_window_hours},
        {"seed", plan.options.seed},
        {"search_budget", plan.options.search_budget},
        {"threads", plan.options.threads}}},
      {"containers", ToJson(plan.containers)},
      {"current_gpu", ToJson(plan.current)},
      {"current_gpus", CurrentGpusJson(plan)},
      {"target_gpu", ToJson(plan.target)},
      {"capacity_mib", plan.capacity_mib},
      {"reserved_gpus", reserved},
      {"memory_envelope",
       {{"margin_mib", plan.memory_margin_mib},
        {"pooled_surprises", plan.memory_surprises},
        {"packing_capacity_mib", plan.packing_capacity_mib},
        {"per_pod_margin_mib", plan.group_margin.per_pod_mib},
        {"group_margins_measured_mib", plan.group_margin.measured_mib},
        {"collisions_if_active", plan.options.robust},
        {"memory_caps", plan.options.memory_caps}}},
      {"collision_limit_samples", plan.collision_limit_samples},
      {"pods", pods},
      {"workload_profiles", ToJson(plan.workload_profiles)},
      {"groups", groups},
      {"too_big_for_target", too_big},
      {"kept_on_current_gpu", kept},
      {"too_big_for_target_workloads", ToJson(by_workload.too_big, keyed)},
      {"kept_on_current_gpu_workloads", ToJson(by_workload.kept, keyed)},
      {"cpu_starvation_evaluated", plan.container_data},
      {"cpu_starvation", starvation},
      {"multi_gpu", multi_gpu},
      {"totals",
       {{"gpus_before", t.gpus_before},
        {"gpus_after", t.gpus_after},
        {"gpus_lower_bound", t.gpus_lower_bound},
        {"lower_bound",
         {{"per_sample_l2", t.lower_bound.per_sample_l2},
          {"conflict_clique", t.lower_bound.conflict_clique},
          {"conflict_clique_search", t.lower_bound.clique_search()},
          {"conflict_clique_pods", t.lower_bound.clique_pods},
          {"conflict_clique_seeds_tried", t.lower_bound.clique_seeds_tried},
          {"lp_column_generation", t.lower_bound.lp_column_generation},
          {"lp_value", t.lower_bound.lp_value},
          {"lp_search", t.lower_bound.lp_search()}}},
        {"gap_to_lower_bound", t.gap_to_lower_bound()},
        {"gpus_first_fit_decreasing", t.gpus_first_fit_decreasing},
        {"gpu_hours_before", t.gpu_hours_before},
        {"gpu_hours_after", t.gpu_hours_after},
        {"usd_per_month_before", t.usd_per_month_before},
        {"usd_per_month_after", t.usd_per_month_after},
        {"usd_per_month_saved", t.usd_per_month_before - t.usd_per_month_after},
        {"mean_duty_pct_before", t.mean_duty_pct_before},
        {"mean_duty_pct_after", t.mean_duty_pct_after}}},
      {"replay",
       {{"memory_overflows", plan.replay.memory_overflows},
        {"max_collision_share", plan.replay.max_collision_share},
        {"safe", plan.replay.safe}}},
      {"search_evaluations", plan.search_evaluations},
  };
  {
    const FleetPlan& f = plan.fleet;
    json gpus = json::array(), fleet_pods = json::array(), by_model = json::object();
    for (const auto& [model, n] : f.GpusByModel()) by_model[model] = n;
    for (const FleetGpu& g : f.gpus) {
      json names = json::array();
      for (std::size_t p : g.pods) names.push_back(plan.pod_names[p]);
      gpus.push_back({{"model", g.model},
                      {"pods", names},
                      {"usd_per_month", g.usd_per_month},
                      {"peak_mib", g.peak_mib},
                      {"oom_line_mib", g.oom_line_mib},
                      {"packing_line_mib", g.packing_line_mib},
                      {"collisions", g.collisions},
                      {"collision_p_if_active", g.collision_p_if_active}});
    }
    for (std::size_t p = 0; p < f.model_of.size(); ++p)
      fleet_pods.push_back({{"pod", plan.pod_names[p]},
                            {"model", f.model_of[p]},
                            {"slowdown", f.slowdown[p]},
                            {"kept", std::binary_search(f.kept.begin(), f.kept.end(), p)},
                            {"refused", f.refusals[p].empty() ? json(nullptr) : json(f.refusals[p])}});
    json fleet_kept = json::array();
    for (std::size_t p : f.kept) fleet_kept.push_back(plan.pod_names[p]);
    j["fleet"] = {{"usd_per_month", f.usd_per_month},
                  {"usd_per_month_same_model", t.usd_per_month_after},
                  {"usd_per_month_before", t.usd_per_month_before},
                  {"usd_per_month_saved", t.usd_per_month_before - f.usd_per_month},
                  {"gpus", f.gpus.size() + f.kept_gpus},
                  {"recommended", f.Recommended(t.usd_per_month_after)},
                  {"backtest_held", f.backtest_held ? json(*f.backtest_held) : json(nullptr)},
                  {"backtest_failure", f.backtest_failure.empty() ? json(nullptr) : json(f.backtest_failure)},
                  {"pods_refused_on_target", f.refused_on_target},
                  {"gpus_by_model", by_model},
                  {"candidates", f.candidates},
                  {"latency_bound_pods", f.latency_bound_pods},
                  {"collision_limit_samples", f.collision_limit},
                  {"merged_pairs", f.merged_pairs},
                  {"kept_on_current_gpu", fleet_kept},
                  {"usd_per_month_kept", f.usd_per_month_kept},
                  {"shared_gpus", gpus},
                  {"pods", fleet_pods}};
  }
  {
    json unmeasured = json::array(), above = json::array(), stopped = json::array();
    for (std::size_t p : plan.unmeasured) unmeasured.push_back(plan.pod_names[p]);
    for (std::size_t p : plan.above_current)
      above.push_back({{"pod", plan.pod_names[p]},
                       {"peak_fb_used_mib", plan.profiles[p].fb_used_mib.peak},
                       {"current_gpu", plan.current_gpu(p).id},
                       {"current_gpu_memory_mib", plan.current_gpu(p).memory.value}});
    for (std::size_t p : plan.stopped_without_end) stopped.push_back(plan.pod_names[p]);
    j["warnings"] = {{"unmeasured_pods", unmeasured},
                     {"pods_above_current_gpu", above},
                     {"current_gpu_memory_mib", plan.current.memory.value},
                     {"pods_stopped_without_end", stopped},
                     {"current_gpu", plan.options.current_gpu_warnings},
                     {"flat_without_cache_metrics", plan.preallocated.flat_without_metrics}};
  }
  {
    json servers = json::array();
    for (const PreallocatedServer& s : plan.preallocated.servers) {
      json row = {{"pod", s.pod},
                  {"engine", s.engine},
                  {"model", s.model},
                  {"sized", s.sized},
                  {"why_kept", s.why},
                  {"reserved_mib", s.reserved_mib},
                  {"kv_cache_mib", s.kv_cache_mib ? json(*s.kv_cache_mib) : json(nullptr)},
                  {"kv_cache_source", s.kv_cache_source},
                  {"kv_usage_quantile", s.kv_usage_quantile},
                  {"kv_usage_peak", s.kv_usage_peak},
                  {"new_kv_cache_mib", s.new_kv_cache_mib},
                  {"need_mib", s.need_mib},
                  {"replay", {{"samples", s.samples}, {"samples_kv_above_new_cache", s.samples_above}}}};
      // The engine's setting on the target and on the model the mixed fleet gives it.
      const auto pod = std::find(plan.pod_names.begin(), plan.pod_names.end(), s.pod);
      if (s.sized) {
        row["gpu_memory_utilization"] = {
            {plan.target.id, GpuMemoryUtilization(s.need_mib, static_cast<double>(plan.target.memory.value))}};
        if (pod != plan.pod_names.end() && plan.memory_cap_mib.size() == plan.pod_names.size())
          row["memory_cap_mib"] = plan.memory_cap_mib[static_cast<std::size_t>(pod - plan.pod_names.begin())];
      }
      servers.push_back(std::move(row));
    }
    j["preallocated_servers"] = servers;
  }
  // What Prometheus warned of while the telemetry was read ("partial result: ..."): the plan
  // may rest on partial data. Present (maybe empty) when the telemetry came from Prometheus.
  if (plan.queries) {
    json notices = json::array();
    for (const QueryNotice& n : plan.queries->notices)
      notices.push_back({{"query", n.query}, {"kind", n.kind}, {"warning", n.text}});
    j["prometheus_warnings"] = std::move(notices);
  }
  j["workload_replay"] = nullptr;
  if (plan.workload_replay)
    j["workload_replay"] = {{"memory_overflows", plan.workload_replay->memory_overflows},
                            {"max_collision_share", plan.workload_replay->max_collision_share},
                            {"safe", plan.workload_replay->safe}};
  j["mig_isolation"] = nullptr;
  if (plan.mig) {
    json assignments = json::array();
    for (const MigAssignment& a : plan.mig->assignments)
      assignments.push_back({{"pod", a.workload},
                             {"gpu", a.gpu},
                             {"profile", a.profile.empty() ? json(nullptr) : json(a.profile)},
                             {"resource", a.resource.empty() ? json(nullptr) : json(a.resource)}});
    j["mig_isolation"] = {{"gpus", plan.mig->gpus},
                          {"lower_bound", plan.mig->lower_bound},
                          {"optimal", plan.mig->optimal},
                          {"gap", plan.mig->gap},
                          {"too_big", plan.mig->too_big},
                          {"usd_per_month", plan.mig_usd_per_month},
                          {"replay_pods_exceeding_instance_memory", plan.mig_pods_exceeding},
                          {"configs", plan.mig->configs},
                          {"assignments", assignments}};
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string ProfilesToJson(const std::vector<PodProfile>& profiles, const std::vector<ContainerProfile>& containers,
                           const std::vector<std::string>& skipped, const std::string& source, double step_s) {
  json pods = json::array();
  double allocated = 0, used = 0;
  for (const PodProfile& p : profiles) {
    json e = ToJson(p);
    e["pod"] = p.pod;
    pods.push_back(std::move(e));
    allocated += p.gpu_hours_allocated;
    used += p.gpu_hours_used;
  }
  json j = {{"schema_version", 1},
            {"source", source},
            {"step_s", step_s},
            {"pods", pods},
            {"containers", ToJson(containers)},
            {"skipped", skipped},
            {"totals",
             {{"pods", profiles.size()},
              {"gpu_hours_allocated", allocated},
              {"gpu_hours_used", used},
              {"gpu_hours_wasted", allocated - used}}}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace gpufit

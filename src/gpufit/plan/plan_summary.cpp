#include "gpufit/plan/plan_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <vector>

#include "gpufit/core/text.h"

namespace gpufit {
namespace {

using nlohmann::json;

constexpr double kHoursPerMonth = 730;

double Num(const json& j, const char* key, double otherwise = 0) {
  if (!j.is_object()) return otherwise;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : otherwise;
}

const json& Get(const json& j, const char* key) {
  static const json null_json;
  if (!j.is_object()) return null_json;
  const auto it = j.find(key);
  return it == j.end() ? null_json : *it;
}

std::string Str(const json& j, const char* key) {
  const json& v = Get(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// Thousands separators without a locale: 1234567 -> 1,234,567.
std::string Grouped(double v) {
  std::string digits = std::to_string(std::llabs(std::llround(v)));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return (v < -0.5 ? "-" : "") + digits;
}
std::string Dollars(double v) { return "$" + Grouped(v); }

struct Row {
  std::string strategy, unit = "usd_per_month", basis;
  std::optional<double> before, after;
  double saved = 0;
  // The backtest's verdict (backtest/status.h) for the strategies it replays; "not backtested"
  // for the others (their figures are not a prediction about later data).
  std::string status = "not backtested";
};

// The verdict of `strategy` in the plan's backtest section; "not tested" without one (nothing
// replayed it), for every strategy alike.
std::string StatusOf(const json& plan, const char* strategy) {
  const json& s = Get(Get(Get(plan, "backtest"), "status"), strategy);
  return s.is_object() ? Str(s, "status") : "not tested";
}
std::string WhyOf(const json& plan, const char* strategy) {
  return Str(Get(Get(Get(plan, "backtest"), "status"), strategy), "why");
}
bool Recommendable(const std::string& status) { return status == "held" || status == "not backtested"; }

// "2 x l4, 30 x a100-80gb" of a fleet plan's gpus_by_model, cheapest model first as listed.
// Today's GPUs by model: "4 x a100-80gb", or "2 x a100-80gb + 2 x h100-80gb" for a mixed fleet.
std::string TodaysGpus(const json& plan) {
  std::string out;
  for (const json& m : Get(plan, "current_gpus"))
    out += fmt::format("{}{} x {}", out.empty() ? "" : " + ", Num(m, "gpus"), Str(m, "id"));
  if (out.empty())
    out = fmt::format("{} x {}", Num(Get(plan, "totals"), "gpus_before"), Str(Get(plan, "current_gpu"), "id"));
  return out;
}

std::string FleetModels(const json& fleet) {
  std::vector<std::string> parts;
  for (const auto& [model, n] : Get(fleet, "gpus_by_model").items())
    parts.push_back(fmt::format("{} x {}", n.get<std::size_t>(), model));
  if (!Get(fleet, "kept_on_current_gpu").empty())
    parts.push_back(fmt::format("{} pods kept as today", Get(fleet, "kept_on_current_gpu").size()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

void ColocationRow(const json& plan, std::vector<Row>& rows) {
  const json& t = Get(plan, "totals");
  if (!t.is_object()) return;
  const json& fleet = Get(plan, "fleet");
  if (fleet.is_object() && fleet.value("recommended", false)) {  // the mixed fleet (plan/fleet_plan.h)
    const double before = Num(t, "usd_per_month_before"), after = Num(fleet, "usd_per_month");
    rows.push_back({"co-location and right-sizing", "usd_per_month",
                    fmt::format("{} GPUs of today against the mixed fleet's {} ({}), on-demand prices",
                                Num(t, "gpus_before"), Num(fleet, "gpus"), FleetModels(fleet)),
                    before, after, before - after, StatusOf(plan, "fleet")});
    return;
  }
  const double before = Num(t, "usd_per_month_before"), after = Num(t, "usd_per_month_after");
  const std::string gpu = Str(Get(plan, "target_gpu"), "id");
  rows.push_back({"co-location and right-sizing", "usd_per_month",
                  fmt::format("{} GPUs of today against the plan's {} ({}), on-demand prices", Num(t, "gpus_before"),
                              Num(t, "gpus_after"), gpu),
                  before, after, before - after, StatusOf(plan, "colocation")});
}

void InferenceRow(const json& plan, std::vector<Row>& rows) {
  const json& services = Get(Get(plan, "inference"), "services");
  if (!services.is_array() || services.empty()) return;
  double before = 0, after = 0;
  std::size_t n = 0;
  for (const json& s : services) {
    const double duration = Num(s, "duration_s");
    if (duration <= 0) continue;
    std::optional<double> peak, ours;
    for (const json& p : Get(s, "policies")) {
      if (p.value("policy", "") == "static peak") peak = Num(p, "cost_usd");
      if (p.value("policy", "") == "gpufit") ours = Num(p, "cost_usd");
    }
    if (!peak || !ours) continue;
    const double scale = kHoursPerMonth * 3600 / duration;
    before += *peak * scale, after += *ours * scale, ++n;
  }
  if (n == 0) return;
  // The schedule is replayed on the requests it was fitted to: in-sample, so not tested here
  // (`gpufit inference backtest` tests it on days it did not see).
  rows.push_back({"inference replicas", "usd_per_month",
                  fmt::format("{} services: replicas held at the trace's peak against gpufit's schedule, each "
                              "replayed on the service's requests and scaled from the trace's length to 730 h",
                              n),
                  before, after, before - after, "not tested"});
}

void AncillaryRows(const json& plan, std::vector<Row>& rows) {
  const json& a = Get(plan, "ancillary");
  if (!a.is_object()) return;
  double before = 0, after = 0;
  std::size_t n = 0;
  for (const json& c : Get(a, "containers")) {
    const json &now = Get(c, "usd_per_month_now"), &rec = Get(c, "usd_per_month_recommended");
    if (!now.is_number() || !rec.is_number()) continue;
    before += now.get<double>(), after += rec.get<double>(), ++n;
  }
  if (n > 0)
    rows.push_back({"containers", "usd_per_month",
                    fmt::format("{} containers' CPU and memory requests now against the recommended, at the nodes' "
                                "rates (a container whose request should grow counts as a cost)",
                                n),
                    before, after, before - after});
  double agents = 0;
  for (const json& d : Get(a, "duplicated_agents")) agents += Num(d, "usd_per_month_saving");
  if (agents > 0)
    rows.push_back({"duplicated agents", "usd_per_month", "one copy of each agent kind per node", {}, {}, agents});
  const double cache = Num(Get(a, "model_loading"), "cache_usd_per_month_saving");
  if (cache > 0)
    rows.push_back({"model cache",
                    "usd_per_month",
                    "GPU time no longer spent loading models, with a node-local cache",
                    {},
                    {},
                    cache});
}

void TrainingRow(const json& plan, std::vector<Row>& rows) {
  const json& t = Get(Get(plan, "training"), "totals");
  if (!t.is_object()) return;
  const double before = Num(t, "expected_on_demand_cost_usd"), after = Num(t, "expected_recommended_cost_usd");
  rows.push_back({"training on spot", "usd_per_run",
                  fmt::format("{} jobs, expected cost of one run each, all on-demand against the recommendation "
                              "(not in the monthly sums)",
                              Get(Get(plan, "training"), "jobs").size()),
                  before, after, before - after});
}

// The summary's actions in three lists: recommended (held, or outside the backtest),
// provisional (held on the splits, too little history to prove it) and not recommended (did
// not hold, or not tested).
struct ActionLists {
  std::vector<std::string> recommended, provisional, not_recommended;
};

// "N GPUs of target", or "N GPUs (G of target, the rest for the K pods too big for it or kept
// on their GPU)" when not every GPU of the plan is the target: the count is every GPU after.
std::string GpusOfTarget(const json& plan) {
  const json& t = Get(plan, "totals");
  const std::size_t groups = Get(plan, "groups").is_array() ? Get(plan, "groups").size() : 0;
  const auto after = static_cast<std::size_t>(Num(t, "gpus_after"));
  const std::string target = Str(Get(plan, "target_gpu"), "id");
  if (after <= groups) return fmt::format("{} GPUs of {}", after, target);
  return fmt::format("{} GPUs ({} of {}; {} for pods too big for it or kept on their own GPU)", after, groups, target,
                     after - groups);
}

ActionLists Actions(const json& plan, const std::vector<Row>& rows) {
  // Order: the monthly savings, largest first; then training's, per run (not comparable with
  // a month); then lending (no dollar figure); last the MIG alternative.
  enum Tier { kMonthly, kPerRun, kLending, kAlternative };
  struct Action {
    Tier tier;
    double usd;
    std::string text;
    std::string status = "not backtested";
    std::string why{};
  };
  std::vector<Action> actions;
  const json& t = Get(plan, "totals");
  const json& fleet = Get(plan, "fleet");
  const bool fleet_recommended = fleet.is_object() && fleet.value("recommended", false);
  const auto verdict = [&](const char* strategy) {
    const std::string status = StatusOf(plan, strategy);
    return status == "held" ? "; the backtest held on telemetry the plan never saw" : std::string();
  };
  if (t.is_object() && fleet.is_object() && Get(fleet, "backtest_held").is_boolean() &&
      !Get(fleet, "backtest_held").get<bool>())
    actions.push_back(
        Action{kAlternative, 0,
               fmt::format("the mixed fleet ({}: {} per month), whose backtest did NOT hold ({}).", FleetModels(fleet),
                           Dollars(Num(fleet, "usd_per_month")), Str(fleet, "backtest_failure")),
               "did not hold"});
  if (t.is_object() && fleet_recommended) {
    const double saved = Num(t, "usd_per_month_before") - Num(fleet, "usd_per_month");
    if (saved > 0.5)
      actions.push_back(
          Action{kMonthly, saved,
                 fmt::format("Move the pods to {} GPUs ({}) instead of {}: {} per month saved{}.", Num(fleet, "gpus"),
                             FleetModels(fleet), TodaysGpus(plan), Dollars(saved), verdict("fleet")),
                 StatusOf(plan, "fleet"), WhyOf(plan, "fleet")});
    std::size_t shared = 0;
    for (const json& g : Get(plan, "groups"))
      if (Get(g, "pods").size() > 1) ++shared;
    const double refused = Num(fleet, "pods_refused_on_target");
    actions.push_back(Action{
        kAlternative, 0,
        fmt::format("Same model only: co-locate the pods on {} ({} of them shared): {} per month{}.",
                    GpusOfTarget(plan), shared, Dollars(Num(t, "usd_per_month_after")),
                    refused > 0 ? fmt::format(" ({} pods would run slower there than the mixed fleet allows)", refused)
                                : std::string()),
        StatusOf(plan, "colocation"), WhyOf(plan, "colocation")});
  } else if (t.is_object() && Num(t, "gpus_after") < Num(t, "gpus_before")) {
    std::size_t shared = 0;
    for (const json& g : Get(plan, "groups"))
      if (Get(g, "pods").size() > 1) ++shared;
    const double refused = fleet.is_object() ? Num(fleet, "pods_refused_on_target") : 0;
    actions.push_back(Action{
        kMonthly, Num(t, "usd_per_month_saved"),
        fmt::format("Co-locate the pods on {} instead of {} ({} of them shared): {} per month saved{}{}.",
                    GpusOfTarget(plan), Num(t, "gpus_before"), shared, Dollars(Num(t, "usd_per_month_saved")),
                    verdict("colocation"),
                    refused > 0 ? fmt::format("; {} pods would run slower there than the mixed fleet allows", refused)
                                : std::string()),
        StatusOf(plan, "colocation"), WhyOf(plan, "colocation")});
  }
  for (const Row& r : rows) {
    if (r.saved <= 0.5 || r.strategy == "co-location and right-sizing") continue;
    std::string text;
    if (r.strategy == "inference replicas")
      text = fmt::format(
          "Scale the inference services by gpufit's replica schedule (the autoscaler manifests): {} per month.",
          Dollars(r.saved));
    else if (r.strategy == "containers")
      text = fmt::format("Set the containers' CPU and memory requests as recommended: {} per month.", Dollars(r.saved));
    else if (r.strategy == "duplicated agents")
      text = fmt::format("Keep one copy of each duplicated node agent: {} per month.", Dollars(r.saved));
    else if (r.strategy == "model cache")
      text = fmt::format("Add a node-local model cache: {} per month of GPU time.", Dollars(r.saved));
    else if (r.strategy == "training on spot") {
      std::size_t spot = 0, all = 0;
      for (const json& j : Get(Get(plan, "training"), "jobs")) {
        ++all;
        if (j.value("recommendation", "").find("spot") != std::string::npos) ++spot;
      }
      text = fmt::format(
          "Run {} of the {} training jobs on spot with checkpoints at their Young/Daly interval: {} saved per run.",
          spot, all, Dollars(r.saved));
    }
    const std::string why = r.strategy == "inference replicas"
                                ? "replayed on the requests it was fitted to; `gpufit inference backtest` on a "
                                  "multi-day request log tests it on days it did not see"
                                : "";
    if (!text.empty()) actions.push_back({r.unit == "usd_per_run" ? kPerRun : kMonthly, r.saved, text, r.status, why});
  }
  const json& tm = Get(Get(plan, "ancillary"), "time_multiplexing");
  if (Num(tm, "gpus_lent") > 0 && Get(tm, "night_window").is_object()) {
    actions.push_back({kLending, 0,
                       fmt::format("Lend {} idle GPUs to training from {} UTC for {} h a night.", Num(tm, "gpus_lent"),
                                   Str(tm["night_window"], "start_utc"), Num(tm["night_window"], "hours")),
                       StatusOf(plan, "lending"), WhyOf(plan, "lending")});
  }
  const json& mig = Get(plan, "mig_isolation");
  if (mig.is_object())
    actions.push_back({kAlternative, 0,
                       fmt::format("With hardware isolation (MIG) instead of time-slicing: {} GPUs, {} per month.",
                                   Num(mig, "gpus"), Dollars(Num(mig, "usd_per_month"))),
                       StatusOf(plan, "mig"), WhyOf(plan, "mig")});
  std::stable_sort(actions.begin(), actions.end(),
                   [](const Action& a, const Action& b) { return a.tier != b.tier ? a.tier < b.tier : a.usd > b.usd; });
  ActionLists out;
  for (Action& a : actions) {
    if (Recommendable(a.status)) {
      out.recommended.push_back(std::move(a.text));
    } else if (a.status == "provisional") {
      out.provisional.push_back(a.text + (a.why.empty() ? "" : " Why provisional: " + a.why + "."));
    } else {
      std::string text = a.text;
      if (!text.empty() && text.front() >= 'A' && text.front() <= 'Z' && a.status != "did not hold")
        text.front() = static_cast<char>(text.front() - 'A' + 'a');
      out.not_recommended.push_back(fmt::format("{}: {}{}", a.status == "did not hold" ? "Did not hold" : "Not tested",
                                                text, a.why.empty() ? "" : " (" + a.why + ")"));
    }
  }
  return out;
}

struct Rollup {
  double pods = 0, gpus_shared = 0, peak = 0, duty_weighted = 0, running = 0, used = 0, allocated = 0, current = 0,
         right_sized = 0;
};

json Rollups(const json& plan) {
  std::map<std::string, Rollup> by_ns, by_workload;
  json workload_of = json::object();
  bool from_pods_file = false, inferred = false;
  for (const json& p : Get(plan, "pods")) {
    const std::string pod = p.value("pod", "");
    const std::size_t slash = pod.find('/');
    const std::string ns = slash == std::string::npos ? "(no namespace)" : pod.substr(0, slash);
    std::string workload;
    if (Get(p, "workload").is_string()) {
      workload = p["workload"].get<std::string>(), from_pods_file = true;
    } else {
      workload = WorkloadFromPodName(pod), inferred = true;
    }
    workload_of[pod] = workload;
    const json& prof = Get(p, "profile");
    const json& rs = Get(p, "right_sizing");
    const double running = Num(prof, "running_samples");
    const double current = Num(rs, "usd_per_month_current");
    const double right =
        Get(rs, "usd_per_month_recommended").is_number() ? Num(rs, "usd_per_month_recommended") : current;
    for (Rollup* r : {&by_ns[ns], &by_workload[workload]}) {
      r->pods += 1;
      if (Get(p, "group").is_number()) {
        const json& g = Get(plan, "groups")[p["group"].get<std::size_t>()];
        if (Get(g, "pods").size() > 1) r->gpus_shared += 1;
      }
      r->peak = std::max(r->peak, Num(Get(prof, "fb_used_mib"), "peak"));
      r->duty_weighted += Num(Get(prof, "gpu_util_pct"), "mean") * running;
      r->running += running;
      r->used += Num(prof, "gpu_hours_used");
      r->allocated += Num(prof, "gpu_hours_allocated");
      r->current += current;
      r->right_sized += right;
    }
  }
  const auto rows = [](const std::map<std::string, Rollup>& m) {
    std::vector<std::pair<std::string, Rollup>> v(m.begin(), m.end());
    std::stable_sort(v.begin(), v.end(),
                     [](const auto& a, const auto& b) { return a.second.current > b.second.current; });
    json out = json::array();
    for (const auto& [key, r] : v)
      out.push_back({{"key", key},
                     {"pods", static_cast<std::size_t>(r.pods)},
                     {"gpus_before", static_cast<std::size_t>(r.pods)},
                     {"gpus_shared", static_cast<std::size_t>(r.gpus_shared)},
                     {"peak_fb_used_mib", r.peak},
                     {"mean_duty_pct", r.running > 0 ? r.duty_weighted / r.running : 0},
                     {"gpu_hours_used", r.used},
                     {"gpu_hours_allocated", r.allocated},
                     {"usd_per_month_current", r.current},
                     {"usd_per_month_right_sized", r.right_sized}});
    return out;
  };
  std::string basis = from_pods_file && !inferred ? "each pod's owner in the pods file (plan.json pods[].workload)"
                      : from_pods_file
                          ? "the pods file's owners; pods it lacks by their names (Deployment and StatefulSet naming)"
                          : "the pods' names (Deployment \"<name>-<hash>-<suffix>\" and StatefulSet "
                            "\"<name>-<ordinal>\" naming); give --pods for their real owners";
  return {{"by_namespace", rows(by_ns)},
          {"by_workload", rows(by_workload)},
          {"workload_of", std::move(workload_of)},
          {"workload_basis", basis}};
}

}  // namespace

std::string WorkloadFromPodName(std::string_view pod) {
  // By hand, not std::regex: GCC 12 warns falsely inside <regex> at -O1 (-Wmaybe-uninitialized).
  const auto lower_alnum = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
  };
  const std::string_view name = pod.substr(0, pod.find_first_of("[@"));
  const std::size_t last = name.rfind('-');
  if (last == std::string_view::npos || last == 0) return std::string(name);
  const std::string_view rest = name.substr(0, last), suffix = name.substr(last + 1);
  const std::size_t before = rest.rfind('-');
  if (suffix.size() == 5 && lower_alnum(suffix) && before != std::string_view::npos && before > 0) {
    const std::string_view hash = rest.substr(before + 1);
    if (hash.size() <= 10 && lower_alnum(hash)) return std::string(rest.substr(0, before));  // Deployment
  }
  if (!suffix.empty() && std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::string(rest);  // StatefulSet ordinal
  return std::string(name);
}

std::string PlanSummaryJson(std::string_view plan_json) {
  const json plan = json::parse(plan_json, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) throw std::invalid_argument("summary: the plan is not a JSON object");
  std::vector<Row> rows;
  ColocationRow(plan, rows);
  InferenceRow(plan, rows);
  AncillaryRows(plan, rows);
  TrainingRow(plan, rows);
  // The headline counts what is recommended: strategies that held, and those outside the
  // backtest; a provisional or failed strategy's saving is reported apart, not promised.
  double before = 0, after = 0, saved = 0, provisional = 0;
  json strategies = json::array();
  for (const Row& r : rows) {
    if (r.unit == "usd_per_month") {
      if (Recommendable(r.status)) {
        saved += r.saved;
      } else if (r.status == "provisional") {
        provisional += r.saved;
      }
      if (r.before && r.after) before += *r.before;
    }
    strategies.push_back({{"strategy", r.strategy},
                          {"unit", r.unit},
                          {"usd_before", r.before ? json(*r.before) : json(nullptr)},
                          {"usd_after", r.after ? json(*r.after) : json(nullptr)},
                          {"usd_saved", r.saved},
                          {"status", r.status},
                          {"basis", r.basis}});
  }
  after = before - saved;  // savings-only rows lower the total after, too
  ActionLists actions = Actions(plan, rows);
  json warnings = json::array();
  const json& w = Get(plan, "warnings");
  if (const json& above = Get(w, "pods_above_current_gpu"); above.is_array() && !above.empty())
    warnings.push_back(fmt::format(
        "{} pods peak above the {} MiB of {}, the GPU they are assumed to run on today (the largest at {} MiB): the "
        "telemetry contradicts that premise; name the GPU they run on with --current-gpu.",
        above.size(), Num(w, "current_gpu_memory_mib"), Str(Get(plan, "current_gpu"), "id"),
        Grouped(std::accumulate(above.begin(), above.end(), 0.0,
                                [](double m, const json& a) { return std::max(m, Num(a, "peak_fb_used_mib")); }))));
  if (const json& flat = Get(w, "flat_without_cache_metrics"); flat.is_array() && !flat.empty())
    warnings.push_back(fmt::format(
        "{} pods hold 80% or more of their GPU, flat: servers that pre-allocate (vLLM, TGI, TensorRT-LLM) whose "
        "cache metrics are missing, so they are kept whole; scrape vllm:kv_cache_usage_perc and "
        "vllm:cache_config_info to size them (plan.json warnings.flat_without_cache_metrics).",
        flat.size()));
  if (const json& c = Get(w, "current_gpu"); c.is_array())
    for (const json& line : c) warnings.push_back(line.get<std::string>() + ".");
  if (const json& u = Get(w, "unmeasured_pods"); u.is_array() && !u.empty())
    warnings.push_back(fmt::format(
        "{} pods read 0 MiB at every sample: unmeasured (a CUDA context alone holds hundreds of MiB), so they keep "
        "their GPU, alone, and get no profile; check their DCGM series (plan.json warnings.unmeasured_pods).",
        u.size()));
  if (const json& st = Get(w, "pods_stopped_without_end"); st.is_array() && !st.empty())
    warnings.push_back(fmt::format(
        "{} pods' samples stop before the window ends with no recorded end: they are taken as ended there; if a "
        "scrape lost them instead, the plan misses their later use (give kube_pod_completion_time rows or --pods).",
        st.size()));
  json status = json::object();
  if (Get(Get(plan, "backtest"), "status").is_object()) status = plan["backtest"]["status"];
  json out = {{"usd_per_month_before", before},
              {"usd_per_month_after", after},
              {"usd_per_month_saved", saved},
              {"saved_pct", before > 0 ? json(saved / before * 100) : json(nullptr)},
              {"usd_per_month_provisional", provisional},
              {"basis",
               "on-demand prices (the plan's prices section), 730-hour month; training per run, apart; "
               "only strategies that held (or that the backtest does not replay) are counted"},
              {"status", status},
              {"warnings", warnings},
              {"strategies", std::move(strategies)},
              {"actions", actions.recommended},
              {"provisional", actions.provisional},
              {"not_recommended", actions.not_recommended},
              {"rollups", Rollups(plan)}};
  return out.dump();
}

std::string PlanPodsCsv(std::string_view plan_json) {
  const json plan = json::parse(plan_json, nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) throw std::invalid_argument("csv: the plan is not a JSON object");
  const auto field = [](const json& v) -> std::string {
    if (v.is_null()) return "";
    std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  };
  std::string csv =
      "pod,namespace,workload,current_gpu,recommended_gpu,required_mib,peak_fb_used_mib,p99_fb_used_mib,"
      "mean_gpu_util_pct,p95_gpu_util_pct,idle_share,gpu_hours_allocated,gpu_hours_used,group,"
      "usd_per_month_current,usd_per_month_recommended\r\n";
  for (const json& p : Get(plan, "pods")) {
    const std::string pod = Str(p, "pod");
    const std::size_t slash = pod.find('/');
    const json &prof = Get(p, "profile"), &rs = Get(p, "right_sizing");
    const json &fb = Get(prof, "fb_used_mib"), &util = Get(prof, "gpu_util_pct");
    const json row[] = {pod,
                        slash == std::string::npos ? json("") : json(pod.substr(0, slash)),
                        Get(p, "workload").is_string() ? p["workload"] : json(WorkloadFromPodName(pod)),
                        Get(rs, "current_gpu"),
                        Get(rs, "recommended_gpu"),
                        Get(rs, "required_mib"),
                        Get(fb, "peak"),
                        Get(fb, "p99"),
                        Get(util, "mean"),
                        Get(util, "p95"),
                        Get(prof, "idle_share"),
                        Get(prof, "gpu_hours_allocated"),
                        Get(prof, "gpu_hours_used"),
                        Get(p, "group"),
                        Get(rs, "usd_per_month_current"),
                        Get(rs, "usd_per_month_recommended")};
    for (std::size_t i = 0; i < std::size(row); ++i) csv += (i ? "," : "") + field(row[i]);
    csv += "\r\n";
  }
  return csv;
}

std::string PlanSummaryLead(std::string_view summary_json) {
  const json s = json::parse(summary_json);
  std::string md = fmt::format("**Saving: {} per month", Dollars(Num(s, "usd_per_month_saved")));
  if (s["saved_pct"].is_number()) md += fmt::format(" ({:.1f}%)", s["saved_pct"].get<double>());
  md += fmt::format("**: {} → {} per month", Dollars(Num(s, "usd_per_month_before")),
                    Dollars(Num(s, "usd_per_month_after")));
  std::vector<std::string> parts;
  for (const json& r : s["strategies"])
    if (r["unit"] == "usd_per_month" && std::abs(Num(r, "usd_saved")) >= 0.5 &&
        Recommendable(r.value("status", std::string("not backtested"))))
      parts.push_back(fmt::format("{} {}", r["strategy"].get<std::string>(), Dollars(Num(r, "usd_saved"))));
  if (!parts.empty()) md += " (" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
  md += ".\n\n";
  if (s.contains("warnings"))
    for (const json& w : s["warnings"]) md += fmt::format("**Warning:** {}\n\n", w.get<std::string>());
  if (s.contains("usd_per_month_provisional") && Num(s, "usd_per_month_provisional") >= 0.5)
    md += fmt::format("Provisional, not in the saving until proven on held-out days: {} per month more.\n\n",
                      Dollars(Num(s, "usd_per_month_provisional")));
  const auto list = [&](const char* title, const char* key) {
    if (!s.contains(key) || s[key].empty()) return;
    md += fmt::format("{}:\n", title);
    int i = 0;
    for (const json& a : s[key]) md += fmt::format("{}. {}\n", ++i, a.get<std::string>());
    md += "\n";
  };
  list("Recommended", "actions");
  list("Provisional", "provisional");
  list("Not recommended", "not_recommended");
  return md;
}

std::string PlanRollupsMarkdown(std::string_view summary_json, std::size_t top) {
  const json s = json::parse(summary_json);
  std::string md;
  const auto table = [&](const char* title, const json& rows) {
    if (!rows.is_array() || rows.empty()) return;
    md += fmt::format(
        "\n## By {}\n\n| {} | pods | on shared GPUs | peak MiB | mean duty % | GPU-h used / held | USD/month now | "
        "right-sized alone |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
        title, title);
    for (std::size_t i = 0; i < std::min(top, rows.size()); ++i) {
      const json& r = rows[i];
      md += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.1f} / {:.1f} | {} | {} |\n",
                        MarkdownText(r["key"].get<std::string>()), Num(r, "pods"), Num(r, "gpus_shared"),
                        Grouped(Num(r, "peak_fb_used_mib")), Num(r, "mean_duty_pct"), Num(r, "gpu_hours_used"),
                        Num(r, "gpu_hours_allocated"), Dollars(Num(r, "usd_per_month_current")),
                        Dollars(Num(r, "usd_per_month_right_sized")));
    }
    if (rows.size() > top) md += fmt::format("\n{} more in plan.json `summary.rollups`.\n", rows.size() - top);
  };
  table("namespace", s["rollups"]["by_namespace"]);
  table("workload", s["rollups"]["by_workload"]);
  if (!md.empty()) md += fmt::format("\nWorkloads from {}.\n", s["rollups"]["workload_basis"].get<std::string>());
  return md;
}

}  // namespace gpufit

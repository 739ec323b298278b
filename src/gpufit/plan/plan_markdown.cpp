#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "gpufit/core/text.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit {
namespace {

template <class... Args>
void Out(std::string& s, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(s), f, std::forward<Args>(args)...);
}

// Why the conflict clique may be weaker than the greedy search would give (lower_bound.h).
std::string CliqueNote(const GpuLowerBound& b) {
  if (b.clique_search() == "skipped") return fmt::format(", not computed: {} pods are too many", b.clique_pods);
  if (b.clique_search() == "partial")
    return fmt::format(", a weaker bound: the search stopped at its work limit after {} of {} pods",
                       b.clique_seeds_tried, b.clique_pods);
  return "";
}

// The LP relaxation's part of the bound (lower_bound.h, lp_bound.h).
std::string LpNote(const GpuLowerBound& b) {
  if (b.lp_search() == "skipped") return "LP relaxation not computed (over 1,000 items, or no conflict graph)";
  if (b.lp_search() == "stopped")
    return fmt::format("LP relaxation >= {:.2f}, stopped at its limits: a weaker bound", b.lp_value);
  return fmt::format("LP relaxation {:.2f}", b.lp_value);
}

// Long pod names keep their head and their tail (where replicas differ); escaped as Markdown
// (MarkdownText: a name is input, and must not add markup to the report).
std::string Short(const std::string& pod) {
  return MarkdownText(pod.size() > 48 ? pod.substr(0, 30) + "…" + pod.substr(pod.size() - 14) : pod);
}

// Containers with cAdvisor data: usage against requests and limits (up to 30 rows).
std::string ContainersToMarkdown(const std::vector<ContainerProfile>& containers) {
  if (containers.empty()) return "";
  std::string s;
  Out(s, "\n## Containers (cAdvisor, kube-state-metrics)\n\n{} containers.\n\n", containers.size());
  Out(s,
      "| pod | container | CPU p95 | peak cores | request m | limit m | throttled p95 | memory peak MiB | "
      "request | limit |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  auto opt = [](const auto& v) { return v ? fmt::format("{}", v->value) : std::string("-"); };
  std::size_t rows = 0;
  for (const ContainerProfile& c : containers) {
    if (rows++ == 30) {
      Out(s, "\n{} more in the JSON.\n", containers.size() - 30);
      break;
    }
    Out(s, "| {} | {} | {:.2f} | {:.2f} | {} | {} | {:.0f}% | {:.0f} | {} | {} |\n", Short(c.pod),
        MarkdownText(c.container), c.cpu_cores.p95, c.cpu_cores.peak, opt(c.cpu_request), opt(c.cpu_limit),
        100 * c.cpu_throttled_ratio.p95, c.memory_working_set_mib.peak, opt(c.memory_request), opt(c.memory_limit));
  }
  return s;
}

// "Duty cycle from: FIELD for a, b; FIELD for the other n pods." Every pod's field is named:
// the most common one as "the other pods", the rest by pod.
std::string DutyFields(const Plan& plan) {
  std::map<std::string, std::vector<std::string>> pods_of;
  for (const PodProfile& p : plan.profiles) pods_of[p.util_field.empty() ? "unknown" : p.util_field].push_back(p.pod);
  if (pods_of.empty()) return "";
  const auto most = std::max_element(pods_of.begin(), pods_of.end(),
                                     [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  std::string s =
      "Duty cycle from (per device: MIG instances DCGM_FI_PROF_GR_ENGINE_ACTIVE, full GPUs that too where "
      "exported, else DCGM_FI_DEV_GPU_UTIL):";
  for (const auto& [field, pods] : pods_of) {
    if (field == most->first) continue;
    std::string names;
    for (const std::string& p : pods) names += (names.empty() ? "" : ", ") + p;
    s += fmt::format(" {} for {};", field, names);
  }
  s += fmt::format(" {} for {} {} pods.\n\n", most->first, pods_of.size() == 1 ? "all" : "the other",
                   most->second.size());
  return s;
}

}  // namespace

std::string PlanToMarkdown(const Plan& plan) {
  const PlanTotals& t = plan.totals;
  std::string s;
  Out(s, "# gpufit plan\n\n");
  Out(s, "Telemetry: {} ({} pods, {} samples every {:.0f} s, {:.1f} h).", MarkdownText(plan.source),
      plan.pod_names.size(), plan.samples, plan.step_s, plan.window_hours);
  if (!plan.skipped.empty()) Out(s, " Left out: {} (see telemetry.skipped in the JSON).", plan.skipped.size());
  if (plan.queries)
    Out(s, " Read in {} Prometheus requests ({} of {} queries split under the {:.0f} MiB answer cap{}); {}.",
        plan.queries->requests, plan.queries->split_queries, plan.queries->queries,
        static_cast<double>(plan.queries->max_answer_bytes) / (1 << 20),
        plan.queries->scope.empty() ? "" : ", scope " + plan.queries->scope, plan.queries->step_rule);
  if (plan.queries && !plan.queries->notices.empty()) {
    Out(s, "\n\n**Prometheus warned** while the telemetry was read (the plan may rest on partial data):\n");
    for (const QueryNotice& n : plan.queries->notices)
      Out(s, "\n- {} on query {}: {}", n.kind, MarkdownText(n.query), MarkdownText(n.text));
    Out(s, "\n");
  }
  if (!plan.ended.empty()) {
    std::size_t dropped = 0;
    for (const PodEnd& e : plan.ended) dropped += e.dropped_samples;
    if (dropped > 0) {
      Out(s,
          "\nDropped {} samples after the end of {} finished pod{} (dcgm-exporter keeps a finished pod's labels on "
          "its GPU for a while):",
          dropped, plan.ended.size(), plan.ended.size() == 1 ? "" : "s");
    } else {
      Out(s, "\n{} pod{} finished inside the window, at a known end:", plan.ended.size(),
          plan.ended.size() == 1 ? "" : "s");
    }
    std::size_t shown = 0;
    for (const PodEnd& e : plan.ended) {
      if (shown++ == 10) {
        Out(s, " and {} more (telemetry.ended in the JSON)", plan.ended.size() - 10);
        break;
      }
      Out(s, "{} {} ({} samples after {:.0f} s, {})", shown == 1 ? "" : ";", Short(e.pod), e.dropped_samples, e.end_s,
          MarkdownText(e.source));
    }
    Out(s, ".");
  }
  for (const ReservedGpu& r : plan.reserved_gpus) {
    Out(s, "\nGPU {}{}: {} MiB used outside any pod (peak), so {:.0f} MiB for pods; ", MarkdownText(r.reserved.gpu),
        r.reserved.host.empty() ? "" : " on " + MarkdownText(r.reserved.host), r.reserved.peak.value, r.capacity_mib);
    if (r.group)
      Out(s, "takes co-location GPU {} (below).", *r.group);
    else if (plan.current.id != plan.target.id)
      Out(s, "a {} of today's, not planned on (the plan is on {}).", plan.current.id, plan.target.id);
    else
      Out(s, "no planned group fits it.");
  }
  if (plan.options.current_gpu.empty() && plan.options.current_gpu_of.empty())
    Out(s, "\nThe pods are assumed to run on {} today (the telemetry names no GPU model; say --current-gpu).",
        plan.current.id);
  if (plan.mixed_current()) {
    std::map<std::string, std::size_t> pods;
    for (std::size_t i = 0; i < plan.pod_names.size(); ++i) ++pods[plan.current_gpu(i).id];
    Out(s, "\nThe pods run on several models today:");
    for (const auto& [id, n] : pods) Out(s, " {} pod{} on {};", n, n == 1 ? "" : "s", id);
    Out(s, " each is priced and right-sized from its own.");
  }
  Out(s,
      "\nCo-location target: {} ({} MiB, reserve {} MiB), collisions allowed on at most {:.2f}% of samples ({}).\n\n",
      plan.target.id, plan.target.memory.value, plan.options.reserve.value, 100 * plan.options.max_collision_share,
      plan.collision_limit_samples);
  Out(s, "{}", DutyFields(plan));
  {
    const FleetPlan& f = plan.fleet;
    const std::string verdict =
        f.Recommended(t.usd_per_month_after)
            ? "Chosen over the same model only: a mixed fleet (its verdict is in the backtest below)"
        : f.backtest_held == false
            ? fmt::format("Mixed fleet, not recommended: its backtest did NOT hold ({})", f.backtest_failure)
            : std::string("Mixed fleet, no cheaper than the same model only");
    Out(s,
        "## {}, {:.0f} USD per month ({} GPUs)\n\nEach pod on the cheapest of {} catalog "
        "models that holds it and its GPU's other pods under the same rules, its duty cycle scaled by its slowdown "
        "there (max of the BF16 and bandwidth ratios); {} latency-bound pods go to no slower model than today's. "
        "Same model only ({}): {:.0f} USD per month.\n\n| model | GPUs | of them shared | USD per month |\n"
        "|---|---:|---:|---:|\n",
        verdict, f.usd_per_month, f.gpus.size() + f.kept_gpus, f.candidates.size(), f.latency_bound_pods,
        plan.target.id, t.usd_per_month_after);
    for (const auto& [model, n] : f.GpusByModel()) {
      std::size_t shared = 0;
      double usd = 0;
      for (const FleetGpu& g : f.gpus) {
        if (g.model != model) continue;
        shared += g.pods.size() > 1;
        usd += g.usd_per_month;
      }
      Out(s, "| {} | {} | {} | {:.0f} |\n", model, n, shared, usd);
    }
    if (!f.kept.empty())
      Out(s, "| {} (kept as today) | {} | 0 | {:.0f} |\n", plan.mixed_current() ? "today's models" : plan.current.id,
          f.kept_gpus, f.usd_per_month_kept);
    if (!f.merged_pairs)
      Out(s, "\nMore than {} GPUs: no pair of GPUs was merged across models (its cost grows as the square).\n",
          kMaxMergeGpus);
    Out(s, "\nPer pod: plan.json `fleet.pods` (model, slowdown, and the cheaper model refused, with the reason).\n\n");
  }
  Out(s, "## Totals, same model only ({})\n\n", plan.target.id);
  if (plan.fleet.refused_on_target > 0)
    Out(s,
        "{} of the pods would not be admitted on {} by the mixed fleet's rules (slower than {} for a serving pod, or "
        "scaled duty over 100%): this plan does not check it.\n\n",
        plan.fleet.refused_on_target, plan.target.id, plan.mixed_current() ? "the pod's current GPU" : plan.current.id);
  Out(s, "| | before | after |\n|---|---:|---:|\n");
  {
    std::map<std::string, std::size_t> today;  // model -> GPUs
    for (std::size_t i = 0; i < plan.pod_names.size(); ++i) today[plan.current_gpu(i).id] += plan.gpus_of(i);
    std::string before;
    for (const auto& [id, n] : today) before += fmt::format("{}{} x {}", before.empty() ? "" : " + ", n, id);
    if (before.empty()) before = fmt::format("{} x {}", t.gpus_before, plan.current.id);
    Out(s, "| GPUs | {} | {} |\n", before, t.gpus_after);
  }
  Out(s, "| GPU-hours over the window | {:.1f} | {:.1f} |\n", t.gpu_hours_before, t.gpu_hours_after);
  Out(s, "| USD per month (on-demand) | {:.0f} | {:.0f} |\n", t.usd_per_month_before, t.usd_per_month_after);
  Out(s, "| mean duty cycle per GPU | {:.1f}% | {:.1f}% |\n\n", t.mean_duty_pct_before, t.mean_duty_pct_after);
  Out(s,
      "Lower bound: {} GPUs (per-sample L2 {}, conflict clique {}{}, {}{}); gap {} GPU(s). "
      "First-fit decreasing needs {}.\n",
      t.gpus_lower_bound, t.lower_bound.per_sample_l2, t.lower_bound.conflict_clique, CliqueNote(t.lower_bound),
      LpNote(t.lower_bound),
      plan.largest_replica_set > 1
          ? fmt::format(", replicas apart: {} replicas of one workload need as many GPUs", plan.largest_replica_set)
          : std::string(),
      t.gap_to_lower_bound(), t.gpus_first_fit_decreasing);
  Out(s, "Replay: {} memory overflows, worst collision share {:.2f}% -> {}.\n", plan.replay.memory_overflows,
      100 * plan.replay.max_collision_share, plan.replay.safe ? "safe" : "UNSAFE");
  if (plan.workload_replay) {
    const Replay& w = *plan.workload_replay;
    Out(s,
        "By workload (--pods; each replica slot carrying its workload's envelope, so any assignment of replicas to "
        "slots is covered): {} memory overflows, worst collision share {:.2f}% -> {}.{}\n",
        w.memory_overflows, 100 * w.max_collision_share, w.safe ? "safe" : "UNSAFE",
        w.safe ? "" : " The plan holds for these pods, not for every placement of their replicas.");
  }
  if (plan.options.robust) {
    Out(s,
        "Envelope for later data: a GPU keeps {:.0f} MiB free for one pod's peaks not seen yet (the {} of {} "
        "pooled peak surprises between the window's halves; --memory-risk {:g}) plus {:.0f} MiB for each other pod "
        "running beside it (several pods surprising at once, measured for 2 to 8 pods; at least 512 MiB, a CUDA "
        "context's worth, so no shared GPU is planned full), and each group collides on at most {:.2f}% of samples "
        "even if all its pods were busy at once.\n\n",
        plan.memory_margin_mib, plan.options.memory_risk == 0 ? std::string("largest") : "chosen quantile",
        plan.memory_surprises, plan.options.memory_risk, plan.group_margin.per_pod_mib,
        100 * plan.options.max_collision_share);
  } else {
    Out(s,
        "Envelope: in sample only (--envelope in-sample): nothing is kept for peaks the telemetry did not show.\n\n");
  }
  Out(s, "## Right-sizing (one pod per GPU, headroom {:.0f}%)\n\n", 100 * plan.options.headroom);
  Out(s,
      "| pod | current GPU | recommended GPU | peak MiB | p95 duty | idle | why |\n|---|---|---|---:|---:|---:|---|\n");
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    const RightSizing& r = plan.right_sizing[i];
    const PodProfile& p = plan.profiles[i];
    Out(s, "| {} | {} | {} | {:.0f} | {:.0f}% | {:.0f}% | {} |\n", Short(plan.pod_names[i]),
        MarkdownText(r.current_gpu), MarkdownText(r.recommended_gpu.value_or("none")), p.fb_used_mib.peak,
        p.gpu_util_pct.p95, 100 * p.idle_share, r.reason);
  }
  Out(s,
      "\n## Co-location on {} ({} GPUs)\n\n| GPU | pods | peak MiB | mean duty | collisions "
      "|\n|---:|---|---:|---:|---:|\n",
      plan.target.id, plan.replay.gpus.size());
  for (std::size_t g = 0; g < plan.replay.gpus.size(); ++g) {
    const GpuReplay& r = plan.replay.gpus[g];
    std::string names;
    for (std::size_t p : r.pods) names += (names.empty() ? "" : ", ") + Short(plan.pod_names[p]);
    Out(s, "| {} | {} | {:.0f} | {:.1f}% | {} |\n", g, names, r.peak_mib, r.mean_util_pct, r.collisions);
  }
  if (!plan.too_big.empty()) {
    Out(s, "\nToo big for {} (each gets its own right-sized GPU):", plan.target.id);
    for (std::size_t p : plan.too_big) {
      Out(s, " {} ({})", Short(plan.pod_names[p]),
          MarkdownText(plan.right_sizing[p].recommended_gpu.value_or(plan.current.id)));
    }
    Out(s, "\n");
  }
  if (!plan.multi_gpu.empty()) {
    Out(s,
        "\n## Pods on several GPUs or MIG instances (kept whole on {}, never shared)\n\n| pod | devices | why | "
        "recommendation |\n|---|---:|---|---|\n",
        plan.current.id);
    for (const MultiGpuPod& m : plan.multi_gpu)
      Out(s, "| {} | {} | {} | {} |\n", Short(m.pod), m.devices, m.evidence,
          m.ask_for_one ? m.ask_for_one->text : std::string("-"));
  }
  if (!plan.container_data) {
    Out(s,
        "\nGPU starvation by CPU: not judged, the telemetry has no container CPU (Prometheus with cAdvisor, or "
        "--containers).\n");
  }
  if (!plan.cpu_starvation.empty()) {
    Out(s,
        "\n## GPUs starved by CPU (kept on {}, one each)\n\n| pod | starved samples | CPU limit | cores used | GPU "
        "activity | recommended cores/GPU | activity now -> expected |\n|---|---:|---:|---:|---:|---:|---|\n",
        plan.current.id);
    for (const CpuStarvation& c : plan.cpu_starvation) {
      Out(s, "| {} | {} of {} ({:.0f}%) | {} | {:.2f} | {:.1f}% ({}) | {:g}{} | {:.1f}% -> {:.1f}% |\n",
          Short(c.pod_name), c.starved_samples, c.observed_samples, 100 * c.starved_share(),
          c.cpu_limit_cores > 0 ? fmt::format("{:g}", c.cpu_limit_cores) : std::string("none"), c.cpu_used_p50_starved,
          c.activity_p50_starved, c.activity_metric == kDcgmSmActive ? "SM active" : "GPU util", c.recommended_cores,
          c.capped ? " (capped)" : "", c.activity_mean_pct_now, c.activity_mean_pct_expected);
    }
    Out(s,
        "\nModel: while CPU-bound, GPU activity = k x cores (k: median over the starved samples); cores = 100% / k.\n");
  }
  if (plan.mig) {
    Out(s,
        "\n## Soft sharing or hardware isolation (MIG) on {}\n\n| | GPUs | USD/month | replay |\n|---|---:|---:|---|\n"
        "| soft sharing (co-location above) | {} | {:.0f} | {} |\n"
        "| MIG, one instance per pod ({}) | {} | {:.0f} | {} pods exceed their instance |\n",
        plan.target.id, plan.totals.gpus_after, plan.totals.usd_per_month_after, plan.replay.safe ? "safe" : "unsafe",
        plan.mig->optimal ? "optimal" : "time limit", plan.mig->gpus + plan.mig->too_big.size() + plan.kept_gpus(),
        plan.mig_usd_per_month, plan.mig_pods_exceeding);
    Out(s, "\nMIG layouts (mig-parted configs):");
    for (const auto& [name, profiles] : plan.mig->configs) {
      std::string list;
      for (const auto& [profile, count] : profiles)
        list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", profile, count);
      Out(s, " {} = {{{}}};", name, list);
    }
    Out(s, "\n");
  }
  return s + ContainersToMarkdown(plan.containers);
}

std::string ProfilesToMarkdown(const std::vector<PodProfile>& profiles, const std::vector<ContainerProfile>& containers,
                               const std::vector<std::string>& skipped, const std::string& source) {
  std::string s = fmt::format("# gpufit analyze\n\nTelemetry: {} ({} pods)\n\n", MarkdownText(source), profiles.size());
  s +=
      "| pod | mem peak | p99 | p95 | p50 MiB | duty peak | p99 | p95 | p50 % | idle | GPU-h alloc | used | wasted |\n";
  s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  double allocated = 0, used = 0;
  for (const PodProfile& p : profiles) {
    s += fmt::format(
        "| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f}% | {:.2f} | {:.2f} | "
        "{:.2f} |\n",
        Short(p.pod), p.fb_used_mib.peak, p.fb_used_mib.p99, p.fb_used_mib.p95, p.fb_used_mib.p50, p.gpu_util_pct.peak,
        p.gpu_util_pct.p99, p.gpu_util_pct.p95, p.gpu_util_pct.p50, 100 * p.idle_share, p.gpu_hours_allocated,
        p.gpu_hours_used, p.gpu_hours_wasted());
    allocated += p.gpu_hours_allocated;
    used += p.gpu_hours_used;
  }
  s += fmt::format("\nWaste: {:.1f} GPU-hours allocated, {:.1f} used, {:.1f} wasted ({:.0f}%).\n", allocated, used,
                   allocated - used, allocated > 0 ? 100 * (allocated - used) / allocated : 0.0);
  if (!skipped.empty()) {
    s += "\nLeft out:\n";
    for (const std::string& why : skipped) s += "- " + MarkdownText(why) + "\n";
  }
  return s + ContainersToMarkdown(containers);
}

}  // namespace gpufit

#include "gpufit/ingest/prometheus/telemetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/align.h"
#include "gpufit/ingest/dcgm_devices.h"
#include "gpufit/ingest/prometheus/containers.h"
#include "gpufit/ingest/prometheus/split.h"

namespace gpufit {
namespace {

// DCGM writes blank (unsupported) fields as sentinels at the top of the int64 range
// (dcgm-exporter README sample 9223372036854775794); formats.md (a).
constexpr double kDcgmBlankSentinel = 9223372036854775792.0;
// No GPU has 1 TiB of memory: larger is a unit mistake (as in telemetry_readers.cpp).
constexpr double kMaxPlausibleMiB = 1024.0 * 1024.0;

using Labels = std::map<std::string, std::string>;

std::string Label(const Labels& l, const char* a, const char* b = nullptr) {
  if (auto it = l.find(a); it != l.end() && !it->second.empty()) return it->second;
  if (b != nullptr)
    if (auto it = l.find(b); it != l.end()) return it->second;
  return "";
}

std::string Host(const Labels& l) { return Label(l, "Hostname", "hostname"); }

// A GPU or MIG instance, independent of the labels that may change over time.
std::string GpuIdentity(const Labels& l) {
  std::string id = Label(l, "UUID", "uuid");
  if (id.empty()) id = Host(l) + "/gpu" + Label(l, "gpu");
  if (const std::string gi = Label(l, "GPU_I_ID"); !gi.empty()) id += "/gi" + gi;
  return id;
}

std::string PodName(const Labels& l) { return PodKeyFromLabels(l); }

std::string Describe(const char* metric, const Labels& l) {
  return fmt::format("{}{{pod=\"{}\", UUID/gpu=\"{}\"}}", metric, PodName(l), GpuIdentity(l));
}

// DCGM's blank sentinels: no sample, skipped. As doubles the int64 blanks (2^63 - 16 to
// 2^63 - 1) are all 2^63; anything larger (1e308) is a value out of range, not a blank, and
// NaN and +/-Inf are errors too (NotFinite).
bool NoData(double v) { return v >= kDcgmBlankSentinel && v <= 9223372036854775808.0; }

// NaN, +Inf or -Inf in a DCGM series is an error naming the series and the time, as the same
// value in a telemetry CSV is ("'NaN' is not a finite number"): dropped in silence, the gap
// was filled from its neighbours and the plan made on samples nobody measured.
Result<void> NotFinite(const char* metric, const Labels& labels, double time_s, double v) {
  if (std::isfinite(v)) return {};
  return InvalidArgument(
      "{} at {}: value {} is not a finite number (a broken exporter or recording rule; a "
      "telemetry CSV with it is refused too)",
      Describe(metric, labels), time_s,
      std::isnan(v) ? "NaN"
      : v > 0       ? "+Inf"
                    : "-Inf");
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// One pod of a name: from its kube_pod_created value to its last kube_pod_created sample,
// cut at its end (ingest/kube/pod_ends.h) where one is known.
struct Life {
  double created = -kInf, last_seen = kInf;
  double end = kInf;
  std::string end_source;
  // The last sample time that is the pod's: a step whose window (t - step, t] began before
  // the end still holds the pod's own samples (`keep` = step - 1 ms on a grid, else 0).
  double Bound(double keep) const { return std::min(last_seen, end + keep); }
  PodEnd EndOf(const std::string& name, double keep) const {
    if (end + keep < last_seen) return {name, end, end_source, 0};
    return {name, last_seen, "kube_pod_created (the pod object's last sample)", 0};
  }
};
// Lives of each pod key, by creation.
using Lives = std::map<std::string, std::vector<Life>>;

Lives PodLives(const std::vector<PromSeries>& pod_created, const PodEnds& ends) {
  Lives lives;
  for (const PromSeries& s : pod_created) {
    const std::string pod = PodName(s.labels);
    if (pod.empty() || s.time_s.empty()) continue;
    double created = s.time_s.front();
    for (double v : s.value)
      if (std::isfinite(v)) created = std::min(created, v);
    lives[pod].push_back({.created = created, .last_seen = s.time_s.back(), .end = kInf, .end_source = ""});
  }
  // By creation; overlapping lives (one pod seen twice) merge.
  for (auto& [pod, list] : lives) {
    std::sort(list.begin(), list.end(), [](const Life& a, const Life& b) { return a.created < b.created; });
    std::vector<Life> merged;
    for (const Life& life : list) {
      if (!merged.empty() && life.created <= merged.back().last_seen)
        merged.back().last_seen = std::max(merged.back().last_seen, life.last_seen);
      else
        merged.push_back(life);
    }
    list = std::move(merged);
  }
  // Each life ends at the first end inside it; a pod kube-state-metrics does not know has
  // one life, to its first end.
  for (const auto& [pod, list] : ends) {
    if (list.empty()) continue;
    auto it = lives.find(pod);
    if (it == lives.end()) {
      lives[pod].push_back(
          {.created = -kInf, .last_seen = kInf, .end = list.front().end_s, .end_source = list.front().source});
      continue;
    }
    for (Life& life : it->second) {
      const auto e = std::find_if(list.begin(), list.end(), [&](const KnownEnd& k) { return k.end_s >= life.created; });
      if (e != list.end() && e->end_s < life.last_seen) {
        life.end = e->end_s;
        life.end_source = e->source;
      }
    }
  }
  return lives;
}

// Which life of the pod name holds time t: 0 for the first (or when kube-state-metrics does
// not know the pod: its samples bound its life), k for the (k+1)-th pod of that name, -1
// outside every life; `after_end`: t follows life k's end (a finished pod's stale samples).
struct LifeAt {
  int life = -1;
  bool after_end = false;
};
LifeAt LifeOf(const Lives& lives, const std::string& pod, double t, double keep) {
  const auto it = lives.find(pod);
  if (it == lives.end()) return {0, false};
  const std::vector<Life>& list = it->second;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (t < list[k].created) break;
    if (t <= list[k].Bound(keep)) return {static_cast<int>(k), false};
    if (k + 1 == list.size() || t < list[k + 1].created) return {static_cast<int>(k), true};
  }
  return {-1, false};
}

std::string LifeName(const std::string& pod, int life) { return life == 0 ? pod : fmt::format("{}@{}", pod, life + 1); }

// Sample times dropped after each life's end, by (pod, life).
using Dropped = std::map<std::pair<std::string, int>, std::set<double>>;

// Samples of one metric per (pod, GPU identity).
using ByGpu = std::map<std::pair<std::string, std::string>, RawSeries>;

// The labels that most likely name the pod and its namespace among `label_names` (not the ones
// read now): dcgm-exporter 1.x's pod_name / pod_namespace first, then any other whose name holds
// the word, in name order; "" when none does.
struct PodLabelGuess {
  std::string pod, ns;
};
PodLabelGuess GuessPodLabels(const std::set<std::string>& label_names, const PodLabelNames& names) {
  const auto candidate = [&](const std::string& preferred, const std::string& word, const std::string& now) {
    if (preferred != now && label_names.count(preferred)) return preferred;
    for (const std::string& n : label_names)
      if (n != now && n.find(word) != std::string::npos && n.find("exported_") != 0 && n != "container_name") return n;
    return std::string();
  };
  return {.pod = candidate("pod_name", "pod", names.pod), .ns = candidate("pod_namespace", "namespace", names.ns)};
}

// DCGM series without a pod label: the GPUs, how many series, and their label names.
struct NoPod {
  std::set<std::string> gpus;
  std::size_t series = 0;
  std::set<std::string> label_names;
};

Result<void> Collect(const std::vector<PromSeries>& series, const char* metric, double scale, double max_value,
                     const Lives& lives, const std::optional<GridSpec>& grid, const PodLabelNames& names, ByGpu& out,
                     NoPod& no_pod, Dropped& dropped) {
  const double keep = grid ? grid->step_s - 1e-3 : 0.0;
  for (const PromSeries& s : series) {
    const std::string pod = PodKeyFromLabels(s.labels, names);
    const std::string gpu = GpuIdentity(s.labels);
    if (pod.empty()) {
      no_pod.gpus.insert(fmt::format("{} on {}", gpu, Host(s.labels).empty() ? "?" : Host(s.labels)));
      ++no_pod.series;
      for (const auto& [name, value] : s.labels)
        if (name != "__name__") no_pod.label_names.insert(name);
      continue;
    }
    for (std::size_t i = 0; i < s.time_s.size(); ++i) {
      const double v = s.value[i] * scale;
      if (Result<void> finite = NotFinite(metric, s.labels, s.time_s[i], s.value[i]); !finite) return finite;
      if (NoData(s.value[i])) continue;
      if (v < 0 || v > max_value)
        return InvalidArgument("{} at {}: value {} is out of range [0, {}]", Describe(metric, s.labels), s.time_s[i],
                               s.value[i], max_value / scale);
      if (grid && (s.time_s[i] < grid->start_s - grid->step_s / 2 ||
                   s.time_s[i] >= grid->start_s + (static_cast<double>(grid->samples) - 0.5) * grid->step_s))
        continue;  // outside the queried range
      const LifeAt life = LifeOf(lives, pod, s.time_s[i], keep);
      if (life.after_end) dropped[{pod, life.life}].insert(s.time_s[i]);
      if (life.life < 0 || life.after_end) continue;
      // A later pod of the same name (a recreated StatefulSet replica) is another pod.
      RawSeries& into = out[{LifeName(pod, life.life), gpu}];
      into.time_s.push_back(s.time_s[i]);
      into.value.push_back(static_cast<float>(v));
    }
  }
  return {};
}

}  // namespace

Result<Telemetry> TelemetryFromDcgmSeries(const std::vector<PromSeries>& fb_used,
                                          const std::vector<PromSeries>& gpu_util,
                                          const std::vector<PromSeries>& gr_engine_active,
                                          const std::vector<PromSeries>& sm_active,
                                          const std::vector<PromSeries>& pod_created, const std::string& source,
                                          const std::optional<GridSpec>& grid, const PodEnds& ends,
                                          const PodLabelNames& labels) {
  const Lives lives = PodLives(pod_created, ends);  // kube-state-metrics: `pod`, `namespace`
  ByGpu memory, util, engine, sm;
  NoPod no_pod;
  Dropped dropped;
  if (Result<void> r =
          Collect(fb_used, kDcgmFbUsed, 1.0, kMaxPlausibleMiB, lives, grid, labels, memory, no_pod, dropped);
      !r)
    return r.error();
  if (Result<void> r = Collect(gpu_util, kDcgmGpuUtil, 1.0, 100.0, lives, grid, labels, util, no_pod, dropped); !r)
    return r.error();
  if (Result<void> r =
          Collect(gr_engine_active, kDcgmGrEngineActive, 100.0, 100.0, lives, grid, labels, engine, no_pod, dropped);
      !r)
    return r.error();
  if (Result<void> r = Collect(sm_active, kDcgmSmActive, 100.0, 100.0, lives, grid, labels, sm, no_pod, dropped); !r)
    return r.error();
  // Every series without a pod: the labels are not the ones read (dcgm-exporter 1.x,
  // relabelling) or the exporter attributes no GPU to a pod; either way nothing to plan.
  if (memory.empty() && util.empty() && engine.empty() && no_pod.series > 0)
    return FailedPrecondition("{}: no pod to plan: {}", source,
                              DiagnoseMissingPodLabel(no_pod.series, no_pod.label_names, labels));

  // A GPU that several pods report at the same times is shared (time-slicing, MPS): DCGM
  // measures the whole GPU, so no pod's own use is known. Those pods are left out.
  std::map<std::string, std::map<std::string, const RawSeries*>> pods_of_gpu;
  for (const auto& [key, s] : memory)
    if (!s.time_s.empty()) pods_of_gpu[key.second][key.first] = &s;
  std::set<std::string> shared_pods;
  std::vector<std::string> shared_notes;
  for (const auto& [gpu, pods] : pods_of_gpu) {
    if (pods.size() < 2) continue;
    // A hand-off (one pod ends, the next starts on the GPU) shares a step or two; sharing
    // shows as kShared or more common sample times.
    constexpr std::size_t kShared = 3;
    std::map<double, int> reporting;  // sample time -> pods with a sample then
    for (const auto& [pod, s] : pods)
      for (double t : std::set<double>(s->time_s.begin(), s->time_s.end())) ++reporting[t];
    const auto common = static_cast<std::size_t>(
        std::count_if(reporting.begin(), reporting.end(), [](const auto& r) { return r.second > 1; }));
    if (common < kShared) continue;
    std::string names;
    for (const auto& [pod, s] : pods) {
      shared_pods.insert(pod);
      names += (names.empty() ? "" : ", ") + pod;
    }
    shared_notes.push_back(
        fmt::format("{}, {}: these pods report GPU {} at the same times (time-slicing or MPS); "
                    "DCGM measures the whole GPU, so their own use is unknown",
                    names, gpu, gpu));
  }

  // Each pod's devices; a pod on several is one series per device, each with its own field.
  PodDevices by_pod;
  const std::pair<ByGpu*, RawSeries DeviceSamples::*> metrics[] = {{&memory, &DeviceSamples::fb_used_mib},
                                                                   {&util, &DeviceSamples::gpu_util_pct},
                                                                   {&engine, &DeviceSamples::engine_active_pct},
                                                                   {&sm, &DeviceSamples::sm_active_pct}};
  for (const auto& [m, member] : metrics)
    for (auto& [key, s] : *m)
      if (!s.time_s.empty() && !shared_pods.count(key.first)) by_pod[key.first][key.second].*member = std::move(s);
  // A device with nothing but SM activity is no device of the pod's to plan.
  for (auto& [pod, devices] : by_pod)
    std::erase_if(devices, [](const auto& d) {
      return d.second.fb_used_mib.time_s.empty() && d.second.gpu_util_pct.time_s.empty() &&
             d.second.engine_active_pct.time_s.empty();
    });
  std::erase_if(by_pod, [](const auto& p) { return p.second.empty(); });
  const DeviceSeries devices = SeriesByDevice(std::move(by_pod));
  const RawTelemetry& raw = devices.raw;
  if (raw.fb_used_mib.empty() && !(shared_notes.empty() && devices.skipped.empty())) {
    std::string why;
    for (const std::vector<std::string>* list : {&std::as_const(shared_notes), &devices.skipped})
      for (const std::string& n : *list) why += "; " + n;
    return InvalidArgument("{}: no pod to plan{}", source, why);
  }
  // The grid keeps the queried step but spans only the samples, as the file readers' grids
  // do: a window wider than the pods' lives must not dilute shares of samples (the plan's
  // collision allowance is a share of the window).
  std::optional<GridSpec> trimmed = grid;
  if (grid) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct})
      for (const auto& [pod, series] : *metric)
        for (double t : series.time_s) {
          lo = std::min(lo, t);
          hi = std::max(hi, t);
        }
    const double first = std::round((lo - grid->start_s) / grid->step_s);
    const double last = std::round((hi - grid->start_s) / grid->step_s);
    trimmed->start_s = grid->start_s + first * grid->step_s;
    trimmed->samples = static_cast<std::size_t>(last - first) + 1;
  }
  Result<Telemetry> tel = AlignToGrid(raw, source, trimmed);
  if (!tel) return tel.error();
  tel->skipped.insert(tel->skipped.end(), shared_notes.begin(), shared_notes.end());
  tel->skipped.insert(tel->skipped.end(), devices.skipped.begin(), devices.skipped.end());
  AttachDeviceFacts(devices, *tel);
  // Each pod's GPU model (modelName) from its device's series, else from any series of the
  // pod; the fleet's when every planned pod names the same one.
  std::map<std::string, std::string> model_of_device, model_of_pod;
  for (const PromSeries& s : fb_used) {
    const std::string model = Label(s.labels, "modelName");
    if (model.empty()) continue;
    model_of_device[GpuIdentity(s.labels)] = model;
    model_of_pod[PodKeyFromLabels(s.labels, labels)] = model;
  }
  std::set<std::string> models;
  for (PodSeries& p : tel->pods) {
    if (const auto d = model_of_device.find(p.device); !p.device.empty() && d != model_of_device.end())
      p.gpu_model = d->second;
    else if (const auto k = model_of_pod.find(std::string(PodKeyOf(p.pod))); k != model_of_pod.end())
      p.gpu_model = k->second;
    models.insert(p.gpu_model);
  }
  if (models.size() == 1) tel->gpu_model_name = *models.begin();
  // Each MIG instance's profile (dcgm-exporter's GPU_I_PROFILE), by device.
  std::map<std::string, std::string> profile_of;
  for (const std::vector<PromSeries>* list : {&fb_used, &gpu_util, &gr_engine_active})
    for (const PromSeries& s : *list)
      if (const std::string profile = Label(s.labels, "GPU_I_PROFILE");
          !profile.empty() && !Label(s.labels, "GPU_I_ID").empty())
        profile_of[GpuIdentity(s.labels)] = profile;
  for (PodSeries& p : tel->pods)
    if (const auto it = profile_of.find(p.device); it != profile_of.end()) p.mig_profile = it->second;
  for (const std::string& gpu : no_pod.gpus)
    tel->skipped.push_back(
        fmt::format("{}: DCGM series without a pod label (no pod holds it, or dcgm-exporter runs without "
                    "--kubernetes)",
                    gpu));
  // Idle GPUs are normal; a label that looks like a pod label on them is worth a line.
  if (!GuessPodLabels(no_pod.label_names, labels).pod.empty())
    tel->skipped.push_back(fmt::format("{} GPU{}: {}", no_pod.gpus.size(), no_pod.gpus.size() == 1 ? "" : "s",
                                       DiagnoseMissingPodLabel(no_pod.series, no_pod.label_names, labels)));
  const double keep = grid ? grid->step_s - 1e-3 : 0.0;
  for (const auto& [key, times] : dropped) {
    PodEnd end = lives.at(key.first)[static_cast<std::size_t>(key.second)].EndOf(LifeName(key.first, key.second), keep);
    end.dropped_samples = times.size();
    tel->ended.push_back(std::move(end));
  }
  std::sort(tel->ended.begin(), tel->ended.end(), [](const PodEnd& a, const PodEnd& b) { return a.pod < b.pod; });
  Result<std::vector<ReservedGpuMemory>> reserved = ReservedGpuMemoryFromDcgm(fb_used, grid, labels);
  if (!reserved) return reserved.error();
  tel->reserved_gpu_memory = std::move(*reserved);
  return tel;
}

Result<std::vector<ReservedGpuMemory>> ReservedGpuMemoryFromDcgm(const std::vector<PromSeries>& fb_used,
                                                                 const std::optional<GridSpec>& grid,
                                                                 const PodLabelNames& labels) {
  std::map<std::string, ReservedGpuMemory> by_gpu;
  for (const PromSeries& s : fb_used) {
    if (!PodKeyFromLabels(s.labels, labels).empty()) continue;
    for (std::size_t i = 0; i < s.time_s.size() && i < s.value.size(); ++i) {
      if (Result<void> finite = NotFinite(kDcgmFbUsed, s.labels, s.time_s[i], s.value[i]); !finite)
        return finite.error();
      if (NoData(s.value[i])) continue;
      if (grid && (s.time_s[i] < grid->start_s - grid->step_s / 2 ||
                   s.time_s[i] >= grid->start_s + (static_cast<double>(grid->samples) - 0.5) * grid->step_s))
        continue;
      if (s.value[i] < 0 || s.value[i] > kMaxPlausibleMiB)
        return InvalidArgument("{} at {}: value {} is out of range [0, {}]", Describe(kDcgmFbUsed, s.labels),
                               s.time_s[i], s.value[i], kMaxPlausibleMiB);
      ReservedGpuMemory& r = by_gpu[GpuIdentity(s.labels)];
      r.gpu = GpuIdentity(s.labels);
      if (r.host.empty()) r.host = Host(s.labels);
      r.peak = std::max(r.peak, MiB{static_cast<std::int64_t>(std::ceil(s.value[i]))});
    }
  }
  std::vector<ReservedGpuMemory> out;
  for (auto& [gpu, r] : by_gpu)
    if (r.peak.value > 0) out.push_back(std::move(r));
  return out;
}

std::string PodKeyFromLabels(const std::map<std::string, std::string>& l, const PodLabelNames& names) {
  // Scraped through a ServiceMonitor without honorLabels, the exporter's own pod labels
  // come as exported_pod / exported_namespace (the target's labels take the plain names).
  const std::string exported_pod = "exported_" + names.pod, exported_ns = "exported_" + names.ns;
  const bool exported = !Label(l, exported_pod.c_str()).empty();
  const std::string pod = Label(l, exported ? exported_pod.c_str() : names.pod.c_str());
  if (pod.empty()) return "";
  // Without exported_pod, a `pod` naming the exporter itself is the scrape target's label
  // on a series the exporter attributed to no pod (an empty label is absent in Prometheus).
  if (!exported && (pod.rfind("nvidia-dcgm-exporter", 0) == 0 || pod.rfind("dcgm-exporter", 0) == 0)) return "";
  const std::string ns = Label(l, exported ? exported_ns.c_str() : names.ns.c_str());
  return ns.empty() ? pod : ns + "/" + pod;
}

std::string DiagnoseMissingPodLabel(std::size_t series, const std::set<std::string>& label_names,
                                    const PodLabelNames& names) {
  const PodLabelGuess guess = GuessPodLabels(label_names, names);
  std::string listed;
  for (const std::string& n : label_names) listed += (listed.empty() ? "" : ", ") + n;
  const std::string what = fmt::format("{} DCGM series carry no `{}` label (their label names: {})", series, names.pod,
                                       listed.empty() ? "none" : listed);
  if (!guess.pod.empty())
    return fmt::format(
        "{}; `{}` looks like the pod's label (dcgm-exporter 1.x writes pod_name and pod_namespace): "
        "rerun with --pod-label {}{}",
        what, guess.pod, guess.pod, guess.ns.empty() ? "" : " --namespace-label " + guess.ns);
  return what +
         "; no label names a pod: run dcgm-exporter with --kubernetes (its pod-resources socket mounted), "
         "or name the pod's label with --pod-label and --namespace-label";
}

Result<TelemetryGrid> GridFor(const TelemetryRange& range) {
  const double step_ms = std::round(range.step_s * 1000.0);
  if (!(range.step_s >= 1.0) || std::abs(step_ms - range.step_s * 1000.0) > 1e-6)
    return InvalidArgument("--step must be whole milliseconds and at least 1 s, got {} s", range.step_s);
  const double span = range.until_s - range.since_s;
  if (!(span >= range.step_s))
    return InvalidArgument("--step ({} s) is longer than the range --since .. --until ({} s)", range.step_s, span);
  const double steps = std::floor(span / range.step_s + 1e-9);
  if (steps > static_cast<double>(kMaxPrometheusSteps))
    return InvalidArgument("the range holds {:.0f} steps of {} s, more than {}: narrow --since/--until or widen --step",
                           steps, range.step_s, kMaxPrometheusSteps);
  const auto n = static_cast<std::size_t>(steps);
  return TelemetryGrid{.grid = {.start_s = range.since_s + range.step_s, .step_s = range.step_s, .samples = n},
                       .window = fmt::format("[{}ms]", static_cast<long long>(step_ms) - 1)};
}

Result<double> ReadStep(const TelemetryRange& range) {
  // GridFor's checks of the step itself; its limit on the number of steps is what the coarse
  // step lifts.
  TelemetryRange one_step = range;
  one_step.until_s = std::min(range.until_s, range.since_s + range.step_s);
  if (Result<TelemetryGrid> g = GridFor(one_step); !g) return g.error();
  if (!(range.until_s - range.since_s >= range.step_s)) return GridFor(range).error();
  const double steps = std::floor((range.until_s - range.since_s) / range.step_s + 1e-9);
  if (range.max_points == 0 || steps <= static_cast<double>(range.max_points)) return range.step_s;
  return std::ceil(steps / static_cast<double>(range.max_points) - 1e-9) * range.step_s;
}

Result<Telemetry> ReadPrometheusTelemetry(const PrometheusOptions& options, const TelemetryRange& range,
                                          const PodEnds& ends) {
  const Result<double> step = ReadStep(range);
  if (!step) return step.error();
  TelemetryRange read = range;
  read.step_s = *step;
  const Result<TelemetryGrid> grid = GridFor(read);
  if (!grid) return grid.error();
  PrometheusQueryStats stats;
  auto query = [&](const char* function, const std::string& selector) {
    return QueryRangeSplit(
        options,
        SplitQuery{.function = function,
                   .selector = selector,
                   .window = grid->window,
                   .start_s = grid->grid.start_s,
                   .end_s = grid->grid.start_s + static_cast<double>(grid->grid.samples - 1) * grid->grid.step_s,
                   .step_s = read.step_s},
        stats);
  };
  const Result<std::vector<PromSeries>> fb = query("max_over_time", kDcgmFbUsed);
  if (!fb) return fb.error();
  const Result<std::vector<PromSeries>> util = query("avg_over_time", kDcgmGpuUtil);
  if (!util) return util.error();
  const Result<std::vector<PromSeries>> engine = query("avg_over_time", kDcgmGrEngineActive);
  if (!engine) return engine.error();
  const Result<std::vector<PromSeries>> sm = query("avg_over_time", kDcgmSmActive);
  if (!sm) return sm.error();
  const Result<std::vector<PromSeries>> created = query("max_over_time", "kube_pod_created");
  if (!created) return created.error();
  const Result<std::vector<PromSeries>> completion = query("max_over_time", kKubePodCompletionTime);
  if (!completion) return completion.error();
  const Result<std::vector<PromSeries>> ended =
      query("max_over_time", R"(kube_pod_status_phase{phase=~"Succeeded|Failed"})");
  if (!ended) return ended.error();
  PodEnds all_ends = PodEndsFromKubeStateMetrics(*completion, *ended);
  MergePodEnds(all_ends, ends);
  if (fb->empty())
    return FailedPrecondition(
        "prometheus {}: no {} series from {} to {} (is dcgm-exporter scraped, and does --since/--until, relative to "
        "now by default, cover the data{}?)",
        options.url, kDcgmFbUsed, FormatRfc3339(range.since_s), FormatRfc3339(range.until_s),
        options.ScopeMatchers().empty() ? "" : ", and do --namespace/--selector match its series");
  Result<Telemetry> tel = TelemetryFromDcgmSeries(*fb, *util, *engine, *sm, *created, options.url, grid->grid, all_ends,
                                                  options.dcgm_labels);
  if (!tel) return tel;
  if (Result<void> r = AddPrometheusContainers(options, *grid, *tel, stats); !r) return r.error();
  std::string scope;
  for (const LabelMatcher& m : options.ScopeMatchers()) scope += (scope.empty() ? "" : ",") + m.ToPromQL();
  std::vector<QueryNotice> notices;
  for (const PrometheusNotice& n : stats.notices) notices.push_back({.query = n.query, .kind = n.kind, .text = n.text});
  tel->queries = TelemetryQueries{
      .requests = stats.requests,
      .series_lookups = stats.series_lookups,
      .queries = stats.queries,
      .split_queries = stats.split_queries,
      .parts = stats.parts,
      .answer_bytes = stats.answer_bytes,
      .max_answer_bytes = options.max_answer_bytes,
      .requested_step_s = range.step_s,
      .step_s = read.step_s,
      .max_points_per_series = range.max_points,
      .step_rule = read.step_s == range.step_s
                       ? fmt::format("--step {} s: memory is each step's maximum, duty each step's mean", range.step_s)
                       : fmt::format("the window holds more than {} steps of --step {} s, so it was read at {} s "
                                     "(the smallest multiple under that): memory is each step's maximum (peaks "
                                     "stay exact), duty each step's mean",
                                     range.max_points, range.step_s, read.step_s),
      .scope = scope,
      .notices = std::move(notices)};
  return tel;
}

}  // namespace gpufit

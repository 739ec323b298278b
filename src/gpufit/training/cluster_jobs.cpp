#include "gpufit/training/cluster_jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "gpufit/training/gang.h"

namespace gpufit {
namespace {

constexpr double kH = 3600;

// Serving gangs, not training (gang.h recognises them as gangs all the same).
bool IsServing(const KubePod& p, const GangRef& g) {
  const auto crd = p.labels.find("ray.io/originated-from-crd");
  if (crd != p.labels.end() && crd->second == "RayService") return true;
  return p.owner.kind == "LeaderWorkerSet" && g.how.starts_with("owner ");
}

bool IsTrainingCandidate(const KubePod& p) {
  if (p.phase != "Running" && !p.phase.empty()) return false;
  if (p.node_name.empty() || p.deleted_s || p.finished_s) return false;
  return p.Devices("nvidia.com/gpu") > 0;
}

struct Group {
  GangRef gang;
  std::vector<const KubePod*> pods;
};

// An annotation of the job's first pod that has it: a number >= 0 (> 0 when `positive`), at
// most `max` (its physical bound, cluster_jobs.h; `unit` names the bound's unit).
Result<std::optional<double>> NumberAnnotation(const Group& g, const char* key, bool positive, double max,
                                               const char* unit, const std::string& source) {
  for (const KubePod* p : g.pods) {
    const auto it = p->annotations.find(key);
    if (it == p->annotations.end()) continue;
    const std::string& text = it->second;
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0 || (positive && v == 0)) {
      return InvalidArgument("{}: pod {}: annotation {}: expected a number {} 0, got '{}'", source, p->Key(), key,
                             positive ? ">" : ">=", text);
    }
    if (v > max) {
      return InvalidArgument("{}: pod {}: annotation {}: '{}' is above the bound {:g} {} (cluster_jobs.h: {})", source,
                             p->Key(), key, text, max, unit, kAnnotationBoundWhy);
    }
    return std::optional<double>(v);
  }
  return std::optional<double>();
}

std::string Annotated(const char* key) { return fmt::format("annotation {}", key); }

}  // namespace

Result<TrainingWorkload> TrainingWorkloadFromCluster(const std::vector<KubePod>& pods,
                                                     const std::vector<KubeNode>& nodes, const SpotEstimate& spot,
                                                     const ClusterJobsOptions& o) {
  TrainingWorkload w;
  w.interruptions.spot = spot.market;
  w.spot_origin = spot.origin;
  std::map<std::string, const KubeNode*> node_by_name;
  for (const KubeNode& n : nodes) node_by_name[n.name] = &n;

  // Gangs in first-seen order of pods sorted by key.
  std::vector<const KubePod*> sorted;
  for (const KubePod& p : pods)
    if (IsTrainingCandidate(p)) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const KubePod* a, const KubePod* b) { return a->Key() < b->Key(); });
  std::vector<Group> groups;
  std::map<std::string, std::size_t> by_key;
  for (const KubePod* p : sorted) {
    const std::optional<GangRef> g = GangOf(p->namespace_name, p->labels, p->annotations, p->owner);
    if (!g || IsServing(*p, *g)) continue;
    const auto [it, fresh] = by_key.emplace(g->key, groups.size());
    if (fresh) groups.push_back({*g, {}});
    groups[it->second].pods.push_back(p);
  }
  // Names: the gang's, qualified by namespace where two namespaces share one.
  std::map<std::string, int> name_count;
  for (const Group& g : groups) ++name_count[g.gang.name];

  std::map<std::string, int> node_used;
  std::vector<std::string> node_order;
  for (const Group& g : groups) {
    const KubePod& first = *g.pods.front();
    const std::string where = o.pods_source;
    JobOrigin origin{.namespace_name = first.namespace_name,
                     .owner = first.owner.kind.empty() ? g.gang.how : first.owner.kind + "/" + first.owner.name,
                     .pods = {},
                     .nodes = {},
                     .capacity = {},
                     .started_s = std::nullopt,
                     .runtime_so_far_h = 0,
                     .sources = {}};
    origin.sources["gang"] = g.gang.how + " (" + where + ")";
    int gpus = 0;
    std::set<int> per_pod;
    std::set<std::string> capacities;
    bool created_only = false;
    for (const KubePod* p : g.pods) {
      origin.pods.push_back(p->name);
      origin.nodes.push_back(p->node_name);
      const int n = p->Devices("nvidia.com/gpu");
      per_pod.insert(n);
      gpus = std::max(gpus, n);
      const auto node = node_by_name.find(p->node_name);
      const std::string cap = node == node_by_name.end() || node->second->capacity_type.empty()
                                  ? "unknown"
                                  : (node->second->capacity_type == "spot" ? "spot" : "on-demand");
      capacities.insert(cap);
      std::optional<double> start = p->started_s;
      if (!start) {
        start = p->created_s;
        created_only = created_only || start.has_value();
      }
      if (start && (!origin.started_s || *start < *origin.started_s)) origin.started_s = start;
    }
    origin.capacity = capacities.size() == 1 ? *capacities.begin() : "mixed";
    origin.sources["gpus"] = per_pod.size() == 1 ? fmt::format("nvidia.com/gpu requests ({})", where)
                                                 : fmt::format(
                                                       "the largest nvidia.com/gpu request of its pods, which "
                                                       "differ ({})",
                                                       where);
    origin.sources["capacity"] = node_by_name.empty() ? "unknown: no node labels (give --nodes or kube_node_labels)"
                                                      : "its nodes' capacity-type labels";
    if (origin.started_s) {
      origin.sources["started"] =
          created_only ? "pod creation time (no start time)" : fmt::format("earliest pod start time ({})", where);
      origin.runtime_so_far_h = std::max(0.0, (o.now_s - *origin.started_s) / kH);
    } else {
      origin.sources["started"] = "unknown: no start or creation time";
    }

    // Remaining work.
    Result<std::optional<double>> work_h = NumberAnnotation(g, kWorkHoursAnnotation, true, kMaxWorkHours, "h", where);
    if (!work_h) return work_h.error();
    double remaining = 0;
    if (*work_h) {
      remaining = **work_h - origin.runtime_so_far_h;
      origin.sources["work_h"] = fmt::format("{} = {:g} h minus the runtime so far {:.2f} h",
                                             Annotated(kWorkHoursAnnotation), **work_h, origin.runtime_so_far_h);
      if (remaining < o.min_remaining_h) {
        remaining = o.min_remaining_h;
        origin.sources["work_h"] += fmt::format(", raised to {:g} h: the job has run past its stated work", remaining);
      }
    } else {
      remaining = std::max(origin.runtime_so_far_h, o.min_remaining_h);
      origin.sources["work_h"] = fmt::format(
          "assumption: remaining work = runtime so far ({:.2f} h; as likely as not to run that long again, "
          "Harchol-Balter and Downey 1997), at least {:g} h",
          origin.runtime_so_far_h, o.min_remaining_h);
    }

    // GPU model.
    std::string model = o.default_gpu_model;
    origin.sources["gpu_model"] = o.default_gpu_model_source;
    if (const auto it = o.gpu_model_of_node.find(first.node_name); it != o.gpu_model_of_node.end()) {
      model = it->second;
      origin.sources["gpu_model"] = "its node's nvidia.com/gpu.product label";
    }

    // Checkpoint size, write and restore.
    const int total_gpus = gpus * static_cast<int>(g.pods.size());
    Result<std::optional<double>> size_a =
        NumberAnnotation(g, kCheckpointSizeAnnotation, false, kMaxCheckpointGib, "GiB", where);
    if (!size_a) return size_a.error();
    double size_gib = 0;
    if (*size_a) {
      size_gib = **size_a;
      origin.sources["checkpoint_size_gib"] = Annotated(kCheckpointSizeAnnotation);
    } else {
      double used_mib = 0;
      bool all = true;
      for (const KubePod* p : g.pods) {
        const auto it = o.gpu_memory_used.find(p->Key());
        if (it == o.gpu_memory_used.end()) {
          all = false;
          break;
        }
        used_mib += static_cast<double>(it->second.value);
      }
      const auto catalog = o.gpu_memory_of_model.find(model);
      if (all && used_mib > 0) {
        size_gib = used_mib / 1024;
        origin.sources["checkpoint_size_gib"] =
            fmt::format("assumption: the pods' peak GPU memory used, summed ({}): an upper bound", o.gpu_memory_source);
      } else if (catalog != o.gpu_memory_of_model.end()) {
        size_gib = static_cast<double>(catalog->second.value) / 1024 * total_gpus;
        origin.sources["checkpoint_size_gib"] =
            fmt::format("assumption: {} GPUs x {:.0f} GiB ({} memory, catalog): every GPU full, the cautious end",
                        total_gpus, static_cast<double>(catalog->second.value) / 1024, model);
      } else {
        return FailedPrecondition(
            "{}: job {}: cannot size its checkpoint: set annotation {} (or {} and {}) on its pods, or give --gpu",
            where, g.gang.name, kCheckpointSizeAnnotation, kCheckpointWriteAnnotation, kRestoreAnnotation);
      }
    }
    Result<std::optional<double>> write_a =
        NumberAnnotation(g, kCheckpointWriteAnnotation, true, kMaxCheckpointSeconds, "s", where);
    if (!write_a) return write_a.error();
    Result<std::optional<double>> restore_a =
        NumberAnnotation(g, kRestoreAnnotation, true, kMaxCheckpointSeconds, "s", where);
    if (!restore_a) return restore_a.error();
    double write_s = 0, restore_s = 0;
    if (*write_a) {
      write_s = **write_a;
      origin.sources["checkpoint_write_s"] = Annotated(kCheckpointWriteAnnotation);
    } else {
      write_s = o.storage.Write(size_gib, total_gpus).count();
      origin.sources["checkpoint_write_s"] = fmt::format("assumption: {:.1f} GiB / ({} GPUs x {:g} GiB/s per GPU)",
                                                         size_gib, total_gpus, o.storage.write_gib_per_s);
    }
    if (*restore_a) {
      restore_s = **restore_a;
      origin.sources["restore_s"] = Annotated(kRestoreAnnotation);
    } else {
      restore_s = o.storage.Restore(size_gib, total_gpus).count();
      origin.sources["restore_s"] =
          fmt::format("assumption: {:.0f} s to reschedule + {:.1f} GiB / ({} GPUs x {:g} GiB/s per GPU)",
                      o.storage.reschedule.count(), size_gib, total_gpus, o.storage.read_gib_per_s);
    }
    Checkpointing how = Checkpointing::kApplication;
    origin.sources["checkpointing"] = "assumption: application (the framework's periodic checkpoints)";
    for (const KubePod* p : g.pods) {
      const auto it = p->annotations.find(kCheckpointingAnnotation);
      if (it == p->annotations.end()) continue;
      Result<Checkpointing> c = ParseCheckpointing(
          it->second, fmt::format("{}: pod {}: annotation {}", where, p->Key(), kCheckpointingAnnotation));
      if (!c) return c.error();
      how = *c;
      origin.sources["checkpointing"] = Annotated(kCheckpointingAnnotation);
      break;
    }
    if (how != Checkpointing::kNone && write_s < 1) {
      origin.sources["checkpoint_write_s"] +=
          fmt::format(" ({:.2f} s, raised to 1 s, the least a write takes)", write_s);
      write_s = 1;
    }

    TrainingJob job{.name = name_count[g.gang.name] > 1 ? first.namespace_name + "/" + g.gang.name : g.gang.name,
                    .gpu_count = gpus,
                    .gpu_model = model,
                    .work = Seconds{remaining * kH},
                    .checkpoint_write = Seconds{write_s},
                    .restore = Seconds{restore_s},
                    .checkpoint_size = MiB{static_cast<std::int64_t>(std::llround(size_gib * 1024))},
                    .submit = Seconds{0},
                    .deadline = std::nullopt,
                    .checkpointing = how,
                    .disruption_group = "",
                    .max_unavailable = 1,
                    .pods = static_cast<int>(g.pods.size()),
                    .gang = g.pods.size() > 1 ? g.gang.how : std::string()};
    for (const KubePod* p : g.pods) {
      if (node_used.emplace(p->node_name, 0).second) node_order.push_back(p->node_name);
      node_used[p->node_name] += gpus;
    }
    w.running.push_back(RunningState{.nodes = origin.nodes, .last_checkpoint = Seconds{0}, .work_done = Seconds{0}});
    w.jobs.push_back(std::move(job));
    w.origins.emplace_back(std::move(origin));
  }
  for (const std::string& name : node_order) {
    const auto it = node_by_name.find(name);
    const KubeNode* n = it == node_by_name.end() ? nullptr : it->second;
    std::string model = o.default_gpu_model;
    if (const auto m = o.gpu_model_of_node.find(name); m != o.gpu_model_of_node.end()) model = m->second;
    w.nodes.push_back(
        {.name = name,
         .gpu_count = std::max(node_used[name], n != nullptr ? n->gpu_count : 0),
         .gpu_model = model,
         .capacity = n != nullptr && n->capacity_type == "spot" ? CapacityType::kSpot : CapacityType::kOnDemand});
  }
  return w;
}

TrainingWorkload MergeTrainingWorkloads(TrainingWorkload cluster, TrainingWorkload file) {
  TrainingWorkload out;
  std::set<std::string> from_file;
  for (const TrainingJob& j : file.jobs) from_file.insert(j.name);
  for (std::size_t j = 0; j < cluster.jobs.size(); ++j) {
    if (from_file.contains(cluster.jobs[j].name)) continue;
    out.jobs.push_back(std::move(cluster.jobs[j]));
    out.running.push_back(std::move(cluster.running[j]));
    out.origins.push_back(j < cluster.origins.size() ? std::move(cluster.origins[j]) : std::nullopt);
  }
  for (std::size_t j = 0; j < file.jobs.size(); ++j) {
    out.jobs.push_back(std::move(file.jobs[j]));
    out.running.push_back(std::move(file.running[j]));
    out.origins.emplace_back(std::nullopt);
  }
  std::set<std::string> file_nodes;
  for (const TrainingNode& n : file.nodes) file_nodes.insert(n.name);
  for (TrainingNode& n : cluster.nodes)
    if (!file_nodes.contains(n.name)) out.nodes.push_back(std::move(n));
  for (TrainingNode& n : file.nodes) out.nodes.push_back(std::move(n));
  out.interruptions = cluster.interruptions;
  out.spot_origin = cluster.spot_origin;
  if (file.interruptions.spot.basis != SpotMarket{}.basis) {
    out.interruptions.spot = file.interruptions.spot;
    out.spot_origin = SpotRateOrigin{.kind = "workload file", .events = 0, .node_hours = 0, .counted_by = ""};
  }
  for (auto& [model, market] : file.interruptions.spot_by_gpu_model)
    out.interruptions.spot_by_gpu_model[model] = market;
  out.interruptions.gpu_mtbf_hours = file.interruptions.gpu_mtbf_hours;
  out.preemptions = std::move(file.preemptions);
  out.maintenance = std::move(file.maintenance);
  out.prices = std::move(cluster.prices);
  for (auto& [model, p] : file.prices) out.prices[model] = p;
  return out;
}

}  // namespace gpufit

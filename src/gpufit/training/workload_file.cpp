#include "gpufit/training/workload_file.h"

#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <set>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "gpufit/core/input_file.h"
#include "gpufit/core/yaml_nesting.h"
#include "gpufit/ingest/internal/yaml_fields.h"
#include "gpufit/training/checkpoint.h"
#include "gpufit/training/cluster_jobs.h"
#include "gpufit/training/gang.h"

namespace gpufit {
using internal::Fields;

namespace {

constexpr double kH = 3600;

Result<SpotMarket> ParseMarket(const YAML::Node& node, const std::string& where) {
  const Fields f(node, where);
  GPUFIT_CHECK(f.Only({"band", "monthly_fraction", "mtbi_h", "notice_s"}));
  GPUFIT_TRY(notice_s, f.Number("notice_s", kAwsSpotNotice.count()));
  const int given = (f.Has("band") ? 1 : 0) + (f.Has("monthly_fraction") ? 1 : 0) + (f.Has("mtbi_h") ? 1 : 0);
  if (given != 1) return InvalidArgument("{}: give exactly one of band, monthly_fraction, mtbi_h", where);
  if (f.Has("band")) {
    GPUFIT_TRY(band, f.Text("band"));
    Result<SpotMarket> m = SpotMarketFromBand(band, Seconds{notice_s});
    if (!m) return InvalidArgument("{}: {}", where, m.error().message);
    return m;
  }
  if (f.Has("monthly_fraction")) {
    GPUFIT_TRY(fraction, f.Number("monthly_fraction"));
    if (fraction >= 1) return InvalidArgument("{}: monthly_fraction must be < 1, got {}", where, fraction);
    return SpotMarket{.interruptions_per_hour = RatePerHourFromMonthlyFraction(fraction),
                      .notice = Seconds{notice_s},
                      .basis = fmt::format("{:.1f}% of instances interrupted per 730-h month, exponential lifetimes "
                                           "(assumption)",
                                           100 * fraction)};
  }
  GPUFIT_TRY(mtbi, f.NumberIn("mtbi_h", std::nullopt, kMinMtbfHours, kMaxMtbfHours, kMtbfWhy));
  return SpotMarket{.interruptions_per_hour = 1 / mtbi,
                    .notice = Seconds{notice_s},
                    .basis = fmt::format("mean time between interruptions {} h", mtbi)};
}

// One entry of `jobs:` before gangs are merged; checkpoint times are derived after, from
// the GPUs of the whole gang.
struct Entry {
  TrainingJob job;
  double size_gib = 0;
  std::optional<double> write_s, restore_s;
  std::optional<RunningState> running;
  std::optional<GangRef> gang;
  std::string where;
};

Result<std::map<std::string, std::string>> StringMap(const YAML::Node& node, const std::string& where) {
  std::map<std::string, std::string> out;
  if (!node) return out;
  if (!node.IsMap()) return InvalidArgument("{}: must be a mapping of strings", where);
  for (const auto& kv : node) {
    if (!kv.second.IsScalar()) return InvalidArgument("{}: '{}' must be a string", where, kv.first.Scalar());
    out[kv.first.Scalar()] = kv.second.Scalar();
  }
  return out;
}

Result<Entry> ParseJobEntry(const YAML::Node& node, const std::string& path, std::size_t index,
                            const std::set<std::string>& node_names) {
  const Fields f0(node, fmt::format("{}: jobs[{}]", path, index));
  GPUFIT_TRY(name, f0.Text("name"));
  const Fields f(node, fmt::format("{}: job {}", path, name));
  GPUFIT_CHECK(f.Only({"name", "gpus", "pods", "gpu_model", "work_h", "checkpoint_size_gib", "checkpoint_write_s",
                       "restore_s", "submit_h", "deadline_h", "checkpointing", "disruption_group", "max_unavailable",
                       "labels", "annotations", "owner", "running"}));
  if (name.empty()) return InvalidArgument("{}: name must not be empty", f0.where());
  GPUFIT_TRY(gpus, f.Number("gpus", std::nullopt, 1));
  if (gpus != std::floor(gpus) || gpus > kMaxGpusPerNode) {
    return InvalidArgument("{}: gpus must be a whole number 1..{}, got {}", f.where(), kMaxGpusPerNode, gpus);
  }
  GPUFIT_TRY(pods, f.Number("pods", 1.0, 1));
  if (pods != std::floor(pods) || pods > kMaxGangPods) {
    return InvalidArgument("{}: pods must be a whole number 1..{}, got {}", f.where(), kMaxGangPods, pods);
  }
  Entry e;
  e.where = f.where();
  GPUFIT_TRY(model, f.Text("gpu_model", ""));
  GPUFIT_TRY(work_h, f.Number("work_h"));
  if (work_h <= 0) return InvalidArgument("{}: work_h must be > 0", f.where());
  // The physical bounds of the cluster's annotations (cluster_jobs.h): a larger figure is a typo
  // or hostile input, not a job (1e300 hours would overflow every cost after it).
  if (work_h > kMaxWorkHours)
    return InvalidArgument("{}: work_h {} is above {} h ({})", f.where(), work_h, kMaxWorkHours, kAnnotationBoundWhy);
  if (!f.Has("checkpoint_size_gib") && (!f.Has("checkpoint_write_s") || !f.Has("restore_s"))) {
    return InvalidArgument("{}: give checkpoint_size_gib, or both checkpoint_write_s and restore_s", f.where());
  }
  GPUFIT_TRY(size_gib, f.Number("checkpoint_size_gib", 0.0));
  if (size_gib > kMaxCheckpointGib)
    return InvalidArgument("{}: checkpoint_size_gib {} is above {} GiB ({})", f.where(), size_gib, kMaxCheckpointGib,
                           kAnnotationBoundWhy);
  e.size_gib = size_gib;
  for (const char* field : {"checkpoint_write_s", "restore_s"}) {
    if (!f.Has(field)) continue;
    GPUFIT_TRY(seconds, f.Number(field));
    if (seconds > kMaxCheckpointSeconds)
      return InvalidArgument("{}: {} {} is above {} s ({})", f.where(), field, seconds, kMaxCheckpointSeconds,
                             kAnnotationBoundWhy);
    (std::string_view(field) == "restore_s" ? e.restore_s : e.write_s) = seconds;
  }
  GPUFIT_TRY(submit_h, f.Number("submit_h", 0.0));
  GPUFIT_TRY(how, f.Text("checkpointing", "application"));
  GPUFIT_TRY(checkpointing, ParseCheckpointing(how, f.where()));
  GPUFIT_TRY(group, f.Text("disruption_group", ""));
  GPUFIT_TRY(max_unavailable, f.Number("max_unavailable", 1.0, 0));
  if (max_unavailable != std::floor(max_unavailable)) {
    return InvalidArgument("{}: max_unavailable must be a whole number of pods, got {}", f.where(), max_unavailable);
  }
  GPUFIT_TRY(labels, StringMap(node["labels"], f.where() + ": labels"));
  GPUFIT_TRY(annotations, StringMap(node["annotations"], f.where() + ": annotations"));
  WorkloadRef owner;
  if (const YAML::Node o = node["owner"]; o) {
    const Fields of(o, f.where() + ": owner");
    GPUFIT_CHECK(of.Only({"kind", "name"}));
    GPUFIT_TRY(kind, of.Text("kind"));
    GPUFIT_TRY(owner_name, of.Text("name"));
    owner = WorkloadRef{.kind = kind, .name = owner_name};
  }
  e.gang = GangOf("", labels, annotations, owner);
  e.job = TrainingJob{.name = name,
                      .gpu_count = static_cast<int>(gpus),
                      .gpu_model = model,
                      .work = Seconds{work_h * kH},
                      .checkpoint_write = Seconds{0},
                      .restore = Seconds{0},
                      .checkpoint_size = MiB{static_cast<std::int64_t>(size_gib * 1024)},
                      .submit = Seconds{submit_h * kH},
                      .deadline = std::nullopt,
                      .checkpointing = checkpointing,
                      .disruption_group = group,
                      .max_unavailable = static_cast<int>(max_unavailable),
                      .pods = static_cast<int>(pods),
                      .gang = pods > 1 ? fmt::format("pods: {} in the file", pods) : std::string()};
  if (f.Has("deadline_h")) {
    GPUFIT_TRY(deadline_h, f.Number("deadline_h"));
    if (deadline_h <= submit_h) return InvalidArgument("{}: deadline_h must be after submit_h", f.where());
    e.job.deadline = Seconds{deadline_h * kH};
  }
  if (const YAML::Node r = node["running"]; r) {
    const Fields rf(r, f.where() + ": running");
    GPUFIT_CHECK(rf.Only({"node", "nodes", "last_checkpoint_h", "work_done_h"}));
    std::vector<std::string> on;
    if (rf.Has("node") == rf.Has("nodes")) return InvalidArgument("{}: give node or nodes (one per pod)", rf.where());
    if (rf.Has("node")) {
      GPUFIT_TRY(one, rf.Text("node"));
      on.push_back(one);
    } else {
      if (!r["nodes"].IsSequence()) return InvalidArgument("{}: nodes must be a list of node names", rf.where());
      for (const auto& n : r["nodes"]) {
        if (!n.IsScalar()) return InvalidArgument("{}: nodes must be a list of node names", rf.where());
        on.push_back(n.Scalar());
      }
    }
    if (on.size() != static_cast<std::size_t>(pods)) {
      return InvalidArgument("{}: {} node(s) for {} pod(s): give one node per pod", rf.where(), on.size(), pods);
    }
    for (const std::string& n : on) {
      if (!node_names.contains(n)) return InvalidArgument("{}: unknown node '{}'", rf.where(), n);
    }
    GPUFIT_TRY(last_h, rf.Number("last_checkpoint_h", submit_h));
    GPUFIT_TRY(done_h, rf.Number("work_done_h", 0.0));
    if (done_h >= work_h) return InvalidArgument("{}: work_done_h must be < work_h", rf.where());
    if (last_h < submit_h) return InvalidArgument("{}: last_checkpoint_h must be >= submit_h", rf.where());
    if (done_h > last_h - submit_h + 1e-9) {
      return InvalidArgument("{}: work_done_h {} is more than the {} h since submit_h", rf.where(), done_h,
                             last_h - submit_h);
    }
    e.running = RunningState{.nodes = on, .last_checkpoint = Seconds{last_h * kH}, .work_done = Seconds{done_h * kH}};
  }
  return e;
}

// Entries of one gang (same GangOf key) become one job named after the gang: their pods add
// up, every other field must agree.
Result<std::vector<Entry>> MergeGangs(std::vector<Entry> entries, const std::string& path) {
  std::vector<Entry> out;
  std::map<std::string, std::size_t> by_key;
  for (Entry& e : entries) {
    if (!e.gang) {
      out.push_back(std::move(e));
      continue;
    }
    const auto [it, fresh] = by_key.emplace(e.gang->key, out.size());
    if (fresh) {
      e.job.name = e.gang->name;
      e.job.gang = e.gang->how;
      out.push_back(std::move(e));
      continue;
    }
    Entry& g = out[it->second];
    const TrainingJob &a = g.job, &b = e.job;
    const std::pair<const char*, bool> same[] = {
        {"gpus", a.gpu_count == b.gpu_count},
        {"gpu_model", a.gpu_model == b.gpu_model},
        {"work_h", a.work == b.work},
        {"checkpoint_size_gib", g.size_gib == e.size_gib},
        {"checkpoint_write_s", g.write_s == e.write_s},
        {"restore_s", g.restore_s == e.restore_s},
        {"submit_h", a.submit == b.submit},
        {"deadline_h", a.deadline == b.deadline},
        {"checkpointing", a.checkpointing == b.checkpointing},
        {"disruption_group", a.disruption_group == b.disruption_group},
        {"max_unavailable", a.max_unavailable == b.max_unavailable},
        {"running", g.running.has_value() == e.running.has_value()},
        {"running.last_checkpoint_h",
         !g.running || !e.running || g.running->last_checkpoint == e.running->last_checkpoint},
        {"running.work_done_h", !g.running || !e.running || g.running->work_done == e.running->work_done}};
    for (const auto& [field, equal] : same) {
      if (!equal) {
        return InvalidArgument("{}: {} differs from the other pods of gang '{}' ({}); a gang's pods must agree",
                               e.where, field, g.job.name, e.gang->how);
      }
    }
    g.job.pods += b.pods;
    if (g.job.pods > kMaxGangPods) {
      return InvalidArgument("{}: gang '{}' has more than {} pods", path, g.job.name, kMaxGangPods);
    }
    if (g.running) g.running->nodes.insert(g.running->nodes.end(), e.running->nodes.begin(), e.running->nodes.end());
  }
  return out;
}

Result<TrainingWorkload> ParseWorkload(const YAML::Node& root, const std::string& path) {
  TrainingWorkload w;
  StorageModel storage;
  GPUFIT_CHECK(Fields(root, path).Only({"nodes", "jobs", "interruptions", "storage", "prices"}));
  if (const YAML::Node s = root["storage"]; s) {
    const Fields f(s, path + ": storage");
    GPUFIT_CHECK(f.Only({"write_gib_per_s", "read_gib_per_s", "reschedule_s"}));
    GPUFIT_TRY(wr, f.Number("write_gib_per_s", storage.write_gib_per_s));
    GPUFIT_TRY(rd, f.Number("read_gib_per_s", storage.read_gib_per_s));
    GPUFIT_TRY(rs, f.Number("reschedule_s", storage.reschedule.count()));
    if (wr <= 0 || rd <= 0) return InvalidArgument("{}: storage bandwidths must be > 0", path);
    storage = StorageModel{.write_gib_per_s = wr, .read_gib_per_s = rd, .reschedule = Seconds{rs}};
  }
  if (const YAML::Node in = root["interruptions"]; in) {
    const Fields f(in, path + ": interruptions");
    GPUFIT_CHECK(f.Only({"spot", "spot_by_gpu_model", "gpu_mtbf_h", "preemptions", "maintenance"}));
    for (std::size_t i = 0; in["preemptions"] && i < in["preemptions"].size(); ++i) {
      const Fields e(in["preemptions"][i], fmt::format("{}: interruptions.preemptions[{}]", path, i));
      GPUFIT_CHECK(e.Only({"node", "at_h"}));
      GPUFIT_TRY(node, e.Text("node"));
      GPUFIT_TRY(at_h, e.Number("at_h"));
      w.preemptions.push_back({.node = node, .at = Seconds{at_h * kH}});
    }
    for (std::size_t i = 0; in["maintenance"] && i < in["maintenance"].size(); ++i) {
      const Fields e(in["maintenance"][i], fmt::format("{}: interruptions.maintenance[{}]", path, i));
      GPUFIT_CHECK(e.Only({"node", "start_h", "duration_h"}));
      GPUFIT_TRY(node, e.Text("node"));
      GPUFIT_TRY(start_h, e.Number("start_h"));
      GPUFIT_TRY(duration_h, e.Number("duration_h"));
      w.maintenance.push_back({.node = node,
                               .start = Seconds{start_h * kH},
                               .duration = Seconds{duration_h * kH},
                               .cordon_at = std::nullopt});
    }
    if (in["spot"]) {
      GPUFIT_TRY(m, ParseMarket(in["spot"], path + ": interruptions.spot"));
      w.interruptions.spot = m;
    }
    if (const YAML::Node by = in["spot_by_gpu_model"]; by) {
      for (const auto& kv : by) {
        const std::string model = kv.first.Scalar();
        GPUFIT_TRY(m, ParseMarket(kv.second, path + ": interruptions.spot_by_gpu_model." + model));
        w.interruptions.spot_by_gpu_model[model] = m;
      }
    }
    GPUFIT_TRY(mtbf, f.NumberIn("gpu_mtbf_h", kDefaultGpuMtbfHours, kMinMtbfHours, kMaxMtbfHours, kMtbfWhy));
    w.interruptions.gpu_mtbf_hours = mtbf;
  }
  if (const YAML::Node prices = root["prices"]; prices) {
    for (const auto& kv : prices) {
      const std::string model = kv.first.Scalar();
      const Fields f(kv.second, path + ": prices." + model);
      GPUFIT_CHECK(f.Only({"on_demand_usd_per_gpu_hour", "spot_usd_per_gpu_hour"}));
      GPUFIT_TRY(od, f.Number("on_demand_usd_per_gpu_hour"));
      GPUFIT_TRY(spot, f.Number("spot_usd_per_gpu_hour"));
      w.prices[model] = GpuPrices{.on_demand_per_gpu_hour = Usd{od}, .spot_per_gpu_hour = Usd{spot}};
    }
  }
  std::set<std::string> node_names;
  if (const YAML::Node nodes = root["nodes"]; nodes) {
    if (!nodes.IsSequence()) return InvalidArgument("{}: nodes must be a list", path);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Fields f(nodes[i], fmt::format("{}: nodes[{}]", path, i));
      GPUFIT_TRY(name, f.Text("name"));
      const Fields g(nodes[i], fmt::format("{}: node {}", path, name));
      GPUFIT_CHECK(g.Only({"name", "gpus", "gpu_model", "capacity"}));
      if (name.empty()) return InvalidArgument("{}: name must not be empty", f.where());
      GPUFIT_TRY(gpus, g.Number("gpus", std::nullopt, 1));
      GPUFIT_TRY(model, g.Text("gpu_model"));
      GPUFIT_TRY(capacity, g.Text("capacity", "on-demand"));
      if (gpus != std::floor(gpus) || gpus > kMaxGpusPerNode) {
        return InvalidArgument("{}: gpus must be a whole number 1..{}, got {}", g.where(), kMaxGpusPerNode, gpus);
      }
      if (capacity != "spot" && capacity != "on-demand") {
        return InvalidArgument("{}: capacity must be spot or on-demand, got '{}'", g.where(), capacity);
      }
      if (!node_names.insert(name).second) return InvalidArgument("{}: duplicate node name '{}'", path, name);
      w.nodes.push_back({.name = name,
                         .gpu_count = static_cast<int>(gpus),
                         .gpu_model = model,
                         .capacity = capacity == "spot" ? CapacityType::kSpot : CapacityType::kOnDemand});
    }
  }
  const YAML::Node jobs = root["jobs"];
  if (!jobs || !jobs.IsSequence() || jobs.size() == 0)
    return InvalidArgument("{}: 'jobs' must be a non-empty list", path);
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Result<Entry> e = ParseJobEntry(jobs[i], path, i, node_names);
    if (!e) return e.error();
    entries.push_back(std::move(*e));
  }
  Result<std::vector<Entry>> merged = MergeGangs(std::move(entries), path);
  if (!merged) return merged.error();
  std::set<std::string> job_names;
  for (Entry& e : *merged) {
    TrainingJob& job = e.job;
    if (!job_names.insert(job.name).second) return InvalidArgument("{}: duplicate job name '{}'", path, job.name);
    // The checkpoint is sharded over every GPU of every pod, each writing and reading its shard.
    job.checkpoint_write = Seconds{e.write_s.value_or(storage.Write(e.size_gib, job.TotalGpus()).count())};
    job.restore = Seconds{e.restore_s.value_or(storage.Restore(e.size_gib, job.TotalGpus()).count())};
    if (job.checkpointing != Checkpointing::kNone && job.checkpoint_write < Seconds{1}) {
      return InvalidArgument(
          "{}: a job that checkpoints needs a checkpoint write of at least 1 s (checkpoint_write_s, or "
          "checkpoint_size_gib large enough), got {} s; use checkpointing: none for a job that does not",
          e.where, job.checkpoint_write.count());
    }
    w.jobs.push_back(std::move(job));
    w.running.push_back(std::move(e.running));
  }
  for (const SpotReclaim& e : w.preemptions) {
    if (!node_names.contains(e.node))
      return InvalidArgument("{}: interruptions.preemptions: unknown node '{}'", path, e.node);
  }
  for (const MaintenanceWindow& e : w.maintenance) {
    if (!node_names.contains(e.node))
      return InvalidArgument("{}: interruptions.maintenance: unknown node '{}'", path, e.node);
  }
  // Running jobs must fit their nodes: GPU model and GPU count, per pod.
  std::map<std::string, int> used;
  for (std::size_t j = 0; j < w.jobs.size(); ++j) {
    if (!w.running[j]) continue;
    const TrainingJob& job = w.jobs[j];
    for (const std::string& name : w.running[j]->nodes) {
      const auto node =
          std::find_if(w.nodes.begin(), w.nodes.end(), [&](const TrainingNode& n) { return n.name == name; });
      if (!job.gpu_model.empty() && job.gpu_model != node->gpu_model) {
        return InvalidArgument("{}: job {} needs {} GPUs but runs on node {} ({})", path, job.name, job.gpu_model,
                               node->name, node->gpu_model);
      }
      if ((used[node->name] += job.gpu_count) > node->gpu_count) {
        return InvalidArgument("{}: node {} has {} GPUs but its running jobs use {}", path, node->name, node->gpu_count,
                               used[node->name]);
      }
    }
  }
  return w;
}

}  // namespace

Result<Checkpointing> ParseCheckpointing(const std::string& s, const std::string& where) {
  if (s == "transparent") return Checkpointing::kTransparent;
  if (s == "application") return Checkpointing::kApplication;
  if (s == "none") return Checkpointing::kNone;
  return InvalidArgument("{}: checkpointing must be transparent, application or none, got '{}'", where, s);
}

const char* CheckpointingName(Checkpointing c) {
  switch (c) {
    case Checkpointing::kTransparent:
      return "transparent";
    case Checkpointing::kApplication:
      return "application";
    case Checkpointing::kNone:
      return "none";
  }
  return "?";
}

Result<SpotMarket> SpotMarketFromBand(const std::string& band, Seconds notice) {
  static const std::unordered_map<std::string, double> kUpper = {
      {"<5%", 0.05}, {"5-10%", 0.10}, {"10-15%", 0.15}, {"15-20%", 0.20}};
  const auto it = kUpper.find(band);
  if (it == kUpper.end()) {
    return InvalidArgument(
        "spot band must be one of <5%, 5-10%, 10-15%, 15-20% (for >20% give monthly_fraction or mtbi_h), got '{}'",
        band);
  }
  return SpotMarket{.interruptions_per_hour = RatePerHourFromMonthlyFraction(it->second),
                    .notice = notice,
                    .basis = fmt::format("AWS Spot Advisor band {} read at its upper bound {:.0f}% of instances "
                                         "interrupted per 730-h month, exponential lifetimes (assumption)",
                                         band, 100 * it->second)};
}

Result<TrainingWorkload> ReadTrainingWorkload(const std::string& path) {
  if (Result<void> ok = CheckInputFile(path); !ok) return ok.error();
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return NotFound("{}: cannot read it", path);
  return ParseTrainingWorkload(text.str(), path);
}

Result<TrainingWorkload> ParseTrainingWorkload(const std::string& yaml, const std::string& source) {
  if (Result<void> ok = CheckYamlNesting(yaml, source); !ok) return ok.error();
  try {
    return ParseWorkload(YAML::Load(yaml), source);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}: line {}: {}", source, e.mark.line + 1, e.msg);
  }
}

std::vector<TrainingJob> TrainingJobsFromOpenb(const std::vector<PodSpec>& pods, const OpenbTrainingOptions& o) {
  std::vector<TrainingJob> jobs;
  for (const PodSpec& p : pods) {
    if (p.gpu_count < 1 || p.gpu_per_gpu.value != 1000 || !p.deletion) continue;
    const Seconds life = *p.deletion - p.creation;
    if (life < Seconds{o.min_hours * kH} || life > Seconds{o.max_hours * kH}) continue;
    const double gib = o.checkpoint_gib_per_gpu * p.gpu_count;
    TrainingJob j{.name = p.name,
                  .gpu_count = p.gpu_count,
                  .gpu_model = p.gpu_models.empty() ? std::string() : p.gpu_models.front(),
                  .work = life,
                  .checkpoint_write = o.storage.Write(gib, p.gpu_count),
                  .restore = o.storage.Restore(gib, p.gpu_count),
                  .checkpoint_size = MiB{static_cast<std::int64_t>(gib * 1024)},
                  .submit = p.creation,
                  .deadline = std::nullopt,
                  .checkpointing = o.checkpointing,
                  .disruption_group = "",
                  .max_unavailable = 1,
                  .pods = 1,
                  .gang = ""};
    if (o.deadline_factor > 0) j.deadline = p.creation + o.deadline_factor * life;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

#undef GPUFIT_TRY
#undef GPUFIT_CHECK

}  // namespace gpufit

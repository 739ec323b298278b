#include "mig_command.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "gpufit/analyze/profile.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/core/output_lock.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "gpufit/optimize/mig_planner.h"
#include "gpufit/placement/mig_layout.h"
#include "gpufit/plan/plan.h"

namespace gpufit::cli {
namespace {

using nlohmann::json;

struct MigFlags {
  std::vector<std::string> layouts;  // mig check: one --profiles per GPU of the node
  std::string node;
  std::string gpu, instances, want, format = "text", telemetry, out_dir, strategy = "mixed", current, target,
                                    objective = "gpus", max_gpus;
  double headroom = 0.10;
  double max_seconds = 30;
  int compute_slices = 0;
  int gpus_per_node = 1;
};

json Instances(const std::vector<MigInstance>& xs) {
  json a = json::array();
  for (const MigInstance& i : xs)
    a.push_back({{"profile", i.profile->name},
                 {"start", i.start},
                 {"resource", i.profile->resource_name()},
                 {"memory_mib", i.profile->memory.value},
                 {"memory_derived", i.profile->memory_derived},
                 {"placement_inferred", i.profile->placement_inferred}});
  return a;
}

std::string Words(const std::vector<MigInstance>& xs) {
  std::string out;
  for (const MigInstance& i : xs) out += fmt::format("{}{}@{}", out.empty() ? "" : ", ", i.profile->name, i.start);
  return out.empty() ? "none" : out;
}

// One GPU of `mig check`: its profiles ("none" under --node: MIG disabled) and the verdict.
struct CheckedGpu {
  std::vector<const MigProfile*> profiles;
  MigLayoutCheck check;
};

Result<CheckedGpu> CheckGpuLayout(const MigGpu& gpu, const std::string& text, const std::string& flag, bool node) {
  CheckedGpu out;
  if (node && text == "none") {  // MIG disabled: a whole GPU
    out.check.valid = true;
    return out;
  }
  int media = 0;
  for (const std::string& name : SplitList(text, ',')) {
    Result<const MigProfile*> p = gpu.Profile(name);
    if (!p) return Error{p.error().code, flag + ": " + p.error().message};
    media += (*p)->media_extension();
    out.profiles.push_back(*p);
  }
  if (out.profiles.empty())
    return InvalidArgument("{}: give at least one profile{}", flag, node ? " (or none: MIG disabled)" : "");
  if (media > 1) return InvalidArgument("{}: {} media-extension (+me) instances, a GPU holds at most one", flag, media);
  out.check = CheckMigLayout(gpu, out.profiles);
  return out;
}

json GpuJson(const CheckedGpu& g) {
  const MigLayoutCheck& c = g.check;
  return {{"valid", c.valid},
          {"reason", c.valid ? json(nullptr) : json(c.reason)},
          {"placements", Instances(c.placements)},
          {"creation_order", Instances(c.creation_order)},
          {"stranded_compute_slices", c.valid ? json(c.stranded_compute_slices) : json(nullptr)}};
}

std::string GpuText(const MigLayoutCheck& c) {
  return fmt::format(
      "placements (profile@first memory slice): {}\ncreate in this order: {}\nstranded compute slices: {}\n",
      Words(c.placements), Words(c.creation_order), c.stranded_compute_slices);
}

// `mig check`: one GPU (--profiles once), or a node (--node, one --profiles per GPU in index
// order): each GPU's layout, then the node against the strategy's rules across its GPUs.
int Check(const MigFlags& f) {
  Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(f.gpu);
  if (!gpu) return Fail(Error{gpu.error().code, "--gpu: " + gpu.error().message});
  const bool node = !f.node.empty();
  if (!node && f.layouts.size() > 1)
    return Fail(InvalidArgument(
        "--profiles given {} times: name the node with --node to check one layout per GPU (GPU 0, 1, ... in order)",
        f.layouts.size()));
  std::vector<CheckedGpu> gpus;
  for (std::size_t g = 0; g < f.layouts.size(); ++g) {
    Result<CheckedGpu> c =
        CheckGpuLayout(**gpu, f.layouts[g], node ? fmt::format("--profiles (GPU {})", g) : "--profiles", node);
    if (!c) return Fail(c.error());
    gpus.push_back(std::move(*c));
  }
  const MigStrategy strategy = f.strategy == "single" ? MigStrategy::kSingle : MigStrategy::kMixed;
  std::vector<std::vector<const MigProfile*>> layouts;
  for (const CheckedGpu& g : gpus) layouts.push_back(g.profiles);
  const std::string broken = MigStrategyProblem(strategy, layouts, f.node);
  if (!node) {
    MigLayoutCheck c = gpus[0].check;
    if (c.valid && !broken.empty()) {
      c = MigLayoutCheck{};
      c.reason = broken;
    }
    if (f.format == "json") {
      json j = GpuJson({gpus[0].profiles, c});
      j["gpu"] = f.gpu;
      std::cout << j.dump(2) << "\n";
    } else if (c.valid) {
      std::cout << fmt::format("valid on {}\n{}", f.gpu, GpuText(c));
    } else {
      std::cout << fmt::format("not valid on {}: {}\n", f.gpu, c.reason);
    }
    return c.valid ? 0 : 3;
  }
  // The node: the first GPU whose own layout is invalid, else the rule across its GPUs.
  std::string reason;
  for (std::size_t g = 0; g < gpus.size() && reason.empty(); ++g)
    if (!gpus[g].check.valid) reason = fmt::format("node {}: GPU {}: {}", f.node, g, gpus[g].check.reason);
  if (reason.empty()) reason = broken;
  const bool valid = reason.empty();
  if (f.format == "json") {
    json per_gpu = json::array();
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      json one = GpuJson(gpus[g]);
      one["index"] = g;
      one["mig_enabled"] = !gpus[g].profiles.empty();
      per_gpu.push_back(std::move(one));
    }
    const json j = {{"node", f.node},
                    {"gpu", f.gpu},
                    {"strategy", f.strategy},
                    {"valid", valid},
                    {"reason", valid ? json(nullptr) : json(reason)},
                    {"gpus", std::move(per_gpu)}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::string text =
        valid ? fmt::format("node {} ({} x {}, {} strategy): valid\n", f.node, gpus.size(), f.gpu, f.strategy)
              : fmt::format("node {} ({} x {}, {} strategy): not valid: {}\n", f.node, gpus.size(), f.gpu, f.strategy,
                            reason);
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const MigLayoutCheck& c = gpus[g].check;
      if (gpus[g].profiles.empty())
        text += fmt::format("GPU {}: MIG disabled\n", g);
      else if (c.valid)
        text += fmt::format("GPU {}: valid\n{}", g, GpuText(c));
      else
        text += fmt::format("GPU {}: not valid: {}\n", g, c.reason);
    }
    std::cout << text;
  }
  return valid ? 0 : 3;
}

Result<std::vector<MigInstance>> ParseInstances(const MigGpu& gpu, const std::string& text, const char* flag) {
  std::vector<MigInstance> out;
  for (const std::string& item : SplitList(text, ',')) {
    const std::size_t at = item.find('@');
    if (at == std::string::npos) return InvalidArgument("{}: '{}' must be PROFILE@START, e.g. 3g.40gb@4", flag, item);
    Result<const MigProfile*> p = gpu.Profile(item.substr(0, at));
    if (!p) return Error{p.error().code, std::string(flag) + ": " + p.error().message};
    int start = -1;
    const std::string s = item.substr(at + 1);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), start);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || start < 0)
      return InvalidArgument("{}: '{}': the start must be a memory slice number", flag, item);
    out.push_back({*p, start});
  }
  if (Result<void> ok = ValidateMigInstances(gpu, out); !ok)
    return Error{ok.error().code, std::string(flag) + ": " + ok.error().message};
  return out;
}

int Free(const MigFlags& f) {
  Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(f.gpu);
  if (!gpu) return Fail(Error{gpu.error().code, "--gpu: " + gpu.error().message});
  Result<std::vector<MigInstance>> existing = ParseInstances(**gpu, f.instances, "--instances");
  if (!existing) return Fail(existing.error());
  const MigProfile* want = nullptr;
  if (!f.want.empty()) {
    Result<const MigProfile*> p = (*gpu)->Profile(f.want);
    if (!p) return Fail(Error{p.error().code, "--want: " + p.error().message});
    want = *p;
  }
  const MigFreeCapacity free = FreeMigCapacity(**gpu, *existing);
  json creatable = json::object();
  for (const auto& [p, n] : free.creatable) creatable[p->name] = n;
  json j = {{"gpu", f.gpu},
            {"instances", Instances(*existing)},
            {"creatable", creatable},
            {"largest_creatable", free.largest_creatable ? json(free.largest_creatable->name) : json(nullptr)},
            {"free_memory_slices", free.free_memory_slices},
            {"unusable_free_slices", free.unusable_free_memory_slices}};
  std::string moves_text;
  if (want) {
    const MigMoves m = FewestMigMoves(**gpu, *existing, *want);
    j["moves"] = {{"want", want->name},
                  {"possible", m.possible},
                  {"count", m.possible ? json(m.moved_from.size()) : json(nullptr)},
                  {"destroy", Instances(m.moved_from)},
                  {"recreate", Instances(m.moved_to)},
                  {"want_start", m.possible ? json(m.want_start) : json(nullptr)}};
    moves_text =
        !m.possible ? fmt::format("{} cannot be created on {} with these instances, however moved\n", want->name, f.gpu)
        : m.moved_from.empty() ? fmt::format("{} can be created now at memory slice {}\n", want->name, m.want_start)
                               : fmt::format("to create {} at memory slice {}: destroy {}, re-create them as {}\n",
                                             want->name, m.want_start, Words(m.moved_from), Words(m.moved_to));
  }
  if (f.format == "json") {
    std::cout << j.dump(2) << "\n";
  } else {
    std::string list;
    for (const auto& [p, n] : free.creatable) list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", p->name, n);
    std::cout << fmt::format("creatable now (each alone): {}\nfree memory slices: {} ({} unusable)\n{}",
                             list.empty() ? "nothing" : list, free.free_memory_slices, free.unusable_free_memory_slices,
                             moves_text);
  }
  return 0;
}

int Plan(const MigFlags& f) {
  // The pool: one or more MIG-capable models, priced from the GPU catalog.
  std::vector<MigPoolGpu> pool;
  const std::vector<std::string> ids = SplitList(f.gpu, ',');
  const std::vector<std::string> limits = SplitList(f.max_gpus, ',');
  if (!limits.empty() && limits.size() != ids.size())
    return Fail(InvalidArgument("--max-gpus: give one limit per --gpu model ({}), got {}", ids.size(), limits.size()));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(ids[i]);
    if (!gpu) return Fail(Error{gpu.error().code, "--gpu: " + gpu.error().message});
    MigPoolGpu m{*gpu, 1.0, -1};
    if (const Result<GpuModel> priced = GpuCatalog::Embedded().Find(ids[i])) {
      m.usd_per_gpu_hour = priced->on_demand_per_gpu_hour.value;
    } else if (f.objective == "cost") {
      return Fail(InvalidArgument("--objective cost: {} has no price in the GPU catalog", ids[i]));
    }
    if (!limits.empty()) {
      const auto [end, ec] = std::from_chars(limits[i].data(), limits[i].data() + limits[i].size(), m.max_gpus);
      if (ec != std::errc() || end != limits[i].data() + limits[i].size() || m.max_gpus < 0)
        return Fail(InvalidArgument("--max-gpus: '{}' is not a whole number >= 0", limits[i]));
    }
    pool.push_back(m);
  }
  if (pool.empty()) return Fail(InvalidArgument("--gpu: give at least one MIG-capable GPU id"));
  if (!(f.headroom >= 0 && f.headroom <= 10)) return Fail(InvalidArgument("--headroom must be in [0, 10]"));
  const Result<Telemetry> tel = ReadTelemetry(f.telemetry);
  if (!tel) return Fail(tel.error());
  if (!f.out_dir.empty())  // fail before the search, not after; nothing written yet
    if (Result<void> ok = CheckOutputDir(f.out_dir, "--out"); !ok) return Fail(ok.error());
  // Right-sizing as in `plan`: each pod needs its peak GPU memory plus the headroom.
  std::vector<MigWorkload> workloads;
  const std::vector<PodProfile> profiles = ProfileAll(*tel);
  for (const PodProfile& p : profiles)
    workloads.push_back(
        {p.pod, MiB{static_cast<std::int64_t>(std::ceil(p.fb_used_mib.peak * (1 + f.headroom)))}, f.compute_slices});
  MigPlanOptions options;
  options.max_seconds = f.max_seconds;
  options.strategy = f.strategy == "single" ? MigStrategy::kSingle : MigStrategy::kMixed;
  options.minimize_cost = f.objective == "cost";
  options.gpus_per_node = f.gpus_per_node;
  if (f.gpus_per_node > 1 && options.strategy == MigStrategy::kMixed)
    return Fail(InvalidArgument(
        "--gpus-per-node {}: only the single strategy has a rule across a node's GPUs; add --strategy single",
        f.gpus_per_node));
  const Result<MigPlan> plan = PlanMigPool(pool, workloads, options);
  if (!plan) return Fail(plan.error());
  // Replay: every sample of every pod against its instance's memory.
  int exceeding = 0;
  for (std::size_t i = 0; i < tel->pods.size(); ++i) {
    const MigAssignment& a = plan->assignments[i];
    if (a.gpu < 0) continue;
    const MigGpu& model = **MigCatalog::Embedded().Find(plan->gpu_plans[static_cast<std::size_t>(a.gpu)].gpu_model);
    const MiB memory = (*model.Profile(a.profile))->memory;
    const auto& s = tel->pods[i].fb_used_mib;
    exceeding += std::any_of(s.begin(), s.end(), [&](float v) { return v > static_cast<float>(memory.value); });
  }
  // Soft sharing (co-location without isolation) on the same telemetry, when the GPU is in the catalog.
  json soft = nullptr;
  if (pool.size() == 1 && GpuCatalog::Embedded().Find(f.gpu)) {
    PlanOptions po;
    po.target_gpu = f.gpu;
    po.headroom = f.headroom;
    const Result<gpufit::Plan> shared = BuildPlan(*tel, GpuCatalog::Embedded(), po, f.telemetry);
    if (shared) soft = {{"gpus", shared->totals.gpus_after}, {"lower_bound", shared->totals.gpus_lower_bound}};
  }
  json gpus = json::array();
  for (const MigGpuPlan& g : plan->gpu_plans) {
    json inst = json::array();
    for (std::size_t i = 0; i < g.instances.size(); ++i)
      inst.push_back({{"profile", g.instances[i].profile->name},
                      {"start", g.instances[i].start},
                      {"workload", g.workloads[i].empty() ? json(nullptr) : json(g.workloads[i])}});
    gpus.push_back({{"config", g.config},
                    {"gpu_model", g.gpu_model},
                    {"node", g.node < 0 ? json(nullptr) : json(g.node)},
                    {"instances_in_creation_order", inst}});
  }
  json labels = json::object();  // what the GPU Operator's MIG manager reads on a node
  for (const auto& [name, layout] : plan->configs) labels[name] = {{"nvidia.com/mig.config", name}};
  json assignments = json::array();
  for (const MigAssignment& a : plan->assignments)
    assignments.push_back({{"workload", a.workload},
                           {"gpu", a.gpu},
                           {"profile", a.profile.empty() ? json(nullptr) : json(a.profile)},
                           {"resource", a.resource.empty() ? json(nullptr) : json(a.resource)}});
  const json j = {{"gpu", f.gpu},
                  {"strategy", f.strategy},
                  {"telemetry", f.telemetry},
                  {"headroom", f.headroom},
                  {"workloads", workloads.size()},
                  {"gpus", plan->gpus},
                  {"gpus_per_node", f.gpus_per_node},
                  {"nodes", f.gpus_per_node > 1 ? json(plan->nodes) : json(nullptr)},
                  {"lower_bound", plan->lower_bound},
                  {"bound", plan->bound},
                  {"optimal", plan->optimal},
                  {"gap", plan->gap},
                  {"first_fit_gpus", plan->first_fit_gpus},
                  {"soft_sharing", soft},
                  {"replay_pods_exceeding_instance_memory", exceeding},
                  {"too_big", plan->too_big},
                  {"objective", f.objective},
                  {"objective_value", plan->objective},
                  {"configs", plan->configs},
                  {"node_labels", labels},
                  {"gpu_plans", gpus},
                  {"assignments", assignments}};
  const std::string yaml = MigPartedConfig(*plan);
  const std::string text = fmt::format(
      "MIG plan on {}: {} GPUs for {} pods ({} {:.2f}, proven bound {:.2f}, gap {:.1f}%, {}); "
      "first-fit decreasing on {}: {} GPUs\n"
      "soft sharing on the same GPU model (gpufit plan): {}\n"
      "replay: {} pods exceed their instance's memory\n{} distinct layouts: {}\n{}",
      f.gpu, plan->gpus, workloads.size(), f.objective == "cost" ? "USD/hour" : "GPUs", plan->objective, plan->bound,
      100 * plan->gap, plan->optimal ? "optimal" : "time limit", ids.front(), plan->first_fit_gpus,
      soft.is_null() ? std::string(pool.size() > 1 ? "n/a (a pool of several models)" : "n/a (no catalog price)")
                     : fmt::format("{} GPUs", soft["gpus"].get<int>()),
      exceeding, plan->configs.size(), nlohmann::json(plan->configs).dump(),
      f.gpus_per_node > 1
          ? fmt::format("{} nodes of {} GPUs, each of one layout (single strategy: one MIG device type per node)\n",
                        plan->nodes, f.gpus_per_node)
          : std::string());
  if (!f.out_dir.empty()) {
    const std::filesystem::path dir(f.out_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Fail(InvalidArgument("--out {}: cannot create the directory: {}", f.out_dir, ec.message()));
    const Result<OutputLock> lock = LockOutputFolders({{dir, "--out"}}, kOutputLockWaitS);
    if (!lock) return Fail(lock.error());
    if (Result<void> w =
            WriteFilesAtomically({{dir / "mig-plan.json", j.dump(2) + "\n"}, {dir / "mig-parted.yaml", yaml}});
        !w)
      return Fail(w.error());
  }
  std::cout << (f.format == "json" ? j.dump(2) + "\n" : text);
  return 0;
}

int Reconfigure(const MigFlags& f) {
  Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(f.gpu);
  if (!gpu) return Fail(Error{gpu.error().code, "--gpu: " + gpu.error().message});
  // --current PROFILE@START[=POD],...: the pods tell which ones must move first.
  std::string plain;
  std::map<std::pair<std::string, int>, std::string> pod_at;
  for (const std::string& item : SplitList(f.current, ',')) {
    const std::size_t eq = item.find('=');
    const std::string inst = item.substr(0, eq);
    plain += (plain.empty() ? "" : ",") + inst;
    if (eq != std::string::npos) {
      const std::size_t at = inst.find('@');
      if (at != std::string::npos) pod_at[{inst.substr(0, at), std::atoi(inst.c_str() + at + 1)}] = item.substr(eq + 1);
    }
  }
  Result<std::vector<MigInstance>> current = ParseInstances(**gpu, plain, "--current");
  if (!current) return Fail(current.error());
  std::vector<const MigProfile*> target;
  for (const std::string& name : SplitList(f.target, ',')) {
    Result<const MigProfile*> p = (*gpu)->Profile(name);
    if (!p) return Fail(Error{p.error().code, "--target: " + p.error().message});
    target.push_back(*p);
  }
  int media = 0;
  for (const MigProfile* p : target) media += p->media_extension();
  if (media > 1)
    return Fail(InvalidArgument("--target: {} media-extension (+me) instances, a GPU holds at most one", media));
  std::vector<bool> occupied;
  for (const MigInstance& i : *current) occupied.push_back(pod_at.count({i.profile->name, i.start}) > 0);
  const MigReconfiguration r = PlanMigReconfiguration(**gpu, *current, target, occupied);
  json pods = json::array();
  json destroy = json::array();
  for (const MigInstance& i : r.destroy) {
    const auto it = pod_at.find({i.profile->name, i.start});
    destroy.push_back({{"profile", i.profile->name},
                       {"start", i.start},
                       {"pod", it == pod_at.end() ? json(nullptr) : json(it->second)}});
    if (it != pod_at.end()) pods.push_back(it->second);
  }
  const json j = {{"gpu", f.gpu},
                  {"possible", r.possible},
                  {"reason", r.possible ? json(nullptr) : json(r.reason)},
                  {"keep", Instances(r.keep)},
                  {"destroy", destroy},
                  {"create_in_order", Instances(r.create)},
                  {"pods_to_move_first", pods}};
  if (f.format == "json") {
    std::cout << j.dump(2) << "\n";
  } else if (!r.possible) {
    std::cout << fmt::format("target layout not valid on {}: {}\n", f.gpu, r.reason);
  } else {
    std::cout << fmt::format("keep: {}\nmove these pods first: {}\ndestroy: {}\ncreate, in this order: {}\n",
                             Words(r.keep), pods.empty() ? std::string("none") : pods.dump(), Words(r.destroy),
                             Words(r.create));
  }
  return r.possible ? 0 : 3;
}

}  // namespace

void AddMigCommand(CLI::App& app, int& rc) {
  auto flags = std::make_shared<MigFlags>();
  CLI::App* mig = app.add_subcommand("mig", "NVIDIA MIG layouts: check a layout, see what still fits");
  mig->require_subcommand(1);
  CLI::App* check = mig->add_subcommand("check",
                                        "is this multiset of MIG profiles valid on one GPU (or these layouts on the "
                                        "GPUs of a node); where and in what order to create it (exit 3 if not valid)");
  check->add_option("--gpu", flags->gpu, "MIG-capable GPU id, e.g. h100-80gb")->required();
  check
      ->add_option("--profiles", flags->layouts,
                   "profiles as NVIDIA names them, e.g. 3g.40gb,2g.20gb,1g.10gb; with --node once per GPU in index "
                   "order, none for a GPU with MIG disabled")
      ->required()
      ->allow_extra_args(false);
  check->add_option("--node", flags->node, "check a node: its name; one --profiles per GPU, then the strategy's rules");
  check->add_option("-f,--format", flags->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  check
      ->add_option("--strategy", flags->strategy,
                   "GPU Operator MIG strategy: mixed or single (one MIG device type across the node's GPUs)")
      ->check(CLI::IsMember({"mixed", "single"}));
  check->callback([flags, &rc] { rc = Check(*flags); });
  CLI::App* free = mig->add_subcommand("free", "what can still be created next to existing instances");
  free->add_option("--gpu", flags->gpu, "MIG-capable GPU id, e.g. h100-80gb")->required();
  free->add_option("--instances", flags->instances, "existing instances as PROFILE@START, e.g. 1g.10gb@1,1g.10gb@5");
  free->add_option("--want", flags->want, "a profile to make room for, with the fewest instance moves");
  free->add_option("-f,--format", flags->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  free->callback([flags, &rc] { rc = Free(*flags); });
  CLI::App* plan = mig->add_subcommand("plan", "fewest MIG GPUs for pods sized by their telemetry peaks (exact MIP)");
  plan->add_option("--telemetry", flags->telemetry, "GenTD26 directory or long CSV file")->required();
  plan->add_option("--gpu", flags->gpu, "MIG-capable GPU ids, e.g. h100-80gb or h100-80gb,h200-141gb (a pool)")
      ->required();
  plan->add_option("--objective", flags->objective, "minimize gpus (default) or cost (on-demand catalog prices)")
      ->check(CLI::IsMember({"gpus", "cost"}));
  plan->add_option("--max-gpus", flags->max_gpus, "GPUs available per --gpu model, e.g. 40,20 (default: no limit)");
  plan->add_option("--compute-slices", flags->compute_slices,
                   "compute slices every pod needs at least (default 0: any)")
      ->check(CLI::Range(0, 8));
  plan->add_option("--headroom", flags->headroom, "memory need = peak x (1 + headroom)")->capture_default_str();
  plan->add_option("--max-seconds", flags->max_seconds, "solver time limit")->check(CLI::Range(0.1, 3600.0));
  plan->add_option("-f,--format", flags->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  AddShortOutputOption(
      plan, {"text", "json"}, [flags](const std::string& v) { flags->format = v; }, flags->out_dir);
  plan->add_option("--out", flags->out_dir, "also write mig-plan.json and mig-parted.yaml here (atomically)");
  plan->add_option("--strategy", flags->strategy, "GPU Operator MIG strategy: mixed or single (one profile per node)")
      ->check(CLI::IsMember({"mixed", "single"}));
  plan->add_option("--gpus-per-node", flags->gpus_per_node,
                   "with --strategy single: GPUs per node; plans whole nodes, each of one MIG device type")
      ->check(CLI::Range(1, 1024));
  plan->callback([flags, &rc] { rc = Plan(*flags); });
  CLI::App* re = mig->add_subcommand("reconfigure",
                                     "from the current instances to a target layout: what to keep, "
                                     "destroy and create, and which pods move first (exit 3 if the "
                                     "target is not valid)");
  re->add_option("--gpu", flags->gpu, "MIG-capable GPU id, e.g. h100-80gb")->required();
  re->add_option("--current", flags->current, "instances now, PROFILE@START[=POD], e.g. 3g.40gb@0=web-1,1g.10gb@4");
  re->add_option("--target", flags->target, "the layout wanted, e.g. 3g.40gb,2g.20gb,2g.20gb")->required();
  re->add_option("-f,--format", flags->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  re->callback([flags, &rc] { rc = Reconfigure(*flags); });
}

}  // namespace gpufit::cli

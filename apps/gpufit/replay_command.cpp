#include "replay_command.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_common.h"
#include "gpufit/core/json_input.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/plan/replay.h"
#include "gpufit/plan/workload_keys.h"
#include "kube_source.h"
#include "replay_plan_file.h"
#include "telemetry_source.h"

namespace gpufit::cli {
namespace {

using nlohmann::json;

struct ReplayFlags {
  TelemetrySource telemetry;
  std::string plan, catalog, pods;
  KubeApiFlags kube;       // --kubeconfig, --context: the pods from the API server
  std::string pods_label;  // the pods' file, or "the pods of <server>"
  Output output;
};

int Run(ReplayFlags& f) {
  const Result<GpuCatalog> catalog = LoadCatalog(f.catalog);
  if (!catalog) return Fail(catalog.error());
  Result<json> read = ReadJsonFile<json>(f.plan);
  if (!read) return Fail(read.error());
  const json plan = std::move(*read);
  if (!f.telemetry.given()) return Fail(InvalidArgument("replay: give --telemetry or --prometheus"));
  std::optional<std::vector<KubePod>> pods;
  f.pods_label = f.pods;
  Result<std::unique_ptr<ClusterSource>> source = MakeClusterSource(f.kube, {.nodes = "", .pods = f.pods}, "--pods");
  if (!source) return Fail(source.error());
  if (*source != nullptr) {
    Result<ClusterObjects> cluster = ReadCluster(**source, f.kube);
    if (!cluster) return Fail(cluster.error());
    pods = std::move(cluster->pods);
    if (f.kube.given()) f.pods_label = "the pods of " + (*source)->Name();
  }
  if (pods) f.telemetry.ends = PodEndsFromKubePods(*pods);  // cut as `plan --pods` cut them
  const Result<Telemetry> tel = LoadTelemetry(f.telemetry, NowSeconds());
  if (!tel) return Fail(tel.error());
  const std::string& telemetry_path = f.telemetry.name;
  Replay r;
  std::optional<CapReplay> over_cap;
  json unplanned = json::array(), absent = json::array(), not_in_pods = json::array();
  std::string md_extra;
  try {
    const Result<Limits> limits = ReadLimits(plan, *catalog, f.plan);
    if (!limits) return Fail(limits.error());
    const Result<std::optional<Caps>> caps = ReadCaps(plan, f.plan);
    if (!caps) return Fail(caps.error());
    std::vector<std::optional<double>> cap_of(tel->pods.size());
    if (!pods) {
      const Result<std::vector<std::vector<std::size_t>>> groups =
          GroupsByName(plan, *tel, *limits, f.plan, telemetry_path);
      if (!groups) return Fail(groups.error());
      r = ReplayColocation(*tel, *groups, limits->capacity, limits->share);
      if (*caps)
        for (std::size_t i = 0; i < tel->pods.size(); ++i)
          if (const auto it = (*caps)->by_pod.find(tel->pods[i].pod); it != (*caps)->by_pod.end())
            cap_of[i] = it->second;
    } else {
      const Result<WorkloadPlan> wplan = ReadWorkloadPlan(plan, f.plan);
      if (!wplan) return Fail(wplan.error());
      std::vector<std::string> keys;
      for (const PodSeries& p : tel->pods) {
        keys.push_back(WorkloadKeyOf(p.pod, *pods));
        if (FindKubePod(*pods, p.pod) == nullptr && keys.back().starts_with("pod/")) not_in_pods.push_back(p.pod);
      }
      const Result<WorkloadReplay> w =
          ReplayByWorkload(*tel, keys, *wplan, limits->capacity, limits->share, limits->capacity - limits->margin);
      if (!w) return Fail(InvalidArgument("{}: {}", f.plan, w.error().message));
      r = w->replay;
      if (*caps)
        for (std::size_t i = 0; i < tel->pods.size(); ++i)
          if (const auto it = (*caps)->by_workload.find(keys[i]); it != (*caps)->by_workload.end())
            cap_of[i] = it->second;
      for (const UnplannedWorkload& u : w->unplanned) {
        unplanned.push_back({{"workload", u.workload},
                             {"replicas", u.replicas},
                             {"planned_slots", u.planned_slots},
                             {"unplanned_replicas", u.replicas - u.planned_slots},
                             {"pods", u.pods}});
        md_extra += fmt::format("- unplanned: {} ({} replicas, {} planned slots): {}\n", u.workload, u.replicas,
                                u.planned_slots, fmt::join(u.pods, ", "));
      }
      for (const std::string& a : w->absent) {
        absent.push_back(a);
        md_extra += fmt::format("- absent (its slots stay empty): {}\n", a);
      }
      if (!not_in_pods.empty())
        md_extra += fmt::format("- {} telemetry pods are not in {} and were matched by name\n", not_in_pods.size(),
                                f.pods_label);
    }
    if (*caps) over_cap = ReplayCaps(*tel, cap_of);
  } catch (const json::exception& e) {
    return Fail(InvalidArgument("{}: {}", f.plan, FieldError(e)));
  }
  const bool safe = r.safe && (!over_cap || over_cap->samples_over == 0);
  if (over_cap)
    for (const std::string& p : over_cap->pods) md_extra += fmt::format("- over its memory cap: {}\n", p);
  json j = {
      {"gpus", r.gpus.size()}, {"memory_overflows", r.memory_overflows}, {"max_collision_share", r.max_collision_share},
      {"safe", safe},          {"matching", pods ? "workload" : "pod"},  {"unplanned", unplanned},
      {"absent", absent},      {"pods_not_in_pods_file", not_in_pods}};
  if (over_cap) {
    // Plans for hami, kai, dra-mps: each pod runs under its own cap.
    j["cap_overflow_samples"] = over_cap->samples_over;
    j["over_cap"] = over_cap->pods;
  }
  std::string md = fmt::format(
      "Replay of {} against {}{}: {} GPUs, {} memory overflows{}, worst collision share {:.2f}% -> {}\n", f.plan,
      telemetry_path, pods ? fmt::format(" by workload ({})", f.pods_label) : std::string(), r.gpus.size(),
      r.memory_overflows,
      over_cap ? fmt::format(", {} samples of a pod over its memory cap", over_cap->samples_over) : std::string(),
      100 * r.max_collision_share, safe ? "safe" : "UNSAFE");
  md += md_extra;
  const int rc = Emit(f.output, "replay", j.dump(2) + "\n", md);
  return rc != 0 ? rc : (safe ? 0 : 3);
}

}  // namespace

void AddReplayCommand(CLI::App& app, int& rc) {
  auto f = std::make_shared<ReplayFlags>();
  CLI::App* cmd = app.add_subcommand("replay", "replay telemetry against a plan.json; exit 3 if unsafe");
  AddTelemetrySourceOptions(cmd, f->telemetry);
  cmd->add_option("--plan", f->plan, "plan.json written by gpufit plan")->required();
  cmd->add_option("--catalog", f->catalog, "GPU catalog YAML the plan was made with (default: embedded)");
  cmd->add_option("--pods", f->pods,
                  "kubectl get pods -A -o json of the replayed period: match pods to the plan by workload (a plan "
                  "made with plan --pods), so renamed pods after a rollout still match");
  AddKubeApiOptions(cmd, f->kube);
  AddOutputOptions(cmd, f->output);
  cmd->callback([f, &rc] { rc = Run(*f); });
}

}  // namespace gpufit::cli

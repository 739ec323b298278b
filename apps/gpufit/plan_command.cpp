#include "plan_command.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "cli_common.h"
#include "cluster_source.h"
#include "cluster_training.h"
#include "demo_cluster.h"
#include "gpufit/backtest/backtest.h"
#include "gpufit/backtest/status.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/ingest/files/gentd26_serving_reader.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/ingest/kube/node_sharing.h"
#include "gpufit/plan/ancillary_plan.h"
#include "gpufit/plan/current_gpus.h"
#include "gpufit/plan/kube_manifests.h"
#include "gpufit/plan/manifests/sharing_backend.h"
#include "gpufit/plan/plan.h"
#include "gpufit/plan/plan_summary.h"
#include "gpufit/plan/plan_writers.h"
#include "gpufit/plan/preallocated.h"
#include "gpufit/plan/training_plan.h"
#include "gpufit/plan/workload_keys.h"
#include "gpufit/report/report_series.h"
#include "gpufit/training/workload_file.h"
#include "inference_command.h"
#include "progress.h"
#include "serving_section.h"
#include "telemetry_source.h"

namespace gpufit::cli {
namespace {

// --sharing: the back end (given, or hami when the nodes allocate HAMi's nvidia.com/gpumem,
// else time-slicing) and what it asks of the plan: memory caps, equal for a workload's
// replicas, or a MIG layout.
Result<void> ApplySharing(PlanFlags& f, const GpuCatalog& catalog, const Telemetry* telemetry,
                          const std::optional<std::vector<KubeNode>>& nodes,
                          const std::optional<std::vector<KubePod>>& pods) {
  if (!f.kai_queue.empty() && f.sharing != "kai") return InvalidArgument("--kai-queue applies to --sharing kai only");
  // A label value (Kubernetes: at most 63 characters, alphanumerics, '-', '_', '.' inside).
  const auto label_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!f.kai_queue.empty() &&
      (f.kai_queue.size() > 63 || !label_char(f.kai_queue.front()) || !label_char(f.kai_queue.back()) ||
       !std::all_of(f.kai_queue.begin(), f.kai_queue.end(),
                    [&](char c) { return label_char(c) || c == '-' || c == '_' || c == '.'; })))
    return InvalidArgument(
        "--kai-queue '{}' is not a valid label value (at most 63 letters, digits, '-', '_', '.', "
        "starting and ending with a letter or digit)",
        f.kai_queue);
  if (f.sharing.empty()) {
    f.sharing = "time-slicing";
    if (nodes) {
      const Result<SharingChoice> choice = ChooseSharing(*nodes, pods ? &*pods : nullptr);
      if (!choice) return InvalidArgument("{}: {}", f.NodesLabel(), choice.error().message);
      f.sharing = choice->backend;
      std::fprintf(stderr, "gpufit: --sharing %s, from the nodes (%s)\n", f.sharing.c_str(), choice->why.c_str());
    }
  }
  f.options.replicas_apart = f.replicas_apart != "off";
  // HAMi hands out at most its registered devmem and count per GPU: the plan keeps to both.
  if (f.sharing == "hami" && nodes) {
    const Result<GpuModel> target = catalog.Find(f.options.target_gpu);
    const Result<HamiLimits> hami =
        HamiLimitsOf(*nodes, target ? NormalizedGpuProduct(target->name) : std::string(), NormalizedGpuProduct);
    if (!hami) return InvalidArgument("{}: {}", f.NodesLabel(), hami.error().message);
    if (hami->pods > 0) {
      f.options.max_pods_per_gpu = static_cast<std::size_t>(hami->pods);
      if (target && hami->memory_mib < target->memory.value)
        f.reserve_mib = std::max<std::int64_t>(f.reserve_mib, target->memory.value - hami->memory_mib);
      std::fprintf(stderr, "gpufit: hami: %s; the plan keeps to both\n", hami->basis.c_str());
    }
  }
  if (f.compute_caps && f.sharing != "hami") return InvalidArgument("--compute-caps applies to --sharing hami only");
  const Result<const manifests::SharingBackend*> backend = manifests::FindSharingBackend(f.sharing);
  f.options.sharing = f.sharing;
  f.options.mig_isolation = f.sharing == "mig" || f.mig_alternative;
  f.options.memory_caps = backend && (*backend)->caps_memory;
  f.options.whole_workloads = f.sharing == "dra-mps";
  if (f.options.memory_caps && !f.manifests.empty() && !pods)
    return InvalidArgument("--sharing {} --emit-manifests needs --pods: the caps go into each pod's workload",
                           f.sharing);
  // Pods whose spec asks for several GPUs or MIG instances are kept whole (optimize/multi_gpu.h).
  if (telemetry != nullptr && pods) {
    for (const PodSeries& p : telemetry->pods)
      if (const KubePod* k = FindKubePod(*pods, p.pod)) f.options.spec_devices[p.pod] = k->GpuDevices();
  }
  // Each pod's workload: the caps of one pod template, and replicas kept apart.
  if (telemetry != nullptr && pods) {
    for (const PodSeries& p : telemetry->pods) f.options.workload_by_pod[p.pod] = WorkloadKeyOf(p.pod, *pods);
  }
  return {};
}

// The Kubernetes objects of the plan, with the README, for --emit-manifests.
Result<cli::ExtraOutput> EmitManifests(const PlanFlags& f, const Plan* colocation, const TrainingPlan* training,
                                       const std::vector<std::pair<std::string, std::string>>& inference,
                                       const TimeMultiplexPlan* lending,
                                       const std::optional<std::vector<KubeNode>>& nodes,
                                       const std::optional<std::vector<KubePod>>& pods) {
  const Result<Manifests> m = BuildManifests({.colocation = colocation,
                                              .training = training,
                                              .nodes = nodes ? &*nodes : nullptr,
                                              .pods = pods ? &*pods : nullptr,
                                              .lending = lending,
                                              .sharing = f.sharing,
                                              .kai_queue = f.kai_queue,
                                              .compute_caps = f.compute_caps});
  if (!m) return m.error();
  for (const std::string& note : m->notes)
    if (note.find("nothing caps them") != std::string::npos || note.find("nothing written for it") != std::string::npos)
      std::fprintf(stderr, "gpufit: warning: %s\n", note.c_str());
  std::vector<std::pair<std::string, std::string>> files, extra;
  for (const ManifestFile& file : m->files) files.emplace_back(file.name, file.yaml);
  for (const auto& [name, yaml] : inference) {
    files.emplace_back(name, yaml);
    extra.emplace_back(name, "inference autoscaler (see the inference section)");
  }
  files.emplace_back("README.md", ManifestsReadme(*m, extra));
  return cli::ManifestOutput(f.manifests, files);
}

// The demo's training section: its embedded jobs (demo_cluster.h), planned as a workload file.
Result<std::optional<TrainingPlan>> DemoTrainingPlan(const PlanFlags& f, const GpuCatalog& catalog) {
  const Result<CapacityLabels> labels = ParseCapacityLabels(f.capacity_labels);
  if (!labels) return labels.error();
  Result<TrainingPlan> plan = BuildTrainingPlan(*f.demo_training, catalog, *labels, "demo training jobs");
  if (!plan) return plan.error();
  return std::optional<TrainingPlan>(std::move(*plan));
}

}  // namespace

void AddPlanOptions(CLI::App* cmd, PlanFlags& f, bool needs_telemetry, const std::vector<std::string>& formats) {
  if (needs_telemetry) {
    cli::AddTelemetrySourceOptions(cmd, f.telemetry);
    cmd->add_option("--training-jobs", f.training_jobs,
                    "training workload YAML: adds the spot decision, checkpoint interval and labels per job");
    cmd->add_option("--inference", f.inference,
                    "inference services YAML: adds each service's replica schedule, autoscaler manifests and "
                    "policy table");
    cli::AddAutoscalerOptions(cmd, f.autoscaler);
    cli::AddServingOptions(cmd, f.serving);
    cmd->add_option("--emit-manifests", f.manifests,
                    "folder for the Kubernetes objects that apply the plan (workload and node patches, "
                    "time-slicing or mig-parted ConfigMaps, autoscalers) and a README");
    cmd->add_option("--nodes", f.nodes,
                    "kubectl get nodes -o json: the nodes to configure, and their prices per core and GiB");
    cmd->add_option("--pods", f.pods,
                    "kubectl get pods -A -o json: each pod's workload and node (patches, sidecars, duplicated agents), "
                    "and finished pods' ends (their later samples are dropped)");
    AddKubeApiOptions(cmd, f.kube);
    cmd->add_option("--model-loads", f.model_loads,
                    "model load events, GenTD26 basemodel_update_latency CSV (default: the --telemetry GenTD26 "
                    "folder's)");
    cmd->add_option("--model-cache-gb-per-s", f.model_loading.cache_gb_per_s,
                    "read speed of a node-local model cache, GB/s")
        ->capture_default_str();
    f.model_gib_flag =
        cmd->add_option("--model-gib", f.model_gib, "model size, GiB (default: estimated from GPU memory at loads)");
    cmd->add_option("--cpu-percentile", f.rightsize.cpu_percentile,
                    "container CPU request = this percentile of usage, in (0, 100] (KRR's default)")
        ->capture_default_str();
    cmd->add_option("--memory-buffer", f.rightsize.memory_buffer,
                    "container memory = peak working set x (1 + this), in [0, 10] (KRR's default)")
        ->capture_default_str();
    cmd->add_option("--capacity-labels", f.capacity_labels, "spot labels to emit: karpenter, eks, gke or aks")
        ->check(CLI::IsMember({"karpenter", "eks", "gke", "aks"}))
        ->capture_default_str();
  }
  cmd->add_option("--gpu", f.options.target_gpu, "catalog id of the GPU model to co-locate on (e.g. h100-80gb)");
  cmd->add_option("--current-gpu", f.options.current_gpu, "catalog id the pods run on today (default: --gpu)");
  cmd->add_option("--gpus", f.gpus,
                  "catalog ids the recommended mixed fleet (and right-sizing) may use, comma-separated (default: "
                  "every catalog model)")
      ->delimiter(',');
  cmd->add_option("--headroom", f.options.headroom, "right-sizing headroom over peak memory (0.10 = 10%)");
  cmd->add_option("--max-collision-share", f.options.max_collision_share,
                  "share of samples a shared GPU's summed duty cycle may exceed 100%");
  cmd->add_option("--reserve-mib", f.reserve_mib, "GPU memory kept free on every shared GPU, MiB");
  cmd->add_option("--memory-risk", f.options.memory_risk,
                  "share of the pooled peak surprises the learned memory margin may leave uncovered, in [0, 1) "
                  "(0: the largest; higher: fewer GPUs, more overflow on later data)")
      ->capture_default_str();
  cmd->add_option("--min-window-hours", f.options.min_window_hours,
                  "right-sizing never shrinks memory on telemetry shorter than this, hours")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--envelope", [&f](const std::string& v) { f.options.robust = v == "robust"; },
         "robust (default: learned memory margin, collisions as if always active) or in-sample (the fitted "
         "data alone)")
      ->check(CLI::IsMember({"robust", "in-sample"}));
  cmd->add_option("--seed", f.options.seed, "seed of the packing search")->check(cli::SeedCheck());
  cmd->add_option("--search-budget", f.options.search_budget,
                  "packing search effort per thread, in sample evaluations (0 = first-fit decreasing only)");
  cmd->add_option("--threads", f.options.threads,
                  "independent packing searches run in parallel, seeds --seed, --seed + 1, ...; the fewest GPUs "
                  "wins (the plan depends on this number, never on timing)")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  cmd->add_option("--catalog", f.catalog, "GPU catalog YAML (default: the embedded data/gpu_catalog.yaml)");
  cmd->add_option("--sharing", f.sharing,
                  "how the pods of a planned GPU share it: time-slicing (nothing enforces memory), mig (hardware "
                  "partitions, one MIG instance per pod), hami, kai or dra-mps (per-pod memory caps, planned to add "
                  "up to at most the GPU's memory); default: from --nodes, the system serving the most GPUs (HAMi's "
                  "hami.io/node-nvidia-register annotation, NVIDIA DRA ResourceSlices, KAI's gpu-fraction pods, else "
                  "the device plugin: time-slicing)")
      ->check(CLI::IsMember({"time-slicing", "mig", "hami", "kai", "dra-mps"}));
  cmd->add_option("--replicas-apart", f.replicas_apart,
                  "with --pods: gpu keeps the replicas of one workload on different GPUs (one GPU failure takes "
                  "down at most one replica), off lets them share")
      ->check(CLI::IsMember({"gpu", "off"}))
      ->capture_default_str();
  cmd->add_flag("--compute-caps", f.compute_caps,
                "--sharing hami: also cap each workload's compute (nvidia.com/gpucores) at its p99 duty cycle x "
                "(1 + --headroom); without it compute is not capped");
  cmd->add_option("--kai-queue", f.kai_queue, "--sharing kai: the KAI-Scheduler queue of the workloads")
      ->default_str("default-queue");
  AddOutputOptions(cmd, f.output, formats);
}

Result<void> ReadClusterInputs(PlanFlags& f) {
  Result<std::unique_ptr<ClusterSource>> source =
      MakeClusterSource(f.kube, {.nodes = f.nodes, .pods = f.pods}, "--nodes/--pods");
  if (!source) return source.error();
  if (*source == nullptr) return {};
  Result<ClusterObjects> read = ReadCluster(**source, f.kube);
  if (!read) return read.error();
  f.kube_nodes = std::move(read->nodes);
  f.kube_pods = std::move(read->pods);
  if (f.kube.given()) f.live_source = (*source)->Name();
  return {};
}

// Every output path of `plan`, checked before anything is read, computed or written.
Result<void> CheckPlanOutputs(const PlanFlags& f) {
  if (Result<void> ok = cli::CheckOutput(f.output); !ok) return ok;
  if (!f.manifests.empty()) return CheckOutputDir(f.manifests, "--emit-manifests");
  return {};
}

int RunPlan(PlanFlags& f, const Telemetry* telemetry, const std::string& source) {
  if (Result<void> ok = CheckPlanOutputs(f); !ok) return Fail(ok.error());
  if (!telemetry && f.output.format == "csv")
    return Fail(
        InvalidArgument("--format csv is the per-pod table of a plan from GPU telemetry: give --telemetry or "
                        "--prometheus"));
  Result<GpuCatalog> catalog = LoadCatalog(f.catalog);
  if (!catalog) return Fail(catalog.error());
  if (!telemetry && !f.model_loads.empty())
    return Fail(InvalidArgument("--model-loads needs GPU telemetry (--telemetry or --prometheus)"));
  if (f.model_gib_flag != nullptr && f.model_gib_flag->count() > 0) f.model_loading.model_gib = f.model_gib;
  if (Result<void> ok = ValidateAncillaryOptions(f.rightsize, f.model_loading); !ok) return Fail(ok.error());
  // Read by ReadClusterInputs (from --nodes/--pods or the live cluster).
  std::optional<std::vector<KubeNode>> nodes = std::move(f.kube_nodes);
  std::optional<std::vector<KubePod>> pods = std::move(f.kube_pods);
  // Prices: OpenCost's on the server, where it has them, else the catalog's (plan/cluster_prices.h).
  std::optional<cli::ClusterPricing> pricing;
  if (telemetry) {
    Result<cli::ClusterPricing> p = cli::ReadClusterPricing(f.telemetry, nodes ? &*nodes : nullptr, *catalog);
    if (!p) return Fail(p.error());
    catalog = p->catalog;
    pricing = std::move(*p);
  }
  // Sections by JSON key; the co-location plan (with telemetry) is the top level.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> sections;
  // Training: the jobs found in the cluster (--pods, --prometheus), --training-jobs overriding.
  Result<std::optional<TrainingPlan>> t =
      f.demo_training
          ? DemoTrainingPlan(f, *catalog)
          : cli::TrainingSection({.training_jobs = f.training_jobs,
                                  .pods = pods ? &*pods : nullptr,
                                  .pods_source = f.PodsLabel(),
                                  .nodes = nodes ? &*nodes : nullptr,
                                  .source = &f.telemetry,
                                  .telemetry = telemetry,
                                  .catalog = &*catalog,
                                  .capacity_labels = f.capacity_labels,
                                  .gpu = f.options.current_gpu.empty() ? f.options.target_gpu : f.options.current_gpu,
                                  .now_s = cli::NowSeconds()});
  if (!t) return Fail(t.error());
  std::optional<TrainingPlan> training = std::move(*t);
  if (training)
    sections.emplace_back("training", std::make_pair(TrainingPlanToJson(*training), TrainingPlanToMarkdown(*training)));
  else if (!telemetry && f.inference.empty())
    return Fail(
        InvalidArgument("{}: no training job among its pods (GPU pods of a Job, PyTorchJob, JobSet, "
                        "RayJob, ...); give --telemetry or --prometheus to plan the others",
                        f.PodsLabel()));
  std::vector<std::pair<std::string, std::string>> inference_manifests;
  {  // the services file's, and with --prometheus the services its serving metrics show
    Result<std::optional<cli::InferenceSectionOutput>> i = std::optional<cli::InferenceSectionOutput>();
    if (!f.demo_services.empty()) {
      Result<cli::InferenceSectionOutput> d =
          cli::InferenceSection({}, std::move(f.demo_services), {}, *catalog, f.autoscaler.Options());
      if (!d) return Fail(d.error());
      i = std::optional<cli::InferenceSectionOutput>(std::move(*d));
    } else {
      i = cli::PlanInferenceSection(f.inference, f.telemetry, f.serving, f.options.target_gpu, *catalog,
                                    f.autoscaler.Options());
    }
    if (!i) return Fail(i.error());
    if (*i) {
      sections.emplace_back("inference", std::make_pair((*i)->json, (*i)->markdown));
      inference_manifests = std::move((*i)->manifests);
    }
  }
  std::optional<Plan> plan;
  std::optional<Backtest> backtest;
  std::string backtest_note;
  if (telemetry) {
    // Each pod's GPU today: its modelName, its node's product label, else --current-gpu/--gpu.
    CurrentGpus current = ResolveCurrentGpus({.telemetry = telemetry,
                                              .catalog = &*catalog,
                                              .pods = pods ? &*pods : nullptr,
                                              .nodes = nodes ? &*nodes : nullptr,
                                              .override_id = f.options.current_gpu,
                                              .fallback_id = f.options.target_gpu});
    if (current.named_by_data > 0) {
      // The plan's one "current" model (headlines, prices) is the one most pods run on, by
      // the data where it names them: an override the data contradicts does not win here.
      f.options.current_gpu = current.most_common;
      f.options.current_gpu_of = std::move(current.id_of);
      f.options.current_gpu_source_of = std::move(current.source_of);
    }
    if (f.options.target_gpu.empty() && !f.options.current_gpu.empty()) {  // no --gpu: right-size on the same model
      f.options.target_gpu = f.options.current_gpu;
      std::map<std::string, int> pods_on;  // the models the data names, with their pod counts
      for (const auto& [pod, id] : f.options.current_gpu_of)
        if (!id.empty()) ++pods_on[id];
      std::string found;
      for (const auto& [id, n] : pods_on) found += fmt::format("{}{} ({} pods)", found.empty() ? "" : ", ", id, n);
      std::fprintf(stderr, "gpufit: GPU models found: %s; target %s, the model most pods run on  [--gpu]\n",
                   found.c_str(), f.options.target_gpu.c_str());
    }
    for (const std::string& w : current.warnings) std::fprintf(stderr, "gpufit: warning: %s\n", w.c_str());
    f.options.current_gpu_warnings = std::move(current.warnings);
  }
  // Servers that pre-allocate GPU memory, sized by their KV cache use: the plan (and its
  // backtest) sees the memory each will hold with the new setting (plan/preallocated.h).
  Preallocation preallocated;
  std::optional<Telemetry> sized_telemetry;
  if (telemetry) {
    const auto memory_of = [&](const PodSeries& p) {
      const auto it = f.options.current_gpu_of.find(p.pod);
      const Result<GpuModel> m = catalog->Find(it != f.options.current_gpu_of.end() ? it->second
                                               : f.options.current_gpu.empty()      ? f.options.target_gpu
                                                                                    : f.options.current_gpu);
      return m ? static_cast<double>(m->memory.value) : 0.0;
    };
    preallocated =
        SizePreallocatedServers(*telemetry, 1 - f.options.max_collision_share, f.options.headroom, memory_of);
    if (AnySized(preallocated)) {
      sized_telemetry = *telemetry;
      ApplyPreallocation(preallocated, *sized_telemetry);
      telemetry = &*sized_telemetry;
    }
  }
  if (telemetry && nodes) {
    // Starved pods get at most what a node of their GPU model has per GPU.
    const Result<GpuModel> current =
        catalog->Find(f.options.current_gpu.empty() ? f.options.target_gpu : f.options.current_gpu);
    double most = 0;
    for (const KubeNode& n : *nodes) {
      if (!current || n.gpu_count <= 0 || NormalizedGpuProduct(n.gpu_product) != NormalizedGpuProduct(current->name))
        continue;
      most = std::max(most, static_cast<double>(n.cpu_allocatable.value) / 1000.0 / n.gpu_count);
    }
    if (most > 0) f.options.starvation.max_cores_per_gpu = std::floor(most * 10) / 10;
  }
  if (Result<void> ok = ApplySharing(f, *catalog, telemetry, nodes, pods); !ok) return Fail(ok.error());
  if (telemetry) {
    if (f.options.target_gpu.empty())
      return Fail(InvalidArgument(
          "--gpu is required when neither the telemetry (modelName), the nodes' labels nor --current-gpu name the "
          "pods' GPU model"));
    f.options.reserve = MiB{f.reserve_mib};
    f.options.fleet.models.clear();
    for (const std::string& id : f.gpus) {  // "a, b" as "a,b"; an empty id is an error
      const std::size_t b = id.find_first_not_of(" \t"), e = id.find_last_not_of(" \t");
      if (b == std::string::npos)
        return Fail(InvalidArgument("--gpus: an empty catalog id in '{}'", fmt::join(f.gpus, ",")));
      f.options.fleet.models.push_back(id.substr(b, e - b + 1));
    }
    // Batch work is judged by its duty cycle alone; every other pod keeps its latency
    // (optimize/throughput_scaling.h). Batch: the pods of the training jobs found in the cluster.
    f.options.fleet.batch_pods.clear();
    if (training)
      for (const std::optional<JobOrigin>& o : training->workload.origins)
        if (o)
          for (const std::string& pod : o->pods) f.options.fleet.batch_pods.insert(o->namespace_name + "/" + pod);
    // A pod spec's MIG instance prices its pod as its slice where the telemetry does not say.
    if (pods)
      for (const KubePod& pod : *pods)
        if (std::string profile = pod.MigProfile(); !profile.empty())
          f.options.spec_mig_profiles[pod.Key()] = std::move(profile);
    cli::Phase("plan");
    Result<Plan> p = BuildPlan(*telemetry, *catalog, f.options, source);
    if (!p) return Fail(p.error());
    plan = std::move(*p);
    plan->preallocated = std::move(preallocated);
    // With the pods' owners, the plan also names workloads: it survives a rollout's new pod names.
    if (pods) KeyPlanByWorkload(*plan, *telemetry, *pods);
    // What serve places new replicas by (plan/workload_profiles.h).
    std::vector<std::string> keys = plan->workload_of;
    if (keys.empty())
      for (const std::string& name : plan->pod_names) keys.push_back(WorkloadKeyOf(name, {}));
    plan->workload_profiles =
        ProfileWorkloads(*telemetry, keys, 1.0 - plan->options.max_collision_share, plan->memory_margin_mib,
                         plan->options.robust ? std::optional<double>(plan->options.memory_risk) : std::nullopt);
    // Every plan from telemetry is also checked on data it was not fitted to.
    if (WalkForwardSplits(*telemetry).empty()) {
      backtest_note = "Backtest: none, the telemetry is too short to hold a part out.";
    } else {
      cli::Phase("backtest");
      Result<Backtest> b = RunBacktest(*telemetry, *catalog, f.options);
      if (!b) return Fail(b.error());
      backtest = std::move(*b);
      // The mixed fleet is recommended only if it held too (plan/fleet_plan.h).
      std::vector<std::string> failed;
      for (const SplitOutcome& s : backtest->splits)
        if (s.fleet.memory_overflows > 0 || s.fleet.gpus_over_collision_limit > 0)
          failed.push_back(fmt::format("{}: {} memory-overflow samples, {} GPUs over the collision limit",
                                       s.split.label, s.fleet.memory_overflows, s.fleet.gpus_over_collision_limit));
      plan->fleet.backtest_held = failed.empty();
      plan->fleet.backtest_failure = fmt::format("{}", fmt::join(failed, "; "));
    }
  }
  cli::Phase("sections");
  std::optional<AncillaryPlan> ancillary;
  std::optional<ClusterNetwork> network;
  if (plan) {
    const ClusterPrices* prices = pricing && pricing->prices ? &*pricing->prices : nullptr;
    sections.emplace_back(
        "prices",
        std::make_pair(ClusterPricesToJson(prices, pricing->catalog_reason, plan->current, plan->target),
                       ClusterPricesToMarkdown(prices, pricing->catalog_reason, plan->current, plan->target)));
    Result<std::optional<ClusterNetwork>> n = cli::ReadClusterNetwork(f.telemetry, *telemetry, pods ? &*pods : nullptr);
    if (!n) return Fail(n.error());
    // No network series at all (no cAdvisor counters, no node-exporter): no network check.
    if (*n && (!(*n)->pods.empty() || !(*n)->links.empty())) network = std::move(*n);
  }
  if (plan) {
    // Model loads: the file given, else the GenTD26 folder's own.
    std::string loads_path = f.model_loads;
    if (loads_path.empty() && !f.telemetry.path.empty() && std::filesystem::is_directory(f.telemetry.path)) {
      const auto candidate = std::filesystem::path(f.telemetry.path) / "basemodel_update_latency_anon.csv";
      if (std::filesystem::exists(candidate)) loads_path = candidate.string();
    }
    std::optional<std::vector<ModelLoad>> loads;
    if (!loads_path.empty()) {
      Result<std::vector<ModelLoad>> l = ReadGenTd26ModelLoads(loads_path);
      if (!l) return Fail(l.error());
      loads = std::move(*l);
    }

    f.rightsize.throttled_ratio = f.options.starvation.throttled_ratio;
    f.rightsize.min_window_hours = f.options.min_window_hours;
    Result<AncillaryPlan> a = BuildAncillaryPlan(
        {.telemetry = telemetry,
         .plan = &*plan,
         .catalog = &*catalog,
         .nodes = nodes ? &*nodes : nullptr,
         .pods = pods ? &*pods : nullptr,
         .model_loads = loads ? &*loads : nullptr,
         .model_loads_source = loads_path,
         // Night lending: the file's jobs (found ones already run).
         .jobs = training && (!f.training_jobs.empty() || f.demo_training) ? &training->workload.jobs : nullptr,
         .rightsize = f.rightsize,
         .model_loading = f.model_loading,
         .time_multiplex = {},
         .prices = pricing && pricing->prices ? &*pricing->prices : nullptr,
         .pod_nodes = network ? &network->pod_nodes : nullptr,
         .network = network ? &network->pods : nullptr,
         .links = network ? &network->links : nullptr});
    if (!a) return Fail(a.error());
    sections.emplace_back("ancillary", std::make_pair(AncillaryPlanToJson(*a), AncillaryPlanToMarkdown(*a)));
    ancillary = std::move(*a);
  }
  const TimeMultiplexPlan* lending = ancillary && ancillary->time_multiplex ? &*ancillary->time_multiplex : nullptr;
  cli::ExtraOutput manifests;
  if (!f.manifests.empty()) {
    Result<cli::ExtraOutput> m = EmitManifests(f, plan ? &*plan : nullptr, training ? &*training : nullptr,
                                               inference_manifests, lending, nodes, pods);
    if (!m) return Fail(m.error());
    manifests = std::move(*m);
  }
  manifests.report = cli::ReportRequest{
      .command = f.report_command, .title = "gpufit " + f.report_command, .source = source, .series_json = {}};
  if (!plan && sections.size() == 1)
    return Emit(f.output, "plan", sections[0].second.first, sections[0].second.second, manifests);
  std::string json = plan ? PlanToJson(*plan) : "{}", md = plan ? PlanToMarkdown(*plan) : "";
  nlohmann::json merged = nlohmann::json::parse(json);
  if (backtest) {
    merged["backtest"] = nlohmann::json::parse(BacktestToJson(*backtest));
    // The guarantee leads the summary (under the title); the table follows the plan.
    const std::size_t title = md.find("# gpufit plan\n\n");
    if (title != std::string::npos)
      md.insert(title + 15, "**" + backtest->Guarantee() +
                                "** (`gpufit backtest` also runs the reversed split of a short "
                                "window and the GPUs-vs-overflow trade-off.)\n\n");
    md += BacktestToMarkdown(*backtest, nullptr, GuaranteeAt::kSummaryLead);
  } else if (!backtest_note.empty()) {
    md += "\n" + backtest_note + "\n";
  }
  for (const auto& [key, section] : sections) {
    merged[key] = nlohmann::json::parse(section.first);
    md += (md.empty() ? "" : "\n") + section.second;
  }
  if (plan) {
    // The saving and the actions lead (above the guarantee); the rollups close the summary.
    const std::string summary = PlanSummaryJson(merged.dump());
    merged["summary"] = nlohmann::json::parse(summary);
    const std::size_t title_at = md.find("# gpufit plan\n\n");
    if (title_at != std::string::npos) md.insert(title_at + 15, PlanSummaryLead(summary));
    md += PlanRollupsMarkdown(summary);
  }
  std::string document = merged.dump(2) + "\n";
  if (plan && f.output.format == "csv") manifests.csv = PlanPodsCsv(document);
  if (plan && (!f.output.report.empty() || f.output.format == "html"))
    manifests.report->series_json = report::ReportSeriesJson(*telemetry, document);
  return Emit(f.output, "plan", document, md, manifests);
}

// gpufit backtest: the walk-forward backtest of the plan and the GPUs-vs-overflow trade-off.
int RunBacktestCommand(PlanFlags& f, const std::vector<double>& risks) {
  const Result<GpuCatalog> catalog = LoadCatalog(f.catalog);
  if (!catalog) return Fail(catalog.error());
  if (f.options.target_gpu.empty()) return Fail(InvalidArgument("backtest: --gpu is required"));
  for (double r : risks)
    if (!(r >= 0 && r < 1)) return Fail(InvalidArgument("--risks: each must be in [0, 1), got {}", r));
  const Result<Telemetry> tel = cli::LoadTelemetry(f.telemetry, cli::NowSeconds());
  if (!tel) return Fail(tel.error());
  f.options.reserve = MiB{f.reserve_mib};
  if (Result<void> ok = ApplySharing(f, *catalog, &*tel, std::nullopt, std::nullopt); !ok) return Fail(ok.error());
  // The backtest of the options given is one row of the curve: computed once.
  std::vector<double> all = risks;
  if (f.options.robust && std::find(all.begin(), all.end(), f.options.memory_risk) == all.end())
    all.push_back(f.options.memory_risk);
  const Result<std::vector<TradeoffRow>> curve = RunTradeoff(*tel, *catalog, f.options, all, EverySplit(*tel));
  if (!curve) return Fail(curve.error());
  const auto row = std::find_if(curve->begin(), curve->end(), [&](const TradeoffRow& r) {
    return f.options.robust ? r.robust && r.memory_risk == f.options.memory_risk : !r.robust;
  });
  const Backtest b{f.options, row->splits, tel->window_hours()};
  const std::string md =
      fmt::format("# gpufit backtest\n\nTelemetry: {} ({} pods, {:.1f} h), {} on {}.\n{}", f.telemetry.name,
                  tel->pods.size(), tel->window_hours(), f.options.robust ? "robust envelope" : "in-sample rule",
                  f.options.target_gpu, BacktestToMarkdown(b, &*curve));
  const int rc = Emit(f.output, "backtest", BacktestToJson(b, &*curve), md);
  if (rc != 0) return rc;
  // 3: a strategy did not hold; 4: the co-location was not tested (nothing was replayed);
  // 0: held or provisional (status.h).
  const std::vector<StrategyStatus> statuses = Statuses(b);
  if (std::any_of(statuses.begin(), statuses.end(),
                  [](const StrategyStatus& s) { return s.verdict == StrategyVerdict::kDidNotHold; }))
    return 3;
  return StatusOf(statuses, "colocation").verdict == StrategyVerdict::kNotTested ? 4 : 0;
}

}  // namespace gpufit::cli

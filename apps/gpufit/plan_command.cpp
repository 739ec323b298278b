#include "plan_command.h"

#include <cstdio>
#include <utility>

#include "cli_common.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/pipeline/backtest_study.h"
#include "gpufit/pipeline/plan_pipeline.h"
#include "progress.h"
#include "telemetry_source.h"

namespace gpufit::cli {
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
  if (!read && f.kube.given())  // a live cluster's error names the kubeconfig it came from
    return Error{read.error().code, (*source)->Name() + ": " + read.error().message};
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

pipeline::PlanInputs PlanInputsOf(PlanFlags& f, const Telemetry* telemetry, const std::string& source) {
  pipeline::PlanInputs in;
  in.telemetry = telemetry;
  in.source = source;
  in.origin = {.path = f.telemetry.path,
               .prometheus = f.telemetry.prometheus,
               .server = f.telemetry.server,
               .range = f.telemetry.range,
               .name = f.telemetry.name};
  // Read by ReadClusterInputs (from --nodes/--pods or the live cluster).
  in.nodes = std::move(f.kube_nodes);
  in.pods = std::move(f.kube_pods);
  in.nodes_label = f.NodesLabel();
  in.pods_label = f.PodsLabel();
  in.catalog_path = f.catalog;
  in.options = f.options;
  in.gpus = f.gpus;
  in.reserve_mib = f.reserve_mib;
  in.training_jobs = f.training_jobs;
  in.inference = f.inference;
  in.autoscaler = f.autoscaler.Options();
  in.serving = f.serving;
  in.emit_manifests = !f.manifests.empty();
  in.model_loads = f.model_loads;
  in.rightsize = f.rightsize;
  in.model_loading = f.model_loading;
  in.capacity_labels = f.capacity_labels;
  in.sharing = f.sharing;
  in.kai_queue = f.kai_queue;
  in.compute_caps = f.compute_caps;
  in.replicas_apart = f.replicas_apart;
  in.demo_training = std::move(f.demo_training);
  in.demo_services = std::move(f.demo_services);
  in.mig_alternative = f.mig_alternative;
  in.now_s = cli::NowSeconds();
  in.want_csv = f.output.format == "csv";
  in.want_report_series = !f.output.report.empty() || f.output.format == "html";
  in.phase = [](const std::string& name) { cli::Phase(name); };
  in.note = [](const std::string& line) { std::fprintf(stderr, "gpufit: %s\n", line.c_str()); };
  return in;
}

int RunPlan(PlanFlags& f, const Telemetry* telemetry, const std::string& source) {
  if (Result<void> ok = CheckPlanOutputs(f); !ok) return Fail(ok.error());
  if (!telemetry && f.output.format == "csv")
    return Fail(
        InvalidArgument("--format csv is the per-pod table of a plan from GPU telemetry: give --telemetry or "
                        "--prometheus"));
  if (f.model_gib_flag != nullptr && f.model_gib_flag->count() > 0) f.model_loading.model_gib = f.model_gib;
  Result<pipeline::PlanDocument> doc = pipeline::RunPlanPipeline(PlanInputsOf(f, telemetry, source));
  if (!doc) return Fail(doc.error());
  cli::ExtraOutput extra;
  if (!f.manifests.empty()) extra = cli::ManifestOutput(f.manifests, doc->manifest_files);
  extra.report = cli::ReportRequest{
      .command = f.report_command, .title = "gpufit " + f.report_command, .source = source, .series_json = {}};
  extra.csv = std::move(doc->csv);
  if (doc->has_plan) extra.report->series_json = std::move(doc->series_json);
  return Emit(f.output, "plan", doc->json, doc->markdown, extra);
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
  const Result<pipeline::BacktestStudy> study =
      pipeline::RunBacktestStudy(PlanInputsOf(f, &*tel, f.telemetry.name), *catalog, risks);
  if (!study) return Fail(study.error());
  const int rc = Emit(f.output, "backtest", study->json, study->markdown);
  if (rc != 0) return rc;
  // 3: a strategy did not hold; 4: the co-location was not tested (nothing was replayed);
  // 0: held or provisional (status.h).
  if (study->did_not_hold) return 3;
  return study->colocation_not_tested ? 4 : 0;
}

}  // namespace gpufit::cli

#include "training_fixture.h"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "dcgm_fixture.h"

namespace gpufit::testing {
namespace {

constexpr long long kT0 = static_cast<long long>(kFixtureT0);
constexpr int kSamples = 6 * 60;  // the last at T0 + 6 h

struct Node {
  const char* name;
  const char* capacity;
  int last;  // sample index of its last sample
};

struct Pod {
  const char* name;
  const char* node;
  int gpus;
  const char* owner_kind;
  const char* owner_name;
  double started_h;  // relative to T0
  int last;
  double fb_mib;
  std::string labels, annotations;
};

}  // namespace

TrainingFixture MakeTrainingFixture() {
  const std::vector<Node> nodes = {{"spot-a", "spot", kSamples},
                                   {"spot-b", "spot", kSamples},
                                   {"spot-gone", "spot", 180},
                                   {"od-a", "on-demand", kSamples}};
  const std::vector<Pod> pods = {
      {"finetune-x7k2p", "od-a", 4, "Job", "finetune", -2, kSamples, 30000, "",
       R"(,annotation_gpufit_io_work_hours="20",annotation_gpufit_io_checkpoint_write_seconds="60")"},
      {"llm-pretrain-worker-0", "spot-a", 8, "PyTorchJob", "llm-pretrain", 1, kSamples, 60000,
       R"(,label_training_kubeflow_org_job_name="llm-pretrain")", ""},
      {"llm-pretrain-worker-1", "spot-b", 8, "PyTorchJob", "llm-pretrain", 1, kSamples, 60000,
       R"(,label_training_kubeflow_org_job_name="llm-pretrain")", ""},
      {"sweep-0", "spot-gone", 8, "Job", "sweep", 0, 180, 50000, "", ""},
      {"vllm-7d4b9-abcde", "od-a", 1, "ReplicaSet", "vllm-7d4b9", -24, kSamples, 20000, "", ""}};
  std::map<std::string, std::string> m;  // metric family -> its lines, families contiguous
  const auto t = [](int k) { return kT0 + 60LL * k; };
  for (const Node& n : nodes) {
    for (int k = 0; k <= n.last; ++k) {
      m["kube_node_labels"] += fmt::format(
          "kube_node_labels{{node=\"{}\",label_karpenter_sh_capacity_type=\"{}\",label_nvidia_com_gpu_product="
          "\"NVIDIA-A100-SXM4-80GB\",label_nvidia_com_gpu_count=\"8\"}} 1 {}\n",
          n.name, n.capacity, t(k));
      m["kube_node_info"] +=
          fmt::format("kube_node_info{{node=\"{}\",kubelet_version=\"v1.31.0\"}} 1 {}\n", n.name, t(k));
    }
  }
  int gpu_index = 0;
  for (const Pod& p : pods) {
    const int first = p.started_h > 0 ? static_cast<int>(p.started_h * 60) : 0;
    const std::string id = fmt::format(R"(namespace="ml",pod="{}",uid="uid-{}")", p.name, p.name);
    const double started = static_cast<double>(kT0) + p.started_h * 3600;
    for (int k = first; k <= p.last; ++k) {
      const long long at = t(k);
      m["kube_pod_info"] += fmt::format(
          "kube_pod_info{{{},node=\"{}\",created_by_kind=\"{}\",created_by_name=\"{}\",host_network=\"false\"}} 1 {}\n",
          id, p.node, p.owner_kind, p.owner_name, at);
      m["kube_pod_owner"] +=
          fmt::format("kube_pod_owner{{{},owner_kind=\"{}\",owner_name=\"{}\",owner_is_controller=\"true\"}} 1 {}\n",
                      id, p.owner_kind, p.owner_name, at);
      m["kube_pod_start_time"] += fmt::format("kube_pod_start_time{{{}}} {:.0f} {}\n", id, started, at);
      m["kube_pod_created"] += fmt::format("kube_pod_created{{{}}} {:.0f} {}\n", id, started - 60, at);
      m["kube_pod_status_phase"] += fmt::format("kube_pod_status_phase{{{},phase=\"Running\"}} 1 {}\n", id, at);
      m["kube_pod_container_resource_requests"] += fmt::format(
          "kube_pod_container_resource_requests{{{},container=\"main\",node=\"{}\",resource=\"nvidia_com_gpu\","
          "unit=\"integer\"}} {} {}\n",
          id, p.node, p.gpus, at);
      m["kube_pod_labels"] += fmt::format("kube_pod_labels{{{}{}}} 1 {}\n", id, p.labels, at);
      m["kube_pod_annotations"] += fmt::format("kube_pod_annotations{{{}{}}} 1 {}\n", id, p.annotations, at);
      for (int g = 0; g < p.gpus; ++g) {
        const std::string dcgm = fmt::format(
            R"(gpu="{}",UUID="GPU-{:08x}-0000-4000-8000-000000000000",device="nvidia{}",modelName="NVIDIA A100-SXM4-80GB",Hostname="{}",container="main",namespace="ml",pod="{}")",
            g, gpu_index + g, g, p.node, p.name);
        m["DCGM_FI_DEV_FB_USED"] += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", dcgm, p.fb_mib, at);
        m["DCGM_FI_DEV_GPU_UTIL"] += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} 90 {}\n", dcgm, at);
      }
    }
    gpu_index += p.gpus;
  }
  TrainingFixture out;
  for (const auto& [family, lines] : m) out.openmetrics += "# TYPE " + family + " gauge\n" + lines;
  out.openmetrics += "# EOF\n";
  out.since_s = kFixtureT0;
  out.until_s = kFixtureT0 + 6 * 3600;
  return out;
}

}  // namespace gpufit::testing

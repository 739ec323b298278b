#include "gpufit/serve/kube_objects.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/ingest/kube/node_sharing.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit::serve {
namespace {

std::string Label(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

int Count(const std::map<std::string, int>& devices, const std::string& key) {
  const auto it = devices.find(key);
  return it == devices.end() ? 0 : it->second;
}

Result<std::int64_t> IntAnnotation(const KubePod& pod, const std::string& key, std::int64_t absent) {
  const auto it = pod.annotations.find(key);
  if (it == pod.annotations.end()) return absent;
  std::int64_t v = 0;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return InvalidArgument("pod {}: .metadata.annotations[\"{}\"]: expected an integer, got '{}'", pod.Key(), key, s);
  }
  return v;
}

}  // namespace

double GpuMemoryMibOf(const KubeNode& node) {
  if (node.gpu_memory) return static_cast<double>(node.gpu_memory->value);
  // A MIG slice (GFD's single strategy names it "<product>-MIG-<profile>") has a fraction of the
  // product's memory: unknown without the label.
  if (node.gpu_product.find("-MIG-") != std::string::npos) return 0;
  const std::string product = NormalizedGpuProduct(node.gpu_product);
  if (product.empty()) return 0;
  for (const GpuModel& m : GpuCatalog::Embedded().models())
    if (NormalizedGpuProduct(m.name) == product) return static_cast<double>(m.memory.value);
  return 0;
}

Result<PodRequest> RequestOf(const KubePod& pod, const ProfileBook* profiles) {
  Result<PodSpec> declared = DeclaredRequest(pod);
  if (!declared) return declared.error();
  PodRequest r{.declared = std::move(*declared)};
  if (pod.Devices("nvidia.com/gpu") == 1 && pod.annotations.contains("alibabacloud.com/gpu-milli")) {
    const Result<std::int64_t> milli = IntAnnotation(pod, "alibabacloud.com/gpu-milli", 0);
    if (!milli) return milli.error();
    if (*milli < 1 || *milli > 1000)
      return InvalidArgument("pod {}: alibabacloud.com/gpu-milli: expected 1..1000 (milli-GPU per GPU), got {}",
                             pod.Key(), *milli);
    if (*milli < 1000) r.annotated_milli = *milli;
  }
  if (pod.owner.kind == "ReplicaSet" || pod.owner.kind == "Deployment" || pod.owner.kind == "StatefulSet")
    r.replica_of = WorkloadKeyOfPod(pod);
  if (profiles == nullptr) return r;  // every pod by its declared request: nothing to say
  const std::string key = WorkloadKeyOfPod(pod);
  const ServeProfile* p = profiles->Find(key);
  const bool shares = r.declared.gpu_count == 1 && r.declared.gpu_per_gpu.value < 1000;
  if (p == nullptr) {
    r.from = fmt::format("declared requests: no telemetry profile for workload {}", key);
  } else if (r.declared.gpu_count == 0) {
    r.from = fmt::format("declared requests: {} asks for no GPU", key);
  } else if (!(p->memory_peak_mib > 0)) {
    // A CUDA context alone holds hundreds of MiB: 0 MiB is a pod that was not measured, and
    // placing by it would stack any number of replicas on one GPU.
    r.from = fmt::format("declared requests: the profile of {} shows 0 MiB (unmeasured)", key);
  } else if (p->observed_hours == 0) {
    r.from = fmt::format("declared requests: the profile of {} vouches for no hour (under half an hour observed)", key);
  } else if (!shares) {
    r.from = fmt::format("declared requests: {} holds whole GPUs, which a profile does not change", key);
  } else {
    r.profile = p;
    r.from = fmt::format("telemetry profile of {} (peak {:.0f} MiB)", key, p->memory_peak_mib);
  }
  return r;
}

NodeGpus NodeGpusOf(const KubeNode& node) {
  NodeGpus out{.replicas = std::max(1, node.gpu_replicas)};
  // HAMi registers its GPUs on the node (ingest/kube/node_sharing.h) and advertises each `count`
  // times as nvidia.com/gpu: the registered GPUs, each shared by its smallest count.
  const auto hami = node.annotations.find(kHamiRegisterAnnotation);
  const Result<std::vector<HamiDevice>> registered =
      hami == node.annotations.end() ? std::vector<HamiDevice>{} : DecodeHamiRegister(hami->second);
  if (registered && !registered->empty()) {
    out.replicas = registered->front().split_count;
    for (const HamiDevice& d : *registered) out.replicas = std::min(out.replicas, d.split_count);
    out.advertised = static_cast<int>(registered->size());
  } else if (node.devices_allocatable.contains("nvidia.com/gpu")) {
    // Allocatable nvidia.com/gpu (0 when every device is unhealthy): each healthy GPU advertised
    // `replicas` times (at most the GFD count label's GPUs).
    out.advertised = Count(node.devices_allocatable, "nvidia.com/gpu") / out.replicas;
    if (out.replicas > 1 && node.gpu_count > 0) out.advertised = std::min(out.advertised, node.gpu_count);
  } else {
    // The GFD count label, else open-gpu-share's count.
    out.advertised =
        node.gpu_count > 0 ? node.gpu_count : Count(node.devices_allocatable, "alibabacloud.com/gpu-count");
  }
  out.physical = std::min(out.advertised, kMaxGpusPerNode);
  if (out.advertised > kMaxGpusPerNode)
    out.warning = fmt::format("node {}: {} GPUs, placement counts {} (kMaxGpusPerNode); the other {} are never offered",
                              node.name, out.advertised, kMaxGpusPerNode, out.advertised - kMaxGpusPerNode);
  return out;
}

NodeSpec NodeSpecOf(const KubeNode& node) {
  const int gpus = NodeGpusOf(node).physical;
  std::string model = node.gpu_product;
  if (model.empty()) model = Label(node.labels, "alibabacloud.com/gpu-card-model");
  return NodeSpec{.name = node.name,
                  .cpu = node.cpu_allocatable,
                  .memory = node.memory_allocatable,
                  .gpu_count = gpus,
                  .gpu_model = gpus > 0 ? model : std::string()};
}

Result<PodSpec> DeclaredRequest(const KubePod& pod) {
  PodSpec spec;
  spec.name = pod.Key();
  spec.cpu = pod.CpuRequest();
  spec.memory = pod.MemoryRequest();
  if (const int whole = pod.Devices("nvidia.com/gpu"); whole > 0) {
    spec.gpu_count = whole;
    spec.gpu_per_gpu = GpuMilli{1000};
  } else {
    const Result<std::int64_t> milli = IntAnnotation(pod, "alibabacloud.com/gpu-milli", 0);
    if (!milli) return milli.error();
    const Result<std::int64_t> count = IntAnnotation(pod, "alibabacloud.com/gpu-count", *milli > 0 ? 1 : 0);
    if (!count) return count.error();
    if (*count < 0 || *count > kMaxGpusPerNode) {
      return InvalidArgument("pod {}: alibabacloud.com/gpu-count: expected 0..{}, got {}", pod.Key(), kMaxGpusPerNode,
                             *count);
    }
    if (*count > 0) {
      if (*milli < 1 || *milli > 1000) {
        return InvalidArgument("pod {}: alibabacloud.com/gpu-milli: expected 1..1000 (milli-GPU per GPU), got {}",
                               pod.Key(), *milli);
      }
      if (*milli < 1000 && *count > 1) {
        return InvalidArgument(
            "pod {}: alibabacloud.com/gpu-milli {} below a whole GPU on {} GPUs: a pod shares "
            "one GPU at most",
            pod.Key(), *milli, *count);
      }
      spec.gpu_count = static_cast<int>(*count);
      spec.gpu_per_gpu = GpuMilli{*milli};
    }
  }
  for (const char* key : {"nvidia.com/gpu.product", "alibabacloud.com/gpu-card-model"}) {
    if (const std::string m = Label(pod.node_selector, key); !m.empty()) spec.gpu_models.push_back(m);
  }
  return spec;
}

}  // namespace gpufit::serve

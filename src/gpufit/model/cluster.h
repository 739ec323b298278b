// A GPU cluster and its pods as a trace describes them: what each node has and what each
// pod asks for. Placement state (what is used now) lives in placement/cluster_state.h.
//
// The fields follow the Alibaba openb trace (cluster-trace-gpu-v2023, published with the
// FGD paper, USENIX ATC'23) and Kubernetes requests: CPU in millicores, memory in MiB,
// GPUs as a count plus, for a pod that shares one GPU, the fraction of it in milli-GPU
// (Alibaba's `alibabacloud.com/gpu-milli`, 1000 = one whole GPU).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/units.h"

namespace gpufit {

struct NodeSpec {
  std::string name;
  MilliCpu cpu;           // allocatable CPU
  MiB memory;             // allocatable host memory
  int gpu_count = 0;      // whole GPUs on the node, 0..kMaxGpusPerNode
  std::string gpu_model;  // GPU type label (e.g. "T4", "V100M32"); empty when gpu_count == 0
};

// A pod's request. gpu_count == 0: CPU only (gpu_per_gpu is 0). gpu_count == 1 and
// gpu_per_gpu < 1000: shares one GPU. Otherwise gpu_count whole GPUs (gpu_per_gpu == 1000).
struct PodSpec {
  std::string name;
  MilliCpu cpu;
  MiB memory;
  int gpu_count = 0;
  GpuMilli gpu_per_gpu;                 // milli-GPU on each of its GPUs
  std::vector<std::string> gpu_models;  // acceptable GPU types (`gpu_spec`); empty = any
  Seconds creation{0};                  // trace time of arrival
  std::optional<Seconds> deletion;      // trace time of departure; none = runs forever

  bool SharesGpu() const { return gpu_count == 1 && gpu_per_gpu.value < 1000; }
  GpuMilli TotalGpu() const { return {gpu_per_gpu.value * gpu_count}; }
};

// The most GPUs one node may have (HGX-class servers have 8; some have 16).
inline constexpr int kMaxGpusPerNode = 16;

}  // namespace gpufit

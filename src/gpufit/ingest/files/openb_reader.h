// Readers for the cluster and pod lists of the Alibaba openb trace (cluster-trace-gpu-v2023,
// published with the FGD paper, USENIX ATC'23), the input of `gpufit simulate`.
//
// Node list: header `sn,cpu_milli,memory_mib,gpu,model` (any column order, extra columns
// ignored); `gpu` is whole GPUs per node (0..16), `model` the GPU type (needed when gpu > 0).
// Pod list: header `name,cpu_milli,memory_mib,num_gpu,gpu_milli` and, optionally,
// `gpu_spec,creation_time,deletion_time` (other openb columns such as qos and pod_phase are
// ignored); `gpu_milli` is milli-GPU per GPU (1..1000 when num_gpu >= 1, 0 when num_gpu ==
// 0; a pod asking for more than one GPU takes whole GPUs, so gpu_milli must be 1000 there);
// `gpu_spec` is a `|`-separated list of acceptable GPU types (empty or no column: any);
// times are seconds, and an empty deletion_time means the pod never leaves. The optional
// columns are optional as in the trace's own converter (data/pod_csv_to_yaml.py of
// hkust-adsl/kubernetes-scheduler-simulator, which reads gpu_spec and the times only when a
// row has them): the published openb_pod_list_multigpu*.csv lists have none of the three.
// Without creation_time every pod arrives at 0; without deletion_time none leaves.
//
// Errors name the file, line and column: kNotFound (missing file), kInvalidArgument
// (missing required column, empty or non-integer number, negative value, out-of-range GPU
// fields, duplicate names, deletion before creation, an empty list).
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"

namespace gpufit {

Result<std::vector<NodeSpec>> ReadOpenbNodes(const std::string& path);
// Which optional columns a pod list has.
struct OpenbPodColumns {
  bool gpu_spec = false;
  bool creation_time = false;
  bool deletion_time = false;
};

// `present`, when given, is set to the optional columns the file has.
Result<std::vector<PodSpec>> ReadOpenbPods(const std::string& path, OpenbPodColumns* present = nullptr);

}  // namespace gpufit

// Readers for the cluster and pod lists of the Alibaba openb trace (cluster-trace-gpu-v2023,
// published with the FGD paper, USENIX ATC'23), the input of `gpufit simulate`.
//
// Node list: header `sn,cpu_milli,memory_mib,gpu,model` (any column order, extra columns
// ignored); `gpu` is whole GPUs per node (0..16), `model` the GPU type (needed when gpu > 0).
// Pod list: header `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,
// deletion_time` (other openb columns such as qos and pod_phase are ignored); `gpu_milli`
// is milli-GPU per GPU (1..1000 when num_gpu >= 1, 0 when num_gpu == 0; a pod asking for
// more than one GPU takes whole GPUs, so gpu_milli must be 1000 there); `gpu_spec` is an
// optional `|`-separated list of acceptable GPU types; times are seconds, and an empty
// deletion_time means the pod never leaves.
//
// Errors name the file, line and column: kNotFound (missing file), kInvalidArgument
// (missing column, empty or non-integer number, negative value, out-of-range GPU fields,
// duplicate names, deletion before creation, an empty list).
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"

namespace gpufit {

Result<std::vector<NodeSpec>> ReadOpenbNodes(const std::string& path);
Result<std::vector<PodSpec>> ReadOpenbPods(const std::string& path);

}  // namespace gpufit

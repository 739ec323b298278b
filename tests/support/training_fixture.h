// Test fixture for training jobs found in a cluster (training/cluster_jobs.h): the
// kube-state-metrics series a cluster's Prometheus holds for two training jobs and the
// nodes under them, with the dcgm-exporter series `plan --prometheus` reads, in OpenMetrics
// text for `promtool tsdb create-blocks-from openmetrics`. Six hours from kFixtureT0
// (dcgm_fixture.h) at a 60 s scrape, every series sampled at T0, T0 + 60, ..., its end.
//
// Nodes (kube_node_info; kube_node_labels with label_karpenter_sh_capacity_type,
// label_nvidia_com_gpu_product NVIDIA-A100-SXM4-80GB, label_nvidia_com_gpu_count 8):
//   spot-a, spot-b  spot, the whole six hours;
//   spot-gone       spot, disappears after T0 + 3 h (its last samples at T0 + 3 h);
//   od-a            on-demand, the whole six hours.
// On the grid of --since T0 --until T0 + 6 h --step 60s (first grid time T0 + 60) the spot
// node-hours are (21600 - 60 + 60) / 3600 x 2 + (10800 - 60 + 60) / 3600 = 15, with one
// disappearance: 1 / 15 reclaims per node-hour.
// Pods (kube_pod_info, _owner, _start_time, _created, _status_phase{phase="Running"},
// _container_resource_requests{resource="nvidia_com_gpu"}, _labels, _annotations), ns ml:
//   finetune-x7k2p          Job finetune, 4 GPUs on od-a, started T0 - 2 h; annotations
//                           gpufit.io/work-hours 20, gpufit.io/checkpoint-write-seconds 60;
//   llm-pretrain-worker-0/1 PyTorchJob llm-pretrain (label training.kubeflow.org/job-name),
//                           8 GPUs each on spot-a and spot-b, started T0 + 1 h;
//   sweep-0                 Job sweep, 8 GPUs on spot-gone, gone with it (not running at the end);
//   vllm-7d4b9-abcde        ReplicaSet vllm-7d4b9 (a Deployment), 1 GPU on od-a: serving.
// DCGM (modelName "NVIDIA A100-SXM4-80GB"): per GPU of each pod, DCGM_FI_DEV_FB_USED
// (finetune 30,000 MiB, llm-pretrain 60,000 MiB, sweep 50,000, vllm 20,000) and
// DCGM_FI_DEV_GPU_UTIL 90 %, over each pod's life in the range.
#pragma once

#include <string>

namespace gpufit::testing {

struct TrainingFixture {
  std::string openmetrics;
  double since_s = 0, until_s = 0;
};

TrainingFixture MakeTrainingFixture();

}  // namespace gpufit::testing

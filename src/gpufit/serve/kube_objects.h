// What the scheduler extender reads from Node and Pod objects (kubectl's snapshots and the pod
// kube-scheduler sends): a node's GPUs, a pod's declared request, and how a pod is placed.
//
// Node GPUs. Allocatable `nvidia.com/gpu` when the node reports it (0 included: every device
// unhealthy), else the `nvidia.com/gpu.count` label, else allocatable
// `alibabacloud.com/gpu-count`. On a node whose device plugin shares each GPU (time-slicing or
// MPS: GPU feature discovery's `nvidia.com/gpu.replicas` label above 1, the replicas of each
// GPU, k8s-device-plugin internal/lm/resource.go), allocatable `nvidia.com/gpu` counts replicas:
// the physical GPUs are that over the replicas (a 4-GPU node with 4 replicas advertises 16).
// A HAMi node (annotation hami.io/node-nvidia-register, ingest/kube/node_sharing.h) has the GPUs it
// registers, each shared by the smallest registered `count` (HAMi advertises GPUs x count).
// A node with more than kMaxGpusPerNode (16) GPUs is counted with 16, and NodeGpusOf says so.
// The GPU type is the `nvidia.com/gpu.product` label, else `alibabacloud.com/gpu-card-model`.
//
// Pod requests. CPU and memory by kube-scheduler's rule (KubePod::CpuRequest, MemoryRequest);
// whole GPUs from `nvidia.com/gpu`; without it, the annotations `alibabacloud.com/gpu-count`
// and `alibabacloud.com/gpu-milli` (milli-GPU on each GPU, 1000 = one whole GPU) of Alibaba's
// open-gpu-share, as the FGD simulator's pods carry them; GPU types from the node selector
// `nvidia.com/gpu.product` or `alibabacloud.com/gpu-card-model`.
#pragma once

#include <string>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/serve/profiles.h"

namespace gpufit::serve {

// A node's GPUs as the extender counts them (above).
struct NodeGpus {
  int physical = 0;    // GPUs placement counts: 0..kMaxGpusPerNode
  int replicas = 1;    // pods the device plugin lets share each GPU (`nvidia.com/gpu.replicas`); 1: whole GPUs
  int advertised = 0;  // physical GPUs the node reports, before the kMaxGpusPerNode cap
  // Non-empty when the node has more GPUs than placement counts: names the node and both counts.
  std::string warning{};
};
NodeGpus NodeGpusOf(const KubeNode& node);

// The node as placement sees it: NodeGpusOf's physical GPUs.
NodeSpec NodeSpecOf(const KubeNode& node);

// Per-GPU memory of a node, MiB: the `nvidia.com/gpu.memory` label (GPU feature discovery),
// else the catalog model whose name matches `nvidia.com/gpu.product`; 0 when neither says.
double GpuMemoryMibOf(const KubeNode& node);

// The pod's declared request. Errors (kInvalidArgument, naming the pod and the field): an
// `alibabacloud.com/gpu-count` or `gpu-milli` that is not an integer, a count outside
// 0..kMaxGpusPerNode, a milli outside 1..1000, a milli below 1000 with more than one GPU.
Result<PodSpec> DeclaredRequest(const KubePod& pod);

// A pod's request as the extender places it.
struct PodRequest {
  PodSpec declared{};
  const ServeProfile* profile = nullptr;  // its workload's profile when it shares a GPU (extender.h)
  // A pod asking one `nvidia.com/gpu` that also carries `alibabacloud.com/gpu-milli` below
  // 1000: that share, milli-GPU. On a node that shares its GPUs (NodeGpus::replicas > 1) the
  // device plugin gives the pod one replica of a GPU, so it takes the larger of this share and
  // one replica's (1000 / replicas) there; on a node of whole GPUs, a whole GPU. 0 otherwise.
  std::int64_t annotated_milli = 0;
  // The workload key (serve/profiles.h) of a pod that a ReplicaSet, Deployment or StatefulSet
  // owns, whose replicas are kept apart (ExtenderOptions::replicas_apart); empty otherwise.
  std::string replica_of{};
  // How it is placed, for the log: "telemetry profile of ...", "declared requests: ..."; empty
  // without --profiles.
  std::string from{};
};
// Errors: those of DeclaredRequest.
Result<PodRequest> RequestOf(const KubePod& pod, const ProfileBook* profiles);

}  // namespace gpufit::serve

// What the soak after a wave looks for in the pods of the workloads it changed, as the kubelet
// reports them in each pod's status
// (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-states):
//  * a container OOMKilled: state.terminated or lastState.terminated with reason "OOMKilled"
//    (exit code 137) that finished at or after the wave began;
//  * any other restart: a container's restartCount above what it was when the wave began (a
//    pod created since counts from 0);
//  * a pod stuck Pending: phase Pending for longer than `pending_s` since its creation (a cap
//    the scheduler cannot place, a GPU memory resource no node offers).
//  * from Prometheus, when the caller reads it: a pod whose GPU memory in use reached the sum of
//    its containers' nvidia.com/gpumem limits (MiB, as HAMi reads the resource): the next
//    allocation past the cap fails inside the process, which the kubelet never sees.
// Pods are the `items` of a pod list (GET /api/v1/namespaces/NS/pods?labelSelector=...).
// Times are Unix seconds (core/rfc3339.h reads the API's RFC 3339 stamps).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpufit::apply {

struct Breach {
  std::string pod;        // namespace/name
  std::string container;  // "" for a Pending pod
  std::string reason;     // "OOMKilled", "restarted" or "Pending"
  std::string detail;     // one sentence with the figures
  double at_s = 0;        // when it happened (finishedAt; a Pending pod: when it passed pending_s)
};

// restartCount per "namespace/pod/container" (by pod uid when there is one) at the wave's start.
using RestartBaseline = std::map<std::string, long>;
RestartBaseline Baseline(const nlohmann::json& pods);

std::vector<Breach> FindBreaches(const nlohmann::json& pods, const RestartBaseline& baseline, double since_s,
                                 double now_s, double pending_s);

// `used_mib`: GPU memory in use per "namespace/pod" (e.g. max of DCGM_FI_DEV_FB_USED over the
// last minute). A pod at or above its cap is a breach at `now_s`; pods without a cap are not.
std::vector<Breach> MemoryAtCap(const nlohmann::json& pods, const std::map<std::string, double>& used_mib,
                                double now_s);

}  // namespace gpufit::apply

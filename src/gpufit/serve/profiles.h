// Telemetry profiles for `gpufit serve --profiles plan.json`: each workload's memory envelope
// and 24-hour duty curve, from the "workload_profiles" section `gpufit plan` writes
// (plan/workload_profiles.h states how they are measured and checked out of sample; plan.json
// from `gpufit plan --prometheus` is the way to compute them from a Prometheus server).
//
// A pod finds its profile by its workload key, the rule of plan/workload_keys.h applied to the
// pod object kube-scheduler sends: "<kind>/<namespace>/<name>" of its top-level owner
// (a ReplicaSet with the pod-template-hash label is its Deployment), else
// "pod/<namespace>/<name>". New replicas of a Deployment therefore find the profile its
// earlier replicas left.
//
// What a profile changes (serve/extender.h): only a pod that declares a share of one GPU
// (open-gpu-share's `alibabacloud.com/gpu-milli` below 1000) is placed by its profile, because
// a whole GPU is the device plugin's to give whatever the pod uses. On a node whose GPUs have
// M MiB, the pod's share is ceil(1000 * memory_peak_mib / C) milli-GPU (at least 1, at most
// 1000), C = M - reserve_mib - margin_mib: the plan's reserve and learned margin, kept free on
// each GPU as the plan's packer keeps them, so that the shares of profiled tenants add up to at
// most 1000 exactly when their peaks fit in C. A node whose GPU memory is unknown takes the
// declared share. Every other pod is placed by its declared requests, and the answer says so.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit::serve {

struct ServeProfile {
  std::string workload{};
  double memory_peak_mib = 0;
  // Per hour of the day (UTC on a Prometheus clock): the duty cycle, percent, that one
  // replica stays under but in the plan's collision share of samples; an hour the telemetry
  // did not observe takes the workload's overall figure.
  std::array<double, 24> duty_pct{};
  int observed_hours = 24;  // hours with a figure of their own; 0: the profile vouches for none
};

// GPU memory used outside any pod (plan.json `reserved_gpus`, plan/reserved_gpus.h): it counts
// as used on that node's GPU, as the issue's state rule asks ("unattributed GPU memory counts as
// used"). `gpu` is dcgm-exporter's UUID, or "<host>/gpu<N>" where it had none; only the latter
// says which GPU of the node it is (`index`).
struct OutsideMemory {
  std::string host{};  // the node's name (dcgm-exporter's Hostname label)
  std::string gpu{};
  std::optional<int> index{};
  double peak_mib = 0;
};

class ProfileBook {
 public:
  // Reads plan.json: workload_profiles.workloads[] (workload, memory_peak_mib, duty_pct,
  // duty_pct_by_hour of 24 numbers or nulls), workload_profiles.margin_mib,
  // options.reserve_mib, and reserved_gpus[] (gpu, host, outside_pods_peak_mib) when present. Errors (kInvalidArgument,
  // naming the file and the field): unreadable JSON, a missing or mistyped field, a negative or non-finite size, a duty
  // outside 0..100, an hour list not of 24 entries, a workload named twice. kNotFound: no such file.
  static Result<ProfileBook> FromPlanJson(const std::string& path);
  // For tests and callers that already hold the figures.
  ProfileBook(std::vector<ServeProfile> profiles, double margin_mib, double reserve_mib,
              std::vector<OutsideMemory> outside = {});

  const ServeProfile* Find(const std::string& workload) const;
  double margin_mib() const { return margin_mib_; }
  double reserve_mib() const { return reserve_mib_; }
  std::size_t size() const { return profiles_.size(); }
  const std::vector<OutsideMemory>& outside() const { return outside_; }
  // Profiles whose key names no namespace ("pod/<name>", from telemetry without namespaces, as
  // GenTD26's): no pod's key can be one of them.
  std::vector<std::string> Unmatchable() const;

  // The share of one GPU of `gpu_memory_mib` that `mib` takes (above): 1..1000 milli-GPU.
  std::int64_t MilliOn(double mib, double gpu_memory_mib) const;

 private:
  std::map<std::string, ServeProfile> profiles_;
  double margin_mib_ = 0, reserve_mib_ = 0;
  std::vector<OutsideMemory> outside_;
};

// The workload key of a pod object (plan/workload_keys.h's rule, above).
std::string WorkloadKeyOfPod(const KubePod& pod);

}  // namespace gpufit::serve

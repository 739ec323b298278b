// Kubernetes Dynamic Resource Allocation (resource.k8s.io/v1, served by Kubernetes 1.34)
// with NVIDIA's DRA driver for GPUs and its MPS sharing (GpuConfig, resource.nvidia.com/
// v1beta1: sharing.strategy MPS, mpsConfig.defaultActiveThreadPercentage and
// defaultPinnedDeviceMemoryLimit; the driver's MPSSupport feature gate is alpha, off by
// default; a release that serves resource.k8s.io/v1 is needed, v25.8.0 or later).
//
// A ResourceClaimTemplate gives every pod a claim of its own, and the driver allocates each
// claim a whole GPU: pods share a GPU only by naming the same ResourceClaim (the driver's
// shared-claim examples). So gpufit writes one ResourceClaim per planned GPU,
// gpufit-gpu-<g>, in the namespace of its pods, and patches each workload on it to name the
// claim (spec.resourceClaims[].resourceClaimName, container resources.claims) instead of
// asking for nvidia.com/gpu. A workload whose replicas the plan put on different GPUs cannot
// name one claim, and is left as it is (noted).
// Memory: MPS caps each client's pinned device memory. The claim's
// defaultPinnedDeviceMemoryLimit is the largest cap of its pods; each container also sets
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=<cap>M" (NVIDIA MPS docs, environment variables:
// device 0 of the claim, its own cap), so a pod's allocations past its cap fail. Compute:
// defaultActiveThreadPercentage 100. The plan bounds compute by how often the pods' duty
// cycles (a share of time) overlap; an MPS thread percentage is a share of the SMs every
// kernel may use, so any lower ceiling would slow each kernel even while the others idle.
#include <fmt/format.h>

#include <map>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/caps.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {
namespace {

constexpr const char* kPinnedLimitEnv = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
constexpr const char* kClaimRef = "gpufit-gpu";

Result<void> EmitDraMps(Builder& b) {
  const Plan& plan = b.plan();
  const std::map<WorkloadKey, Builder::Shared> shared = b.SharedWorkloads();
  for (std::size_t g = 0; g < plan.replay.gpus.size(); ++g) {
    const GpuReplay& gpu = plan.replay.gpus[g];
    if (gpu.pods.size() < 2) continue;
    // The workloads of this GPU whose every replica is on it, by namespace.
    std::map<std::string, std::vector<const std::pair<const WorkloadKey, Builder::Shared>*>> by_ns;
    for (const auto& entry : shared) {
      const auto& [key, s] = entry;
      if (std::none_of(s.pods.begin(), s.pods.end(), [&](std::size_t p) { return plan.group_of[p] == g; })) continue;
      const std::vector<std::size_t> all = WorkloadPods(b, key);
      if (std::any_of(all.begin(), all.end(), [&](std::size_t p) { return plan.group_of[p] != g; })) {
        b.NoteOnce(
            fmt::format("dra-mps: {} has replicas on several planned GPUs; one pod template cannot name one "
                        "shared ResourceClaim, so it is left as it is",
                        key.Text()));
        continue;
      }
      by_ns[key.ns].push_back(&entry);
    }
    if (by_ns.empty()) continue;
    auto ns = std::max_element(by_ns.begin(), by_ns.end(),
                               [](const auto& x, const auto& y) { return x.second.size() < y.second.size(); });
    for (const auto& [other, members] : by_ns)
      if (other != ns->first)
        for (const auto* m : members)
          b.Note(
              fmt::format("dra-mps: {} shares planned GPU {} with namespace {}; a ResourceClaim is namespaced, so it "
                          "is left as it is",
                          m->first.Text(), g, ns->first));
    const std::string claim = fmt::format("gpufit-gpu-{}", g);
    double largest_cap = 0;
    std::vector<std::string> names;
    for (const auto* m : ns->second) {
      const KubeContainer* c = b.GpuContainer(*m->second.example, m->first);
      if (c == nullptr) continue;
      const auto cap = static_cast<std::int64_t>(plan.memory_cap_mib.at(m->second.pods.front()));
      largest_cap = std::max(largest_cap, static_cast<double>(cap));
      Patch& patch = b.PatchOf(m->first);
      YAML::Node ref;
      ref["name"] = kClaimRef;
      ref["resourceClaimName"] = claim;
      patch.yaml["spec"]["template"]["spec"]["resourceClaims"].push_back(ref);
      YAML::Node container, use, env;
      container["name"] = c->name;
      for (const char* side : {"limits", "requests"}) container["resources"][side][kGpuResource] = YAML::Node();
      use["name"] = kClaimRef;
      container["resources"]["claims"].push_back(use);
      env["name"] = kPinnedLimitEnv;
      env["value"] = fmt::format("0={}M", cap);
      container["env"].push_back(env);
      Builder::AddContainer(patch, *c, container);
      patch.what.push_back(fmt::format("container {}: ResourceClaim {} (MPS) instead of {}, {}=0={}M", c->name, claim,
                                       kGpuResource, kPinnedLimitEnv, cap));
      b.SelectTargetModel(patch);
      patch.why.push_back(CapReason(plan, m->second.pods));
      names.push_back(m->first.Text());
    }
    if (names.empty()) continue;
    YAML::Node n = Object("resource.k8s.io/v1", "ResourceClaim", claim, ns->first);
    YAML::Node request;
    request["name"] = "gpu";
    request["exactly"]["deviceClassName"] = "gpu.nvidia.com";
    n["spec"]["devices"]["requests"].push_back(request);
    YAML::Node config;
    config["requests"].push_back("gpu");
    config["opaque"]["driver"] = "gpu.nvidia.com";
    YAML::Node params = config["opaque"]["parameters"];
    params["apiVersion"] = "resource.nvidia.com/v1beta1";
    params["kind"] = "GpuConfig";
    params["sharing"]["strategy"] = "MPS";
    params["sharing"]["mpsConfig"]["defaultActiveThreadPercentage"] = Plain(100);
    params["sharing"]["mpsConfig"]["defaultPinnedDeviceMemoryLimit"] = fmt::format("{:.0f}Mi", largest_cap);
    n["spec"]["devices"]["config"].push_back(config);
    b.AddFile({.name = fmt::format("resourceclaim-{}-{}.yaml", ns->first, claim),
               .yaml = Emit(n),
               .apply = "kubectl apply -f FILE",
               .what = fmt::format("one GPU shared through MPS by {}", Join(names)),
               .why = fmt::format("planned GPU {}: {} pods; the largest cap is {:.0f} MiB", g, gpu.pods.size(),
                                  largest_cap)});
  }
  return {};
}

std::optional<double> ReadDraMpsCap(const std::string& yaml) {
  const YAML::Node spec = YAML::Load(yaml)["spec"]["template"]["spec"];
  for (const char* list : {"containers", "initContainers"})
    for (const YAML::Node& c : spec[list])
      for (const YAML::Node& e : c["env"])
        if (e["name"].as<std::string>() == kPinnedLimitEnv) {
          const std::string v = e["value"].as<std::string>();  // "0=<MiB>M"
          if (v.size() < 4 || v.rfind("0=", 0) != 0 || v.back() != 'M') return std::nullopt;
          return std::stod(v.substr(2, v.size() - 3));
        }
  return std::nullopt;
}

}  // namespace

extern const SharingBackend kDraMps;
const SharingBackend kDraMps = {
    .name = "dra-mps",
    .memory_enforced_by = "MPS: each client's pinned device memory limit (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)",
    .compute_enforced_by = "nothing set (MPS runs the pods' kernels side by side; thread percentage 100)",
    .needs = "Kubernetes >= 1.34 (resource.k8s.io/v1); NVIDIA DRA driver for GPUs >= v25.8 with MPSSupport=true",
    .caps_memory = true,
    .emit = EmitDraMps,
    .read_cap = ReadDraMpsCap,
};

}  // namespace gpufit::manifests

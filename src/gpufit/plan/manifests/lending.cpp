// Night lending (optimize/time_multiplex.h): PriorityClasses and the Kueue queue of the
// lent GPUs; see plan/kube_manifests.h.
#include <fmt/format.h>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/emitters.h"

namespace gpufit::manifests {

void EmitLending(Builder& b) {
  const TimeMultiplexPlan& t = *b.in().lending;
  if (!t.has_window || t.lent_gpus <= 0) return;
  const std::string apply = "kubectl apply -f FILE";
  auto priority_class = [&](const char* name, int value, bool never_preempts, const std::string& what) {
    YAML::Node n = Object("scheduling.k8s.io/v1", "PriorityClass", name, "");
    n["value"] = Plain(value);
    n["globalDefault"] = Plain(false);
    if (never_preempts) n["preemptionPolicy"] = "Never";
    n["description"] = what;
    b.AddFile({.name = fmt::format("priorityclass-{}.yaml", name),
               .yaml = Emit(n),
               .apply = apply,
               .what = what,
               .why = t.evidence});
  };
  priority_class("gpufit-inference", 100000, false, "inference pods: they preempt GPUs lent at night");
  priority_class("gpufit-night-lending", -100, true,
                 "training on GPUs lent by inference at night: never preempts, goes first");

  YAML::Node flavor = Object("kueue.x-k8s.io/v1beta1", "ResourceFlavor", "gpufit-night", "");
  b.AddFile({.name = "kueue-resourceflavor-gpufit-night.yaml",
             .yaml = Emit(flavor),
             .apply = apply,
             .what = "the lent GPUs' flavor (no node labels: add the fleet's nodes' labels)",
             .why = t.evidence});

  YAML::Node queue = Object("kueue.x-k8s.io/v1beta1", "ClusterQueue", "gpufit-night", "");
  queue["metadata"]["annotations"]["gpufit.io/window-utc"] =
      fmt::format("{:02d}:00-{}", t.window_start_hour, ClockTime(t.lending_end_s()));
  queue["spec"]["namespaceSelector"] = YAML::Node(YAML::NodeType::Map);
  queue["spec"]["stopPolicy"] = "Hold";
  YAML::Node gpus;
  gpus["name"] = kGpuResource;
  gpus["nominalQuota"] = Plain(t.lent_gpus);
  YAML::Node flavor_quota;
  flavor_quota["name"] = "gpufit-night";
  flavor_quota["resources"].push_back(gpus);
  YAML::Node group;
  group["coveredResources"].push_back(kGpuResource);
  group["flavors"].push_back(flavor_quota);
  queue["spec"]["resourceGroups"].push_back(group);
  b.AddFile(
      {.name = "kueue-clusterqueue-gpufit-night.yaml",
       .yaml = Emit(queue),
       .apply = apply,
       .what = fmt::format(
           "{} GPUs lendable each night, times in UTC on the telemetry's clock: at {:02d}:00 `kubectl patch "
           "clusterqueue gpufit-night --type merge -p '{{\"spec\":{{\"stopPolicy\":\"None\"}}}}'`; at {} the same "
           "with \"HoldAndDrain\" (lent pods need terminationGracePeriodSeconds >= their checkpoint write); by {} "
           "the "
           "GPUs are back and inference scales up. Lent Jobs set the label `kueue.x-k8s.io/queue-name: gpufit-night` "
           "and `priorityClassName: gpufit-night-lending`; inference pods `priorityClassName: gpufit-inference`. "
           "Needs Kueue >= 0.6",
           t.lent_gpus, t.window_start_hour, ClockTime(t.drain_s()), ClockTime(t.lending_end_s())),
       .why = t.evidence});

  YAML::Node local = Object("kueue.x-k8s.io/v1beta1", "LocalQueue", "gpufit-night", "default");
  local["spec"]["clusterQueue"] = "gpufit-night";
  b.AddFile({.name = "kueue-localqueue-gpufit-night.yaml",
             .yaml = Emit(local),
             .apply = apply,
             .what = "the queue lent Jobs name (namespace default: move it to the training namespace)",
             .why = t.evidence});
}

}  // namespace gpufit::manifests

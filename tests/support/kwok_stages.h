// KWOK Stages of our own, for the tests: behaviour that a kubelet would report, simulated on
// KWOK's nodes (tests/support/kube_control_plane.h starts KWOK with them: StartKwok(files)).
//
// A Stage (KWOK v0.8.0, kwok.x-k8s.io/v1alpha1; pkg/apis/v1alpha1/stage_types.go in the module
// sigs.k8s.io/kwok@v0.8.0) matches a resource by `selector.matchExpressions`, whose keys are jq
// programs run by gojq on the object as JSON (pkg/utils/expression/selector.go: `In` holds when
// any output, a string, bool or int, is one of `values`), and moves it by `next.statusTemplate`,
// a Go template (sprig's functions, KWOK's Now, Quote, YAML; pkg/utils/gotpl) rendered on the
// object and sent as a strategic-merge patch of the pod's status subresource
// (pkg/apis/internalversion/conversion.go, pkg/utils/lifecycle/next.go). KWOK plays the stages
// again on every change of the object, so a stage must stop matching once it has played.
#pragma once

#include <string>

namespace gpufit::testing {

// A Stage that kills a container for out of memory, as a kubelet reports it, once: a Running,
// not deleting pod's container whose `resources.limits[resource]` (nvidia.com/gpumem: a count of
// MiB) is strictly below `threshold_mib`, and whose lastState is not already OOMKilled, gets
//   lastState.terminated: {reason: OOMKilled, exitCode: 137, startedAt: the run's start,
//                          finishedAt: now}
//   restartCount + 1, state.running.startedAt: now, ready: true (the container runs again).
// The limit is read in the API server's canonical spellings of a quantity: digits, an optional
// fraction and an optional suffix m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei (the server
// stores a limit of "30000" as "30k"; "60330" stays). An exponent spelling ("3e4") or no limit
// never fires.
// The other containers' statuses are kept as they are (containerStatuses is an atomic list:
// the patch carries all of them). Since the stage then no longer matches, it fires once per
// container of a pod, also across KWOK restarts; a pod that a rollout makes starts again at
// restartCount 0. A pod is killed within about half a second of Running.
//
// The YAML of one Stage named `gpufit-oom-below-<threshold>`, for a file given to StartKwok.
// To change the threshold during a test, restart KWOK with a new file.
std::string KwokOomStage(const std::string& resource, long threshold_mib);

}  // namespace gpufit::testing

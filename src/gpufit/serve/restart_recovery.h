// Restart recovery for `gpufit serve` started from files (--nodes/--pods, --watch-dir) that binds
// (--kube-api): the files may have been listed before Bindings that an earlier gpufit made just
// before it was killed, so that the GPUs those pods hold look free. Before the extender answers
// ready, the pods are listed from the API server and every pod it shows bound that the files do
// not is adopted (Extender::Adopt): its GPUs stay counted until the snapshots show the pod. With
// --kubeconfig the snapshot is the API server's own listing and there is nothing to recover.
#pragma once

#include <string>
#include <vector>

#include "gpufit/model/kube_cluster.h"
#include "gpufit/serve/extender.h"

namespace gpufit::serve {

struct Recovered {
  int adopted = 0;                      // pods whose GPUs are now counted
  std::vector<std::string> warnings{};  // one per bound pod that could not be taken (no room, no node)
};

// `listed`: the pods the extender was built from; `api`: the API server's pods, listed after.
// A pod counts as bound in `listed` by its UID (else namespace/name) with a node and a phase other
// than Succeeded or Failed.
Recovered AdoptBoundPods(Extender& extender, const std::vector<KubePod>& listed, const std::vector<KubePod>& api);

}  // namespace gpufit::serve

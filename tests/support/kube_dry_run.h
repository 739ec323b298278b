// Applies every object of a folder that gpufit wrote (plan --emit-manifests, inference
// --manifests) on a real API server, with dryRun=All, the way its README.md tells a user to:
//  * `kubectl apply -f FILE` (and every file a README does not name): server-side apply
//    (`kubectl apply --server-side --dry-run=server`, field manager "gpufit");
//  * `kubectl patch KIND NAME ... --patch-file FILE`: the same command with --dry-run=server, so
//    the patch is merged into the live object and the result validated (the object must exist:
//    the test creates the workloads, nodes and ClusterPolicy it patches);
//  * `kustomize: list FILE under patches: of the Job's source`: a Job's pod template is
//    immutable, so the patch goes into its next submission. The live Job, stripped of what the
//    server set (status, uid, the generated selector and controller-uid labels), is merged with
//    the patch client-side (`kubectl patch --local`, a strategic merge as kustomize does) and
//    created with --dry-run=server under the name NAME-gpufit-next.
// Namespaces the objects name are created first (a real cluster has them).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kube_control_plane.h"

namespace gpufit::testing {

struct ServerDryRun {
  std::size_t objects = 0;            // files applied (each holds one object)
  std::vector<std::string> errors;    // one per refused object: `FILE (Kind ns/name): kubectl's message`,
                                      // and one per unknown or duplicate field the server warned of
  std::vector<std::string> warnings;  // the server's other warnings (a deprecated API version, ...)
};

ServerDryRun DryRunManifests(const KubeControlPlane& plane, const std::filesystem::path& dir);

}  // namespace gpufit::testing

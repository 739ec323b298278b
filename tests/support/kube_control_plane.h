// A real Kubernetes control plane for the tests (issue 39): etcd and kube-apiserver on free
// loopback ports, started by scripts/kube-control-plane (which builds the pinned releases from
// the Go module proxy once per machine and caches them), and stopped when the object goes.
// On request (issue 42): KWOK (nodes with no kubelet, pods that reach Running, and stages of
// our own such as tests/support/kwok_stages.h's OOM kill), kube-scheduler, and
// kube-controller-manager (Deployments roll out: ReplicaSets, their pods, PDB status).
//
// Authentication: `kubeconfig()` holds the admin's client certificate (group system:masters);
// `token()` is a bearer token of the same user (the API server's --token-auth-file); the
// server's certificate is signed by `ca_file()`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::testing {

struct CommandResult {
  int rc = -1;  // the exit status; -1 when it could not run or died of a signal
  std::string out;
  std::string err;
};

// Runs argv (argv[0] looked up in PATH) with `stdin_text` on its standard input and waits.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text = "");

// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) with one profile per name, each
// with kube-scheduler's default plugins, on the cluster of `kubeconfig`, no leader election.
// Two profiles, default-scheduler and hami-scheduler, are an honest stand-in for HAMi, not HAMi:
// HAMi's scheduler is kube-scheduler with the profile hami-scheduler plus HAMi's extender (filter
// and bind by each GPU's free memory), whose managedResources, nvidia.com/gpu and
// nvidia.com/gpumem among them, are ignoredByScheduler (github.com/Project-HAMi/HAMi,
// charts/hami/templates/scheduler/configmapnew.yaml). No extender runs here: pods naming
// hami-scheduler are placed by kube-scheduler's own NodeResourcesFit, which counts
// nvidia.com/gpu and nvidia.com/gpumem against each node's allocatable total.
std::string SchedulerProfilesYaml(const std::string& kubeconfig, const std::vector<std::string>& scheduler_names);

class KubeControlPlane {
 public:
  // Starts etcd and kube-apiserver with their state, logs and certificates under `dir` (made if
  // missing) and waits until /readyz answers. Errors carry the script's output.
  static Result<std::unique_ptr<KubeControlPlane>> Start(const std::string& dir);
  ~KubeControlPlane();  // stops every process it started (SIGTERM, then SIGKILL)
  KubeControlPlane(const KubeControlPlane&) = delete;
  KubeControlPlane& operator=(const KubeControlPlane&) = delete;

  // (Re)starts KWOK on the nodes annotated `kwok.x-k8s.io/node: fake`, with KWOK's own "fast"
  // Stages (a node goes Ready, a pod bound to it Running, a deleted pod goes) and the Stage
  // files `extra_stage_files` (YAML, one or more documents each; e.g. KwokOomStage). KWOK takes
  // each as one more --config. A restart plays the stages again on every pod it finds; to change
  // a stage's threshold, call it again with a new file. An error names a missing file.
  Result<void> StartKwok(const std::vector<std::string>& extra_stage_files = {}) const;
  // (Re)starts kube-scheduler with the KubeSchedulerConfiguration file `config`.
  Result<void> StartScheduler(const std::string& config) const;
  // Writes dir()/scheduler-profiles.yaml (SchedulerProfilesYaml) and (re)starts kube-scheduler
  // with it: pods naming any of them in `spec.schedulerName` are scheduled onto the KWOK nodes.
  // An error for no name.
  Result<void> StartSchedulerProfiles(const std::vector<std::string>& scheduler_names = {"default-scheduler",
                                                                                         "hami-scheduler"}) const;
  // (Re)starts kube-controller-manager v1.37.2 (built on first use into a cache entry of its
  // own, ~/.cache/gpufit/kube/k8s-1.37.2_kcm; about 2 minutes on a machine whose Go caches hold
  // the API server's build) with the deployment, replicaset, statefulset, job, disruption and
  // garbage-collector controllers only, the admin's kubeconfig, no leader election and no
  // serving port. A Deployment then gets its ReplicaSet and pods, a template change rolls out,
  // a PodDisruptionBudget gets status.disruptionsAllowed. Returns once the Deployment
  // controller started; an error carries the end of its log.
  Result<void> StartControllerManager() const;
  // Creates a KWOK node `name` (annotated kwok.x-k8s.io/node: fake, label kubernetes.io/hostname)
  // whose capacity and allocatable are 32 CPUs, 256Gi, 110 pods, `gpus` nvidia.com/gpu and
  // gpus * gpu_memory_mib nvidia.com/gpumem (MiB, the node's total: kube-scheduler counts an
  // extended resource per node, HAMi's extender per device). It removes the taint
  // node.kubernetes.io/not-ready that the API server puts on a new node and that the node
  // lifecycle controller, not run here, would remove once KWOK made the node Ready. An error
  // for gpus or gpu_memory_mib <= 0, or carrying kubectl's message (e.g. the node exists).
  Result<void> CreateKwokGpuNode(const std::string& name, int gpus, long gpu_memory_mib) const;

  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& server() const { return server_; }  // https://127.0.0.1:PORT
  const std::string& ca_file() const { return ca_file_; }
  const std::string& token() const { return token_; }
  const std::string& bin() const { return bin_; }  // folder of kubectl, kube-apiserver, ...

  // The pinned kubectl of the same release, on this control plane.
  CommandResult Kubectl(const std::vector<std::string>& args, const std::string& stdin_text = "") const;
  // Kubectl's stdout; an error naming the command and carrying its stderr when it fails.
  Result<std::string> KubectlOk(const std::vector<std::string>& args, const std::string& stdin_text = "") const;

 private:
  KubeControlPlane() = default;
  std::string dir_, kubeconfig_, server_, ca_file_, token_, bin_;
};

}  // namespace gpufit::testing

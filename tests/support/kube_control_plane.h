// A real Kubernetes control plane for the tests (issue 39): etcd and kube-apiserver on free
// loopback ports, started by scripts/kube-control-plane (which builds the pinned releases from
// the Go module proxy once per machine and caches them), and stopped when the object goes.
// KWOK (nodes with no kubelet, pods that reach Running) and kube-scheduler start on request.
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

class KubeControlPlane {
 public:
  // Starts etcd and kube-apiserver with their state, logs and certificates under `dir` (made if
  // missing) and waits until /readyz answers. Errors carry the script's output.
  static Result<std::unique_ptr<KubeControlPlane>> Start(const std::string& dir);
  ~KubeControlPlane();  // stops every process it started (SIGTERM, then SIGKILL)
  KubeControlPlane(const KubeControlPlane&) = delete;
  KubeControlPlane& operator=(const KubeControlPlane&) = delete;

  // KWOK manages the nodes annotated `kwok.x-k8s.io/node: fake`.
  Result<void> StartKwok() const;
  // (Re)starts kube-scheduler with the KubeSchedulerConfiguration file `config`.
  Result<void> StartScheduler(const std::string& config) const;

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

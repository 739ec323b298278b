// One `gpufit apply` (or `--revert`) at a time per history namespace: the ConfigMap
// gpufit-apply-lock, created (the API server lets one create win), renewed at every change and
// poll by a PUT on the resourceVersion it last wrote (a run that lost it to another stops),
// deleted when the RunLock is destroyed. A lock not renewed for kStaleS (a run killed with
// SIGKILL) is taken over the same way.
#pragma once

#include <string>

#include "gpufit/apply/apply_run.h"
#include "gpufit/core/result.h"
#include "gpufit/ingest/kube_api/kube_client.h"

namespace gpufit::apply {

class RunLock {
 public:
  static constexpr double kStaleS = 180;
  static constexpr const char* kName = "gpufit-apply-lock";
  RunLock(const kube_api::KubeClient& kube, const ApplyOptions& o, const ApplyEnv& env)
      : kube_(kube), o_(o), env_(env) {}
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();
  // "" when taken; else why not (another run holds it). Errors are the API server's.
  Result<std::string> Acquire(const std::string& run);
  // An error when another run took the lock (or the API server refuses).
  Result<void> Renew();

 private:
  std::string Collection() const;
  std::string Path() const;
  nlohmann::json Object(const std::string& version) const;
  std::string Took(const nlohmann::json& object);
  const kube_api::KubeClient& kube_;
  const ApplyOptions& o_;
  const ApplyEnv& env_;
  std::string run_, version_;
  bool held_ = false;
};

}  // namespace gpufit::apply

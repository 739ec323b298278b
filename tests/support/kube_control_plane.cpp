#include "kube_control_plane.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "child_process.h"
#include "test_paths.h"

extern char** environ;

namespace gpufit::testing {
namespace fs = std::filesystem;

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& stdin_text) {
  CommandResult result;
  char out_name[] = "/tmp/gpufit-cmd-out.XXXXXX";
  char err_name[] = "/tmp/gpufit-cmd-err.XXXXXX";
  char in_name[] = "/tmp/gpufit-cmd-in.XXXXXX";
  const int out_fd = mkstemp(out_name), err_fd = mkstemp(err_name), in_fd = mkstemp(in_name);
  if (out_fd < 0 || err_fd < 0 || in_fd < 0) return result;
  if (!stdin_text.empty() && write(in_fd, stdin_text.data(), stdin_text.size()) != ssize_t(stdin_text.size())) {
    return result;
  }
  lseek(in_fd, 0, SEEK_SET);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    result.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  } else {
    result.err = "cannot start " + argv[0];
  }
  close(out_fd);
  close(err_fd);
  close(in_fd);
  result.out = ReadFileText(out_name);
  result.err += ReadFileText(err_name);
  unlink(out_name);
  unlink(err_name);
  unlink(in_name);
  return result;
}

namespace {

std::string Script() { return test_paths::SourcePath("scripts/kube-control-plane"); }

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

Result<void> RunScript(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"bash", Script()};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv);
  if (r.rc != 0) return Error{Code::kUnavailable, "scripts/kube-control-plane " + args[0] + ": " + r.err + r.out};
  return {};
}

}  // namespace

Result<std::unique_ptr<KubeControlPlane>> KubeControlPlane::Start(const std::string& dir) {
  fs::create_directories(dir);
  std::unique_ptr<KubeControlPlane> plane(new KubeControlPlane());
  plane->dir_ = fs::absolute(dir).string();
  // The script's watchdog stops the plane if this process dies without the destructor.
  setenv("GPUFIT_KUBE_OWNER_PID", std::to_string(getpid()).c_str(), 1);
  const CommandResult r = RunCommand({"bash", Script(), "start", plane->dir_});
  if (r.rc != 0) {
    RunCommand({"bash", Script(), "stop", plane->dir_});
    return Error{Code::kUnavailable, "scripts/kube-control-plane start: " + r.err + r.out};
  }
  plane->kubeconfig_ = plane->dir_ + "/kubeconfig";
  plane->ca_file_ = plane->dir_ + "/ca.crt";
  plane->token_ = Trim(ReadFileText(plane->dir_ + "/token"));
  std::istringstream env(ReadFileText(plane->dir_ + "/env"));
  for (std::string line; std::getline(env, line);) {
    if (line.rfind("SERVER=", 0) == 0) plane->server_ = line.substr(7);
    if (line.rfind("BIN=", 0) == 0) plane->bin_ = line.substr(4);
  }
  if (plane->server_.empty() || plane->bin_.empty() || plane->token_.empty()) {
    return Error{Code::kInternal, "scripts/kube-control-plane start wrote no SERVER/BIN/token in " + plane->dir_};
  }
  return plane;
}

KubeControlPlane::~KubeControlPlane() { RunCommand({"bash", Script(), "stop", dir_}); }

Result<void> KubeControlPlane::StartKwok(const std::vector<std::string>& extra_stage_files) const {
  std::vector<std::string> args{"kwok", dir_};
  for (const std::string& f : extra_stage_files) args.push_back(fs::absolute(f).string());
  return RunScript(args);
}

Result<void> KubeControlPlane::StartScheduler(const std::string& config) const {
  return RunScript({"scheduler", dir_, config});
}

std::string SchedulerProfilesYaml(const std::string& kubeconfig, const std::vector<std::string>& scheduler_names) {
  std::string y =
      "apiVersion: kubescheduler.config.k8s.io/v1\n"
      "kind: KubeSchedulerConfiguration\n"
      "clientConnection: {kubeconfig: \"" +
      kubeconfig +
      "\"}\n"
      "leaderElection: {leaderElect: false}\n"
      "profiles:\n";
  for (const std::string& name : scheduler_names) y += "  - schedulerName: " + name + "\n";
  return y;
}

Result<void> KubeControlPlane::StartSchedulerProfiles(const std::vector<std::string>& scheduler_names) const {
  if (scheduler_names.empty()) return Error{Code::kInvalidArgument, "StartSchedulerProfiles: no scheduler name"};
  const std::string path = dir_ + "/scheduler-profiles.yaml";
  std::ofstream(path) << SchedulerProfilesYaml(kubeconfig_, scheduler_names);
  return StartScheduler(path);
}

Result<void> KubeControlPlane::StartControllerManager() const { return RunScript({"controller-manager", dir_}); }

Result<void> KubeControlPlane::CreateKwokGpuNode(const std::string& name, int gpus, long gpu_memory_mib) const {
  if (gpus <= 0 || gpu_memory_mib <= 0) {
    return Error{Code::kInvalidArgument, "CreateKwokGpuNode " + name + ": gpus and gpu_memory_mib must be > 0, got " +
                                             std::to_string(gpus) + " and " + std::to_string(gpu_memory_mib)};
  }
  const nlohmann::json resources{{"cpu", "32"},
                                 {"memory", "256Gi"},
                                 {"pods", "110"},
                                 {"nvidia.com/gpu", std::to_string(gpus)},
                                 {"nvidia.com/gpumem", std::to_string(gpus * gpu_memory_mib)}};
  const std::string node = nlohmann::json{{"apiVersion", "v1"},
                                          {"kind", "Node"},
                                          {"metadata",
                                           {{"name", name},
                                            {"annotations", {{"kwok.x-k8s.io/node", "fake"}}},
                                            {"labels", {{"kubernetes.io/hostname", name}}}}},
                                          {"status", {{"capacity", resources}, {"allocatable", resources}}}}
                               .dump();
  if (Result<std::string> made = KubectlOk({"create", "-f", "-"}, node); !made) return made.error();
  if (Result<std::string> untainted =
          KubectlOk({"patch", "node", name, "--type", "merge", "-p", R"({"spec": {"taints": null}})"});
      !untainted) {
    return untainted.error();
  }
  return {};
}

CommandResult KubeControlPlane::Kubectl(const std::vector<std::string>& args, const std::string& stdin_text) const {
  std::vector<std::string> argv{bin_ + "/kubectl", "--kubeconfig", kubeconfig_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, stdin_text);
}

Result<std::string> KubeControlPlane::KubectlOk(const std::vector<std::string>& args,
                                                const std::string& stdin_text) const {
  CommandResult r = Kubectl(args, stdin_text);
  if (r.rc != 0) {
    std::string cmd = "kubectl";
    for (const std::string& a : args) cmd += " " + a;
    return Error{Code::kFailedPrecondition, cmd + " (exit " + std::to_string(r.rc) + "): " + r.err};
  }
  return std::move(r.out);
}

}  // namespace gpufit::testing

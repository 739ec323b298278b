#include "kube_dry_run.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "child_process.h"

namespace gpufit::testing {
namespace fs = std::filesystem;
namespace {

// README.md rows `| \`FILE\` | ... | \`COMMAND\` |` (plan/kube_manifests.cpp ManifestsReadme).
std::map<std::string, std::string> ApplyCommands(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::istringstream in(ReadFileText(dir / "README.md"));
  static const std::regex row(R"(^\| `([^`]+\.yaml)` \|.*\| `([^`]+)` \|$)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, m, row)) out[m[1]] = m[2];
  return out;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string OneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

void EnsureNamespace(const KubeControlPlane& plane, const std::string& ns, std::set<std::string>& known) {
  if (ns.empty() || !known.insert(ns).second) return;
  if (plane.Kubectl({"get", "namespace", ns}).rc != 0) plane.Kubectl({"create", "namespace", ns});
}

// The Job's next submission: the live Job without what the server set, merged with the patch,
// under a name of its own (the live Job keeps its name).
std::string NextJobSubmission(const KubeControlPlane& plane, const std::string& ns, const std::string& name,
                              const fs::path& patch, const fs::path& scratch, std::string& error) {
  auto live = plane.KubectlOk({"get", "job", name, "-n", ns, "-o", "json"});
  if (!live) {
    error = "the Job it patches: " + live.error().message;
    return "";
  }
  static const char* kGenerated[] = {"controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                                     "batch.kubernetes.io/job-name"};
  nlohmann::json job = nlohmann::json::parse(*live);
  job.erase("status");
  nlohmann::json& meta = job["metadata"];
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"}) meta.erase(k);
  job["spec"].erase("selector");
  for (nlohmann::json* labels : {&meta["labels"], &job["spec"]["template"]["metadata"]["labels"]})
    if (labels->is_object())
      for (const char* k : kGenerated) labels->erase(k);
  const fs::path source = scratch / (name + "-source.json");
  std::ofstream(source) << job.dump(1) << "\n";
  auto merged = plane.KubectlOk(
      {"patch", "--local", "-f", source.string(), "--type", "strategic", "--patch-file", patch.string(), "-o", "json"});
  if (!merged) {
    error = "kustomize-style merge: " + merged.error().message;
    return "";
  }
  nlohmann::json next = nlohmann::json::parse(*merged);
  next["metadata"]["name"] = name + "-gpufit-next";
  return next.dump();
}

}  // namespace

ServerDryRun DryRunManifests(const KubeControlPlane& plane, const fs::path& dir) {
  ServerDryRun result;
  const std::map<std::string, std::string> commands = ApplyCommands(dir);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::set<std::string> namespaces;
  const fs::path scratch = fs::path(plane.dir()) / "dry-run";
  fs::create_directories(scratch);
  for (const fs::path& file : files) {
    const std::string name = file.filename().string();
    YAML::Node obj;
    try {
      obj = YAML::LoadFile(file.string());
    } catch (const YAML::Exception& e) {
      result.errors.push_back(name + ": not YAML: " + e.what());
      continue;
    }
    const std::string kind = obj["kind"] ? obj["kind"].as<std::string>() : "?";
    const std::string ns = obj["metadata"]["namespace"] ? obj["metadata"]["namespace"].as<std::string>() : "";
    const std::string obj_name = obj["metadata"]["name"] ? obj["metadata"]["name"].as<std::string>() : "?";
    const std::string label = name + " (" + kind + " " + (ns.empty() ? "" : ns + "/") + obj_name + ")";
    EnsureNamespace(plane, ns, namespaces);
    ++result.objects;

    const auto it = commands.find(name);
    const std::string command = it == commands.end() ? "kubectl apply -f " + name : it->second;
    std::vector<std::string> args;
    std::string stdin_text;
    if (command.rfind("kubectl apply -f ", 0) == 0) {
      args = {"apply", "--server-side", "--dry-run=server", "--field-manager=gpufit", "-f", file.string()};
    } else if (command.rfind("kubectl patch ", 0) == 0) {
      args = Words(command.substr(8));
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--patch-file" && i + 1 < args.size()) args[i + 1] = file.string();
        if (args[i] == "-n" && i + 1 < args.size()) EnsureNamespace(plane, args[i + 1], namespaces);
      }
      args.push_back("--dry-run=server");
    } else if (command.rfind("kustomize:", 0) == 0 && kind == "Job") {
      std::string error;
      stdin_text = NextJobSubmission(plane, ns, obj_name, file, scratch, error);
      if (!error.empty()) {
        result.errors.push_back(label + ": " + OneLine(error));
        continue;
      }
      args = {"create", "--dry-run=server", "-f", "-"};
    } else {
      result.errors.push_back(label + ": no way to apply `" + command + "`");
      continue;
    }
    const CommandResult r = plane.Kubectl(args, stdin_text);
    if (r.rc != 0) {
      result.errors.push_back(label + ": " + OneLine(r.err));
      continue;
    }
    // `kubectl patch` has no --validate: the server checks a patch's fields with its default
    // fieldValidation, Warn, which drops an unknown field and says so in a Warning header.
    // Strict (what kubectl apply and create ask for) refuses it; so do we.
    std::istringstream err(r.err);
    for (std::string line; std::getline(err, line);) {
      if (line.rfind("Warning: ", 0) != 0) continue;
      const bool field =
          line.find("unknown field") != std::string::npos || line.find("duplicate field") != std::string::npos;
      (field ? result.errors : result.warnings).push_back(label + ": " + line);
    }
  }
  return result;
}

}  // namespace gpufit::testing

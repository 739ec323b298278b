#include "gpufit/plan/kube_manifests.h"

#include <fmt/format.h>

#include <cctype>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/caps.h"
#include "gpufit/plan/manifests/emitters.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit {

std::string NormalizedGpuProduct(const std::string& product) {
  std::string p;
  for (char c : product) p += c == ' ' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* prefix : {"NVIDIA-", "TESLA-"})
    if (p.rfind(prefix, 0) == 0) p.erase(0, std::string(prefix).size());
  if (const std::size_t at = p.find("-MIG-"); at != std::string::npos) p.resize(at);
  if (p.size() > 7 && p.compare(p.size() - 7, 7, "-SHARED") == 0) p.resize(p.size() - 7);
  return p;
}

Result<Manifests> BuildManifests(const ManifestInputs& in) {
  manifests::Builder b(in);
  const manifests::SharingBackend* backend = nullptr;
  if (in.colocation != nullptr) {
    const std::string name = !in.sharing.empty() ? in.sharing : in.colocation->mig ? "mig" : "time-slicing";
    const Result<const manifests::SharingBackend*> found = manifests::FindSharingBackend(name);
    if (!found) return found.error();
    backend = *found;
    if (backend->caps_memory && in.colocation->memory_cap_mib.empty())
      return FailedPrecondition("--sharing {}: the plan has no memory caps (make it with --sharing {})", name, name);
    if (name == "mig" && !in.colocation->mig)
      return FailedPrecondition("--sharing mig: the plan has no MIG layout (make it with --sharing mig)");
    if (Result<void> ok = backend->emit(b); !ok) return ok.error();
    manifests::EmitWholeGpus(b, name);
    manifests::EmitEngineSettings(b, name);
    const Plan& p = *in.colocation;
    if (p.fleet.Recommended(p.totals.usd_per_month_after)) {
      std::vector<std::string> models;
      for (const auto& [model, n] : p.fleet.GpusByModel()) models.push_back(fmt::format("{} x {}", n, model));
      b.Note(fmt::format(
          "these files carry out the same-model plan on {} ({} GPUs, {:.0f} USD per month), not the recommended "
          "mixed fleet ({}; {:.0f} USD per month; each pod's model in plan.json fleet.pods), which needs nodes of "
          "those models and is not emitted",
          p.target.id, p.totals.gpus_after, p.totals.usd_per_month_after, manifests::Join(models),
          p.fleet.usd_per_month));
    }
  }
  if (in.training != nullptr) manifests::EmitTraining(b);
  if (in.lending != nullptr) manifests::EmitLending(b);
  Manifests m = b.Finish();
  if (backend != nullptr && backend->caps_memory && in.pods != nullptr) {
    // What runs must enforce what the plan assumed: read the caps back as the system will.
    const Result<manifests::CapCheck> check = manifests::CheckMemoryCaps(*in.colocation, *backend, *in.pods, m.files);
    if (!check) return Internal("emitted caps do not hold the plan: {}", check.error().message);
    m.notes.push_back(fmt::format(
        "{}: {} pods run under their planned memory cap on {} planned GPUs; the largest sum of caps on one GPU is "
        "{:.0f} of {:.0f} MiB{}",
        backend->name, check->capped_pods, check->gpus, check->largest_sum_mib, in.colocation->capacity_mib,
        check->uncapped_pods == 0
            ? std::string()
            : fmt::format("; {} pods on shared GPUs have no patch (see the notes above): nothing caps them",
                          check->uncapped_pods)));
  }
  return m;
}

std::string ManifestsReadme(const Manifests& m, const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string md =
      "# Manifests from gpufit plan\n\n"
      "One object per file. Review, then apply:\n\n"
      "- `workload-*.yaml`: strategic-merge patches of the pod template. Apply each with the command in the table "
      "(`kubectl patch ... --patch-file FILE`), or list them under `patches:` in the kustomization that owns the "
      "workload. A null value (`~`) deletes that key (it removes `nvidia.com/gpu` where a MIG resource replaces it).\n"
      "- `node-*.yaml`: label patches; the GPU Operator reconfigures a node when its label changes "
      "(MIG: the node's GPUs must be idle; the MIG manager drains and may reboot).\n"
      "- `configmap-*.yaml`: full objects for `kubectl apply -f`.\n"
      "- `clusterpolicy-cluster-policy.yaml`: a merge patch of the GPU Operator's ClusterPolicy that points it at "
      "the ConfigMap.\n"
      "- `resourceclaim-*.yaml`: full objects (DRA, resource.k8s.io/v1): one GPU shared through MPS by the workloads "
      "that name it.\n"
      "- `priorityclass-*.yaml`, `kueue-*.yaml`: full objects for night lending; the ClusterQueue's row says when to "
      "open and drain it.\n\n"
      "Order: ConfigMaps, ClusterPolicy, ResourceClaims, node labels, then workloads.\n\n"
      "| file | changes | why | apply |\n|---|---|---|---|\n";
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
    return out;
  };
  for (const ManifestFile& f : m.files) {
    std::string apply = f.apply;
    apply.replace(apply.find("FILE"), 4, f.name);
    md += fmt::format("| `{}` | {} | {} | `{}` |\n", f.name, cell(f.what), cell(f.why), apply);
  }
  for (const auto& [name, what] : extra)
    md += fmt::format("| `{}` | {} | see the plan | `kubectl apply -f {}` |\n", name, cell(what), name);
  if (!m.notes.empty()) {
    md += "\n## Notes\n\n";
    for (const std::string& n : m.notes) md += "- " + n + "\n";
  }
  return md;
}

}  // namespace gpufit

#include "inference_command.h"

#include <filesystem>

#include "cli_common.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/plan/inference_plan.h"

namespace gpufit::cli {

Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, const GpuCatalog& catalog) {
  Result<std::vector<InferenceServiceSpec>> specs = ReadInferenceServices(services_path);
  if (!specs) return specs.error();
  std::vector<InferenceStudy> studies;
  for (const InferenceServiceSpec& spec : *specs) {
    Result<PreparedService> service = PrepareService(spec, catalog);
    if (!service) return service.error();
    studies.push_back(RunInferenceStudy(*std::move(service)));
  }
  InferenceSectionOutput out{
      .json = InferencePlanToJson(studies), .markdown = InferencePlanToMarkdown(studies), .manifests = {}};
  for (const InferenceStudy& s : studies)
    for (auto& file : InferenceManifests(s)) out.manifests.push_back(std::move(file));
  return out;
}

Result<void> WriteManifestFiles(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument("{}: cannot create the folder: {}", dir, ec.message());
  std::vector<std::pair<std::filesystem::path, std::string>> paths;
  for (const auto& [name, text] : files) paths.emplace_back(std::filesystem::path(dir) / name, text);
  return WriteFilesAtomically(paths);
}

void AddInferenceCommand(CLI::App& app, int& rc) {
  struct Flags {
    std::string services, manifests, catalog;
    Output output;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("inference",
                         "replica schedules for inference services: static peak, HPA-like, gpufit and a clairvoyant "
                         "reference, replayed on each service's requests");
  cmd->add_option("--services", flags->services, "inference services YAML (see docs/inference.md)")->required();
  cmd->add_option("--manifests", flags->manifests, "folder for each service's HPA and KEDA ScaledObject YAML");
  cmd->add_option("--catalog", flags->catalog, "GPU catalog YAML (default: the embedded data/gpu_catalog.yaml)");
  AddOutputOptions(cmd, flags->output);
  cmd->callback([flags, &rc] {
    const Result<GpuCatalog> catalog =
        flags->catalog.empty() ? Result<GpuCatalog>(GpuCatalog::Embedded()) : GpuCatalog::Load(flags->catalog);
    if (!catalog) {
      rc = Fail(catalog.error());
      return;
    }
    const Result<InferenceSectionOutput> section = InferenceSection(flags->services, *catalog);
    if (!section) {
      rc = Fail(section.error());
      return;
    }
    if (!flags->manifests.empty())
      if (Result<void> ok = WriteManifestFiles(flags->manifests, section->manifests); !ok) {
        rc = Fail(ok.error());
        return;
      }
    rc = Emit(flags->output, "inference", section->json, section->markdown);
  });
}

}  // namespace gpufit::cli

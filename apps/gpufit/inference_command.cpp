#include "inference_command.h"

#include <filesystem>

#include "cli_common.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/plan/inference_plan.h"

namespace gpufit::cli {

Result<std::pair<std::string, std::string>> InferenceSection(const std::string& services_path,
                                                             const std::string& manifests_dir,
                                                             const GpuCatalog& catalog) {
  Result<std::vector<InferenceServiceSpec>> specs = ReadInferenceServices(services_path);
  if (!specs) return specs.error();
  std::vector<InferenceStudy> studies;
  for (const InferenceServiceSpec& spec : *specs) {
    Result<PreparedService> service = PrepareService(spec, catalog);
    if (!service) return service.error();
    studies.push_back(RunInferenceStudy(*std::move(service)));
  }
  if (!manifests_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(manifests_dir, ec);
    if (ec) return InvalidArgument("{}: cannot create the folder: {}", manifests_dir, ec.message());
    std::vector<std::pair<std::filesystem::path, std::string>> files;
    for (const InferenceStudy& s : studies) {
      for (auto& [name, yaml] : InferenceManifests(s))
        files.emplace_back(std::filesystem::path(manifests_dir) / name, yaml);
    }
    if (Result<void> ok = WriteFilesAtomically(files); !ok) return ok.error();
  }
  return std::make_pair(InferencePlanToJson(studies), InferencePlanToMarkdown(studies));
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
    Result<std::pair<std::string, std::string>> section = InferenceSection(flags->services, flags->manifests, *catalog);
    rc = section ? Emit(flags->output, "inference", section->first, section->second) : Fail(section.error());
  });
}

}  // namespace gpufit::cli

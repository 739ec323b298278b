// The manifest validator on objects gpufit is about to emit (Kubernetes 1.34 DRA with the
// NVIDIA DRA driver's GpuConfig, HAMi resources, KAI-Scheduler annotations) and on broken
// copies of them: each broken copy is refused, naming the file and the JSON path.
#include "manifest_validator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace gpufit::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// MPS sharing through DRA: a ResourceClaimTemplate (resource.k8s.io/v1) whose opaque
// parameters are the NVIDIA DRA driver's GpuConfig (k8s-dra-driver-gpu
// api/nvidia.com/resource/v1beta1).
constexpr const char* kClaimTemplate = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: "mps-gpu", namespace: "llm"}
spec:
  spec:
    devices:
      requests:
        - name: "gpu"
          exactly: {deviceClassName: "gpu.nvidia.com"}
      config:
        - requests: ["gpu"]
          opaque:
            driver: "gpu.nvidia.com"
            parameters:
              apiVersion: "resource.nvidia.com/v1beta1"
              kind: "GpuConfig"
              sharing:
                strategy: "MPS"
                mpsConfig: {defaultActiveThreadPercentage: 50, defaultPinnedDeviceMemoryLimit: "10Gi"}
)";

// HAMi's memory and core resources and KAI-Scheduler's GPU memory annotation.
constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata:
  name: "chat-0"
  namespace: "llm"
  annotations: {gpu-memory: "2000"}
spec:
  schedulerName: "kai-scheduler"
  containers:
    - name: "chat"
      image: "registry.example/chat:1"
      resources:
        limits: {nvidia.com/gpu: "1", nvidia.com/gpumem: "3000", nvidia.com/gpucores: "30"}
)";

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

fs::path Folder(const std::string& name, const std::string& claim, const std::string& pod) {
  const fs::path d = fs::temp_directory_path() / ("gpufit-validator-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  std::ofstream(d / "claim.yaml") << claim;
  std::ofstream(d / "pod.yaml") << pod;
  return d;
}

TEST(ValidateManifests, AcceptsDraMpsClaimAndHamiPod) {
  const fs::path d = Folder("valid", kClaimTemplate, kPod);
  const ManifestValidation v = ValidateManifests({d});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.output, ValidatedLine(2));
  fs::remove_all(d);
}

TEST(ValidateManifests, RefusesEachBrokenObjectNamingFileAndPath) {
  const std::string params = "/spec/spec/devices/config/0/opaque/parameters/sharing";
  const struct {
    const char* name;
    std::string claim, pod;
    const char* file;
    std::string path, message;
  } cases[] = {
      {"thread percentage above 100 (validate.go)",
       Replaced(kClaimTemplate, "defaultActiveThreadPercentage: 50", "defaultActiveThreadPercentage: 150"), kPod,
       "claim.yaml", params + "/mpsConfig/defaultActiveThreadPercentage", "must be <= 100"},
      {"sharing strategy not an enum value", Replaced(kClaimTemplate, "\"MPS\"", "\"Mps\""), kPod, "claim.yaml",
       params + "/strategy", "must be equal to one of the allowed values"},
      {"unknown GpuConfig field", Replaced(kClaimTemplate, "mpsConfig:", "mpsConf:"), kPod, "claim.yaml",
       params + "/mpsConf", "unknown field \"mpsConf\""},
      {"string where DRA wants an integer",
       Replaced(kClaimTemplate, "deviceClassName: \"gpu.nvidia.com\"}",
                "deviceClassName: \"gpu.nvidia.com\", count: \"2\"}"),
       kPod, "claim.yaml", "/spec/spec/devices/requests/0/exactly/count", "must be integer"},
      {"unknown Pod field", kClaimTemplate, Replaced(kPod, "resources:", "resource:"), "pod.yaml",
       "/spec/containers/0/resource", "unknown field \"resource\""},
      {"malformed HAMi quantity", kClaimTemplate, Replaced(kPod, "\"3000\"", "\"3 GB\""), "pod.yaml",
       "/spec/containers/0/resources/limits/nvidia.com~1gpumem", "must match format \"quantity\""},
      {"YAML 1.1 reads an unquoted on as a boolean, as kubectl does", kClaimTemplate,
       Replaced(kPod, "gpu-memory: \"2000\"", "gpu-memory: on"), "pod.yaml", "/metadata/annotations/gpu-memory",
       "must be string"},
      {"unknown kind", kClaimTemplate, Replaced(kPod, "kind: Pod", "kind: Podd"), "pod.yaml", "/",
       "unknown apiVersion/kind v1/Podd"},
      {"full object without a name", kClaimTemplate, Replaced(kPod, "name: \"chat-0\"", "generateName: \"chat-\""),
       "pod.yaml", "/metadata/name", "a full object needs a name"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path d = Folder("broken", c.claim, c.pod);
    const ManifestValidation v = ValidateManifests({d});
    EXPECT_EQ(v.exit_code, 1) << v.output;
    EXPECT_THAT(v.output, HasSubstr((d / c.file).string() + ": " + c.path + ": " + c.message));
    fs::remove_all(d);
  }
}

// A patch leaves out what the object needs (a Pod's containers) and may delete keys with
// null; only the README's `kubectl patch` makes the file a patch.
TEST(ValidateManifests, PatchesMayOmitRequiredFieldsOnlyWhenTheReadmeSaysSo) {
  const std::string patch =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: \"chat-0\"}\nspec:\n  nodeSelector: {a: \"b\", c: ~}\n";
  const fs::path d = Folder("patch", kClaimTemplate, patch);
  const ManifestValidation full = ValidateManifests({d});
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_THAT(full.output, HasSubstr("pod.yaml: /spec: must have required property containers"));
  std::ofstream(d / "README.md") << "| file | changes | why | apply |\n|---|---|---|---|\n"
                                 << "| `pod.yaml` | x | y | `kubectl patch pod chat-0 --patch-file pod.yaml` |\n";
  const ManifestValidation as_patch = ValidateManifests({d});
  EXPECT_EQ(as_patch.exit_code, 0) << as_patch.output;
  EXPECT_EQ(as_patch.output, ValidatedLine(2));
  // A patch still has types: a number where the selector wants a string is refused.
  std::ofstream(d / "pod.yaml") << Replaced(patch, "\"b\"", "7");
  const ManifestValidation typed = ValidateManifests({d});
  EXPECT_EQ(typed.exit_code, 1);
  EXPECT_THAT(typed.output, HasSubstr("pod.yaml: /spec/nodeSelector/a: must be string"));
  fs::remove_all(d);
}

}  // namespace
}  // namespace gpufit::testing

// Issue 39: every object gpufit emits, of every back end, applied by a real kube-apiserver
// (v1.37.2, tests/support/kube_control_plane.h) with dryRun=All, the way the folder's README
// tells a user to (tests/support/kube_dry_run.h): full objects by server-side apply, patches
// merged into the live objects they patch (a Deployment, a StatefulSet, nodes, the GPU
// Operator's ClusterPolicy), a Job's patch into its next submission. The CRDs of KEDA, Kueue and
// the GPU Operator are installed from their own releases. The schema check
// (tools/validate-manifests) runs too: the server adds defaulting, immutable fields, admission and
// how patches merge.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli_run.h"
#include "gpufit/apply/change_set.h"
#include "dcgm_fixture.h"
#include "kube_control_plane.h"
#include "kube_dry_run.h"
#include "kube_fixture.h"
#include "manifest_validator.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;
using gpufit::testing::DryRunManifests;
using gpufit::testing::KubeControlPlane;
using gpufit::testing::ServerDryRun;
using ::testing::HasSubstr;

// The fixture's GPU container (the dcgm fixture's pods genai/sd-<i>) and a sidecar.
nlohmann::json GpuContainer() {
  return {{"name", "sd"},
          {"image", "registry.example/sd:1"},
          {"resources",
           {{"requests", {{"cpu", "4"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}},
            {"limits", {{"nvidia.com/gpu", "1"}}}}}};
}
nlohmann::json Sidecar() {
  return {{"name", "istio-proxy"},
          {"image", "istio/proxyv2:1.22"},
          {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}};
}

// kubectl get pods -A -o json: genai/sd-0..9 of the Deployment sd-web (through its ReplicaSet),
// sd-10..19 of the StatefulSet sd-batch, sd-20..24 of the Job sd-eval, sd-25..29 each of a
// Deployment sd-solo-<i> of one replica (one pod template can name one shared DRA claim only
// when all its replicas share a GPU); train/llm-finetune-0 of the Job llm-finetune
// (examples/training-jobs.yaml), 8 GPUs.
std::string PodsJson() {
  nlohmann::json items = nlohmann::json::array();
  auto pod = [&](const std::string& ns, const std::string& name, nlohmann::json owner, nlohmann::json containers,
                 const std::string& node, nlohmann::json labels) {
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata",
                      {{"name", name},
                       {"namespace", ns},
                       {"uid", "uid-" + name},
                       {"labels", labels},
                       {"ownerReferences", {owner}}}},
                     {"spec", {{"nodeName", node}, {"containers", containers}}},
                     {"status", {{"phase", "Running"}}}});
  };
  for (int i = 0; i < 30; ++i) {
    nlohmann::json owner = {{"apiVersion", "apps/v1"}, {"controller", true}, {"uid", fmt::format("o{}", i / 10)}};
    nlohmann::json containers = {GpuContainer()};
    nlohmann::json labels = {{"app", "sd"}};
    if (i < 10) {
      owner["kind"] = "ReplicaSet";
      owner["name"] = "sd-web-6c9f";
      labels["pod-template-hash"] = "6c9f";
      containers.push_back(Sidecar());
    } else if (i < 20) {
      owner["kind"] = "StatefulSet";
      owner["name"] = "sd-batch";
    } else if (i < 25) {
      owner["apiVersion"] = "batch/v1";
      owner["kind"] = "Job";
      owner["name"] = "sd-eval";
    } else {
      owner["kind"] = "ReplicaSet";
      owner["name"] = fmt::format("sd-solo-{}-5d8b", i);
      labels["pod-template-hash"] = "5d8b";
    }
    pod("genai", fmt::format("sd-{}", i), owner, containers, fmt::format("gpu-node-{}", i / 4), labels);
  }
  nlohmann::json trainer = {{"name", "trainer"},
                            {"image", "registry.example/train:1"},
                            {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}};
  pod("train", "llm-finetune-0",
      {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"name", "llm-finetune"}, {"controller", true}, {"uid", "t0"}},
      {trainer}, "gpu-node-7", {{"app", "train"}});
  return nlohmann::json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}).dump(1);
}

// The workloads the pods belong to, as a user would have created them: what the patches patch.
nlohmann::json Workloads() {
  const nlohmann::json labels = {{"app", "sd"}};
  auto tpl = [&](nlohmann::json containers, const char* restart) {
    nlohmann::json spec = {{"containers", containers}};
    if (restart != nullptr) spec["restartPolicy"] = restart;
    return nlohmann::json{{"metadata", {{"labels", labels}}}, {"spec", spec}};
  };
  nlohmann::json items = nlohmann::json::array();
  items.push_back({{"apiVersion", "apps/v1"},
                   {"kind", "Deployment"},
                   {"metadata", {{"name", "sd-web"}, {"namespace", "genai"}}},
                   {"spec",
                    {{"replicas", 10},
                     {"selector", {{"matchLabels", labels}}},
                     {"template", tpl({GpuContainer(), Sidecar()}, nullptr)}}}});
  items.push_back(
      {{"apiVersion", "apps/v1"},
       {"kind", "StatefulSet"},
       {"metadata", {{"name", "sd-batch"}, {"namespace", "genai"}}},
       {"spec",
        {{"replicas", 10}, {"selector", {{"matchLabels", labels}}}, {"template", tpl({GpuContainer()}, nullptr)}}}});
  items.push_back({{"apiVersion", "batch/v1"},
                   {"kind", "Job"},
                   {"metadata", {{"name", "sd-eval"}, {"namespace", "genai"}}},
                   {"spec", {{"parallelism", 5}, {"template", tpl({GpuContainer()}, "Never")}}}});
  for (int i = 25; i < 30; ++i)
    items.push_back(
        {{"apiVersion", "apps/v1"},
         {"kind", "Deployment"},
         {"metadata", {{"name", fmt::format("sd-solo-{}", i)}, {"namespace", "genai"}}},
         {"spec",
          {{"replicas", 1}, {"selector", {{"matchLabels", labels}}}, {"template", tpl({GpuContainer()}, nullptr)}}}});
  nlohmann::json trainer = {{"name", "trainer"},
                            {"image", "registry.example/train:1"},
                            {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}};
  items.push_back({{"apiVersion", "batch/v1"},
                   {"kind", "Job"},
                   {"metadata", {{"name", "llm-finetune"}, {"namespace", "train"}}},
                   {"spec", {{"template", tpl({trainer}, "Never")}}}});
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// `j` without its null values (the operator's sample leaves some keys empty, which its own CRD's
// schema refuses).
nlohmann::json WithoutNulls(const nlohmann::json& j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items())
      if (!v.is_null()) out[k] = WithoutNulls(v);
    return out;
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(WithoutNulls(v));
    return out;
  }
  return j;
}

class KubeApply : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(Scratch("kube-apply"));
    auto plane = KubeControlPlane::Start((*dir_ / "plane").string());
    if (!plane) {
      start_error_ = new std::string(plane.error().message);
      return;
    }
    plane_ = plane->release();
    std::string error;
    auto ok = [&](const gpufit::Result<std::string>& r) {
      if (!r && error.empty()) error = r.error().message;
    };
    ok(plane_->KubectlOk({"apply", "--server-side", "-f", plane_->bin() + "/crds"}));
    // kubectl wait fails at once on a CRD the server has not given conditions yet ("accessor
    // error: <nil>"): asked again until every CRD has them.
    gpufit::Result<std::string> established = std::string();
    for (int attempt = 0; attempt < 50; ++attempt) {
      established = plane_->KubectlOk({"wait", "--for", "condition=established", "--timeout", "60s", "crd", "--all"});
      if (established || established.error().message.find("accessor error") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ok(established);
    ok(plane_->KubectlOk({"create", "namespace", "genai"}));
    ok(plane_->KubectlOk({"create", "namespace", "train"}));
    ok(plane_->KubectlOk({"create", "namespace", "gpu-operator"}));
    // The GPU Operator's sample ClusterPolicy (config/samples of its module; read by kubectl, so
    // its YAML keeps its types), named as the operator's Helm chart names the one it installs:
    // `cluster-policy`, which gpufit's ClusterPolicy patch targets.
    auto sample = plane_->KubectlOk(
        {"create", "--dry-run=client", "-o", "json", "-f", plane_->bin() + "/samples/clusterpolicy.yaml"});
    ok(sample);
    if (sample) {
      nlohmann::json policy = WithoutNulls(nlohmann::json::parse(*sample));
      policy["metadata"]["name"] = "cluster-policy";
      ok(plane_->KubectlOk({"create", "-f", "-"}, policy.dump()));
    }
    ok(plane_->KubectlOk({"create", "-f", "-"}, gpufit::testing::H200NodeList().dump()));
    ok(plane_->KubectlOk({"create", "-f", "-"}, Workloads().dump()));
    if (!error.empty()) {
      start_error_ = new std::string(error);
      return;
    }
    auto fixture = gpufit::testing::MakeDcgmFixture(GenTd26(), 30, 6);
    if (fixture) std::ofstream(*dir_ / "fixture.csv") << fixture->long_csv;
    std::ofstream(*dir_ / "pods.json") << PodsJson();
    std::ofstream(*dir_ / "nodes.json") << gpufit::testing::H200NodeList().dump(1);
  }
  static void TearDownTestSuite() {
    delete plane_;
    delete start_error_;
    if (dir_ != nullptr && !HasFailure()) fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_EQ(start_error_, nullptr) << *start_error_;
    ASSERT_NE(plane_, nullptr);
  }

  // Schema check and server-side dry run of `out`, each object once.
  static void ExpectApplied(const fs::path& out) {
    ASSERT_TRUE(fs::exists(out)) << out;
    const std::size_t files = gpufit::testing::YamlFiles(out);
    EXPECT_GT(files, 0u);
    const gpufit::testing::ManifestValidation v = gpufit::testing::ValidateManifests({out});
    EXPECT_EQ(v.exit_code, 0) << v.output;
    const ServerDryRun r = DryRunManifests(*plane_, out);
    EXPECT_EQ(r.objects, files);
    EXPECT_THAT(r.errors, ::testing::IsEmpty()) << Slurp(out / "README.md");
    for (const std::string& w : r.warnings) std::cout << "server warning: " << w << "\n";
  }
  // gpufit apply reads the folder as its own (issue 51's allow-list: every file, kind, name and
  // JSON path an emitter writes is one apply accepts), with the plan it came from.
  static void ExpectApplyReads(const fs::path& out, const std::string& plan_json) {
    const nlohmann::json plan = nlohmann::json::parse(plan_json, nullptr, false);
    gpufit::Result<std::vector<gpufit::apply::Change>> changes =
        gpufit::apply::ReadChanges(out, plan.is_discarded() ? nlohmann::json::object() : plan);
    ASSERT_TRUE(changes) << changes.error().message;
    EXPECT_EQ(changes->size(), gpufit::testing::YamlFiles(out));
  }
  static std::string Cluster() {
    return " --pods " + (*dir_ / "pods.json").string() + " --nodes " + (*dir_ / "nodes.json").string();
  }

  static fs::path* dir_;
  static KubeControlPlane* plane_;
  static std::string* start_error_;
};
fs::path* KubeApply::dir_ = nullptr;
KubeControlPlane* KubeApply::plane_ = nullptr;
std::string* KubeApply::start_error_ = nullptr;

TEST_F(KubeApply, EverySharingBackEndPassesServerSideDryRun) {
  if (!fs::exists(*dir_ / "fixture.csv")) GTEST_SKIP() << "no " << GenTd26();
  for (const std::string backend : {"time-slicing", "mig", "hami", "kai", "dra-mps"}) {
    SCOPED_TRACE(backend);
    const fs::path dir = Scratch("kube-apply-" + backend);
    const fs::path out = dir / "manifests";
    const CliRun r = Gpufit("plan --telemetry " + (*dir_ / "fixture.csv").string() +
                                " --gpu h200-141gb --search-budget 0 --format json --sharing " + backend + Cluster() +
                                " --emit-manifests " + out.string(),
                            dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ExpectApplied(out);
    ExpectApplyReads(out, r.out);
    // Each back end patched at least one workload: the server merged a real patch.
    bool patched = false;
    for (const auto& e : fs::directory_iterator(out))
      patched |= e.path().filename().string().rfind("workload-", 0) == 0;
    EXPECT_TRUE(patched) << Slurp(out / "README.md");
  }
}

TEST_F(KubeApply, NightLendingPriorityClassAndKueueObjects) {
  if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("kube-apply-lending");
  const CliRun r = Gpufit(
      "plan --telemetry " + GenTd26() + " --gpu a100-80gb --search-budget 0 --emit-manifests " + (dir / "k8s").string(),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "k8s" / "kueue-clusterqueue-gpufit-night.yaml"));
  ExpectApplied(dir / "k8s");
  ExpectApplyReads(dir / "k8s", "{}");
}

TEST_F(KubeApply, ServingAutoscalersHpaAndKeda) {
  const std::string trace = gpufit::test_paths::DataDir() + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  if (!fs::exists(trace)) GTEST_SKIP() << "no " << trace;
  const fs::path dir = Scratch("kube-apply-serving");
  std::ofstream(dir / "services.yaml") << "services:\n  - name: chat\n    namespace: llm\n    requests: {format: "
                                          "azure-llm, path: "
                                       << trace
                                       << "}\n    llm: {model: llama-2-13b, max_num_seqs: 8}\n"
                                          "    cold_start: {load_gb_per_s: 1, init_s: 30}\n"
                                          "    slo: {metric: ttft, seconds: 2}\n";
  const std::string services = " --services " + (dir / "services.yaml").string();
  ASSERT_EQ(Gpufit("inference" + services + " --format json --manifests " + (dir / "hpa").string(), dir).exit_code, 0);
  ASSERT_TRUE(fs::exists(dir / "hpa" / "chat-hpa.yaml"));
  ExpectApplied(dir / "hpa");
  ASSERT_EQ(Gpufit("inference" + services +
                       " --autoscaler keda --keda-prometheus http://prom.monitoring:9090 --format json --manifests " +
                       (dir / "keda").string(),
                   dir)
                .exit_code,
            0);
  ASSERT_TRUE(fs::exists(dir / "keda" / "chat-keda-scaledobject.yaml"));
  ExpectApplied(dir / "keda");
}

TEST_F(KubeApply, TrainingPatchGoesIntoTheJobsNextSubmission) {
  const fs::path dir = Scratch("kube-apply-training");
  const CliRun r = Gpufit("plan --training-jobs " + gpufit::test_paths::SourcePath("examples/training-jobs.yaml") +
                              Cluster() + " --emit-manifests " + (dir / "k8s").string(),
                          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "k8s" / "workload-train-job-llm-finetune.yaml")) << Slurp(dir / "k8s" / "README.md");
  ExpectApplied(dir / "k8s");
}

// The check is not vacuous: an unknown field and a change to an immutable field are refused by
// the server, and the error names the file and the object.
TEST_F(KubeApply, AMutatedObjectFailsNamingIt) {
  if (!fs::exists(*dir_ / "fixture.csv")) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("kube-apply-mutated");
  const fs::path out = dir / "manifests";
  ASSERT_EQ(
      Gpufit("plan --telemetry " + (*dir_ / "fixture.csv").string() +
                 " --gpu h200-141gb --search-budget 0 --sharing hami" + Cluster() + " --emit-manifests " + out.string(),
             dir)
          .exit_code,
      0);
  const fs::path deployment = out / "workload-genai-deployment-sd-web.yaml";
  ASSERT_TRUE(fs::exists(deployment));
  const std::string original = Slurp(deployment);
  ASSERT_THAT(DryRunManifests(*plane_, out).errors, ::testing::IsEmpty());

  // An unknown field in the pod template.
  std::ofstream(deployment) << original << "  minReadySecondz: 3\n";
  ServerDryRun r = DryRunManifests(*plane_, out);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0], HasSubstr("workload-genai-deployment-sd-web.yaml (Deployment genai/sd-web)"));
  EXPECT_THAT(r.errors[0], HasSubstr("minReadySecondz"));

  // A Deployment's selector is immutable (apps/v1).
  std::ofstream(deployment) << original << "  selector:\n    matchLabels:\n      app: other\n";
  r = DryRunManifests(*plane_, out);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0], HasSubstr("workload-genai-deployment-sd-web.yaml (Deployment genai/sd-web)"));
  EXPECT_THAT(r.errors[0], HasSubstr("field is immutable"));
}

}  // namespace

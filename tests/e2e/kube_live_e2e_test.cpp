// Issue 39, "the live cluster as input": `gpufit plan`, `replay` and `serve` with --kubeconfig
// read the nodes (with their DRA ResourceSlices) and pods from a real kube-apiserver
// (tests/support/kube_control_plane.h) and plan exactly as from `kubectl get ... -o json` files of
// the same objects. Authentication by client certificate (the control plane's kubeconfig), by
// bearer token with a CA file named relative to the kubeconfig, and by an exec credential plugin;
// a CA that did not sign the server's certificate is an error naming the server.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "cli_run.h"
#include "dcgm_fixture.h"
#include "kube_control_plane.h"
#include "kube_fixture.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;
using gpufit::testing::KubeControlPlane;
using ::testing::HasSubstr;
using Json = nlohmann::json;

Json GpuContainer() {
  return {{"name", "sd"},
          {"image", "registry.example/sd:1"},
          {"resources",
           {{"requests", {{"cpu", "4"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}},
            {"limits", {{"nvidia.com/gpu", "1"}}}}}};
}

// The dcgm fixture's pods genai/sd-0..29 (a Deployment's ReplicaSet, a StatefulSet, a Job) on
// gpu-node-<i/4>, and the training Job pod train/llm-finetune-0 of 8 GPUs, as created by a user:
// no status (the server sets it).
Json Pods() {
  Json items = Json::array();
  for (int i = 0; i < 30; ++i) {
    Json owner = {{"apiVersion", "apps/v1"}, {"controller", true}, {"uid", fmt::format("o{}", i / 10)}};
    if (i < 10) {
      owner["kind"] = "ReplicaSet";
      owner["name"] = "sd-web-6c9f";
    } else if (i < 20) {
      owner["kind"] = "StatefulSet";
      owner["name"] = "sd-batch";
    } else {
      owner["apiVersion"] = "batch/v1";
      owner["kind"] = "Job";
      owner["name"] = "sd-eval";
    }
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata",
                      {{"name", fmt::format("sd-{}", i)},
                       {"namespace", "genai"},
                       {"labels", {{"app", "sd"}}},
                       {"ownerReferences", {owner}}}},
                     {"spec", {{"nodeName", fmt::format("gpu-node-{}", i / 4)}, {"containers", {GpuContainer()}}}}});
  }
  items.push_back({{"apiVersion", "v1"},
                   {"kind", "Pod"},
                   {"metadata",
                    {{"name", "llm-finetune-0"},
                     {"namespace", "train"},
                     {"labels", {{"app", "train"}}},
                     {"ownerReferences",
                      {{{"apiVersion", "batch/v1"},
                        {"kind", "Job"},
                        {"name", "llm-finetune"},
                        {"controller", true},
                        {"uid", "t0"}}}}}},
                   {"spec",
                    {{"nodeName", "gpu-node-7"},
                     {"containers",
                      {{{"name", "trainer"},
                        {"image", "registry.example/train:1"},
                        {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}});
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

// One ResourceSlice of NVIDIA's DRA driver: the two GPUs of gpu-node-7.
Json Slice() {
  Json devices = Json::array();
  for (int g = 0; g < 2; ++g)
    devices.push_back({{"name", fmt::format("gpu-{}", g)},
                       {"attributes", {{"type", {{"string", "gpu"}}}, {"productName", {{"string", "NVIDIA H200"}}}}}});
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", "gpu-node-7-gpu.nvidia.com"}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"nodeName", "gpu-node-7"},
            {"pool", {{"name", "gpu-node-7"}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

// A kubeconfig of one cluster (the control plane's server), `cluster` and `user` bodies in YAML flow style.
std::string Kubeconfig(const std::string& server, const std::string& cluster, const std::string& user) {
  return fmt::format(
      "apiVersion: v1\nkind: Config\ncurrent-context: live\nclusters:\n- name: plane\n  cluster: {{server: {}, {}}}\n"
      "contexts:\n- name: live\n  context: {{cluster: plane, user: u}}\nusers:\n- name: u\n  user: {}\n",
      server, cluster, user);
}

class KubeLive : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(Scratch("kube-live"));
    auto plane = KubeControlPlane::Start((*dir_ / "plane").string());
    if (!plane) {
      error_ = new std::string(plane.error().message);
      return;
    }
    plane_ = plane->release();
    std::string error;
    auto ok = [&](const gpufit::Result<std::string>& r) {
      if (!r && error.empty()) error = r.error().message;
      return r ? *r : std::string();
    };
    ok(plane_->KubectlOk({"create", "namespace", "genai"}));
    ok(plane_->KubectlOk({"create", "namespace", "train"}));
    ok(plane_->KubectlOk({"create", "-f", "-"}, gpufit::testing::H200NodeList().dump()));
    ok(plane_->KubectlOk({"create", "-f", "-"}, Slice().dump()));
    ok(plane_->KubectlOk({"create", "-f", "-"}, Pods().dump()));
    // The server makes new pods Pending; with no kubelet, their status says Running as a
    // kubelet's would.
    const std::string created = ok(plane_->KubectlOk({"get", "pods", "-A", "-o", "json"}));
    if (error.empty()) {
      Json pods = Json::parse(created);
      for (Json& p : pods["items"]) p["status"]["phase"] = "Running";
      ok(plane_->KubectlOk({"replace", "--subresource=status", "-f", "-"}, pods.dump()));
    }
    // The files of the same objects, as a user would write them.
    std::ofstream(*dir_ / "nodes.json") << ok(plane_->KubectlOk({"get", "nodes,resourceslices", "-o", "json"}));
    std::ofstream(*dir_ / "pods.json") << ok(plane_->KubectlOk({"get", "pods", "-A", "-o", "json"}));
    if (!error.empty()) {
      error_ = new std::string(error);
      return;
    }
    auto fixture = gpufit::testing::MakeDcgmFixture(GenTd26(), 30, 6);
    if (fixture) std::ofstream(*dir_ / "fixture.csv") << fixture->long_csv;
  }
  static void TearDownTestSuite() {
    delete plane_;
    delete error_;
    if (dir_ != nullptr && !HasFailure()) fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_EQ(error_, nullptr) << *error_;
    ASSERT_NE(plane_, nullptr);
  }

  // plan --format json on the fixture's telemetry with `cluster` (the flags naming the nodes and pods).
  static CliRun Plan(const std::string& cluster, const fs::path& dir) {
    return Gpufit("plan --telemetry " + (*dir_ / "fixture.csv").string() +
                      " --gpu h200-141gb --search-budget 0 --format json " + cluster,
                  dir);
  }
  static std::string Files() {
    return "--nodes " + (*dir_ / "nodes.json").string() + " --pods " + (*dir_ / "pods.json").string();
  }
  // GTEST_SKIP in a helper returns from the helper only: the test checks this and skips itself.
  static bool HasData() { return fs::exists(*dir_ / "fixture.csv"); }

  static fs::path* dir_;
  static KubeControlPlane* plane_;
  static std::string* error_;
};
fs::path* KubeLive::dir_ = nullptr;
KubeControlPlane* KubeLive::plane_ = nullptr;
std::string* KubeLive::error_ = nullptr;

// `plan` without the strings that name where its inputs came from ("--pods FILE" and "the pods of
// https://..." are the same pods) and without the training jobs' runtime so far (the wall clock
// at each run less the pods' creation).
Json WithoutSources(Json j, const std::vector<std::string>& names) {
  if (j.is_object()) {
    j.erase("runtime_so_far_h");
    for (auto& [k, v] : j.items()) v = WithoutSources(v, names);
  } else if (j.is_array()) {
    for (Json& v : j) v = WithoutSources(v, names);
  } else if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (const std::string& n : names)
      for (std::size_t at = s.find(n); at != std::string::npos; at = s.find(n)) s.replace(at, n.size(), "<cluster>");
    // work_h's source quotes the runtime so far, which grows between the two runs on a loaded machine.
    static const std::regex kRuntime(R"(runtime so far \([0-9.]+ h)");
    return std::regex_replace(s, kRuntime, "runtime so far (<h> h");
  }
  return j;
}

TEST_F(KubeLive, PlanFromTheApiServerEqualsThePlanFromKubectlFiles) {
  if (!HasData()) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("kube-live-plan");
  const CliRun files = Plan(Files(), dir);
  ASSERT_EQ(files.exit_code, 0) << files.err;
  const CliRun live = Plan("--kubeconfig " + plane_->kubeconfig(), dir);
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_THAT(live.err, HasSubstr(fmt::format("gpufit: read 8 nodes (1 ResourceSlices) and 31 pods from {} (context "
                                              "gpufit-test)",
                                              plane_->server())));
  const std::string source = plane_->server() + " (context gpufit-test)";
  const std::vector<std::string> names = {"--nodes " + (*dir_ / "nodes.json").string(),
                                          "--pods " + (*dir_ / "pods.json").string(), "the nodes of " + source,
                                          "the pods of " + source};
  const Json a = WithoutSources(Json::parse(files.out), names);
  const Json b = WithoutSources(Json::parse(live.out), names);
  EXPECT_EQ(a, b) << "diff: " << Json::diff(a, b).dump(1);
  // The plan used what only the live lists carry: the training pod, the DRA slice.
  EXPECT_THAT(live.out, HasSubstr("llm-finetune"));
}

TEST_F(KubeLive, BearerTokenAndCaFileRelativeToTheKubeconfig) {
  if (!HasData()) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("kube-live-token");
  fs::create_directories(dir / "kube");
  fs::copy_file(plane_->ca_file(), dir / "kube" / "ca.crt");
  std::ofstream(dir / "kube" / "config") << Kubeconfig(plane_->server(), "certificate-authority: ca.crt",
                                                       "{token: " + plane_->token() + "}");
  const CliRun r = Plan("--kubeconfig " + (dir / "kube" / "config").string() + " --context live", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("and 31 pods from " + plane_->server() + " (context live)"));
  // A wrong token: the server's 401 with the path.
  std::ofstream(dir / "kube" / "config") << Kubeconfig(plane_->server(), "certificate-authority: ca.crt",
                                                       "{token: not-the-token}");
  const CliRun bad = Plan("--kubeconfig " + (dir / "kube" / "config").string(), dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr(plane_->server() + "/api/v1/nodes?limit=500: the API server answered 401"));
}

TEST_F(KubeLive, ExecPluginThatPrintsTheToken) {
  if (!HasData()) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("kube-live-exec");
  const fs::path plugin = dir / "token-plugin.sh";
  std::ofstream(plugin)
      << "#!/bin/sh\n[ -n \"$KUBERNETES_EXEC_INFO\" ] || exit 9\necho "
         "'{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":"
         "{\"token\":\""
      << plane_->token() << "\"}}'\n";
  ::chmod(plugin.c_str(), 0755);
  std::ofstream(dir / "config") << Kubeconfig(
      plane_->server(), "certificate-authority: " + plane_->ca_file(),
      "{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./token-plugin.sh, interactiveMode: Never}}");
  const CliRun r = Plan("--kubeconfig " + (dir / "config").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("and 31 pods from " + plane_->server()));
}

TEST_F(KubeLive, ACaThatDidNotSignTheServerIsAnErrorNamingTheServer) {
  const fs::path dir = Scratch("kube-live-wrong-ca");
  const auto made = gpufit::testing::RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj",
                                                 "/CN=not-the-cluster-ca", "-days", "1", "-keyout",
                                                 (dir / "ca.key").string(), "-out", (dir / "ca.crt").string()});
  ASSERT_EQ(made.rc, 0) << made.err;
  std::ofstream(dir / "config") << Kubeconfig(plane_->server(), "certificate-authority: ca.crt",
                                              "{token: " + plane_->token() + "}");
  const CliRun r = Gpufit("plan --kubeconfig " + (dir / "config").string() + " --training-jobs x.yaml", dir);
  EXPECT_EQ(r.exit_code, 2);
  // The error names the kubeconfig the cluster came from, then the request that failed.
  EXPECT_THAT(r.err, HasSubstr("gpufit: error: the cluster of " + (dir / "config").string() + ": " + plane_->server() +
                               "/api/v1/nodes?limit=500: TLS handshake failed"));
  EXPECT_THAT(r.err, HasSubstr("certificate-authority of " + (dir / "config").string()));
}

// tls-server-name: the name the server's certificate is checked against (and sent as SNI) in
// place of the server's host; the server's certificate names kubernetes.default.svc, not
// other.example.
TEST_F(KubeLive, TlsServerNameIsTheNameChecked) {
  const fs::path dir = Scratch("kube-live-sni");
  const std::string cluster = "certificate-authority: " + plane_->ca_file() + ", tls-server-name: ";
  const std::string user = "{token: " + plane_->token() + "}";
  std::ofstream(dir / "good") << Kubeconfig(plane_->server(), cluster + "kubernetes.default.svc", user);
  std::ofstream(dir / "bad") << Kubeconfig(plane_->server(), cluster + "other.example", user);
  const CliRun good = Gpufit("plan --kubeconfig " + (dir / "good").string() + " --inference /nonexistent.yaml", dir);
  EXPECT_THAT(good.err, HasSubstr("and 31 pods from " + plane_->server()));
  const CliRun bad = Gpufit("plan --kubeconfig " + (dir / "bad").string() + " --inference /nonexistent.yaml", dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("TLS handshake failed"));
  EXPECT_THAT(bad.err, HasSubstr("name checked: other.example"));
}

// --context alone: the first file of $KUBECONFIG that has it.
TEST_F(KubeLive, ContextFromTheKubeconfigEnvironmentList) {
  const fs::path dir = Scratch("kube-live-env");
  std::ofstream(dir / "other") << Kubeconfig("https://127.0.0.1:1", "insecure-skip-tls-verify: true", "{token: x}");
  ::setenv("KUBECONFIG",
           ((dir / "missing").string() + ":" + (dir / "other").string() + ":" + plane_->kubeconfig()).c_str(), 1);
  const CliRun r = Gpufit("plan --context gpufit-test --inference /nonexistent.yaml", dir);
  ::unsetenv("KUBECONFIG");
  EXPECT_THAT(r.err, HasSubstr("and 31 pods from " + plane_->server() + " (context gpufit-test)"));
}

TEST_F(KubeLive, KubeconfigTogetherWithFilesIsAnError) {
  const fs::path dir = Scratch("kube-live-both");
  const CliRun r = Gpufit("plan --kubeconfig " + plane_->kubeconfig() + " " + Files(), dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("give them or --nodes/--pods, not both"));
}

TEST_F(KubeLive, ReplayMatchesByWorkloadFromTheApiServer) {
  if (!HasData()) GTEST_SKIP() << "no " << GenTd26();
  const fs::path dir = Scratch("kube-live-replay");
  ASSERT_EQ(Gpufit("plan --telemetry " + (*dir_ / "fixture.csv").string() + " --gpu h200-141gb --search-budget 0 " +
                       Files() + " --out " + (dir / "out").string(),
                   dir)
                .exit_code,
            0);
  const std::string replay =
      "replay --telemetry " + (*dir_ / "fixture.csv").string() + " --plan " + (dir / "out" / "plan.json").string();
  const CliRun files = Gpufit(replay + " --format json --pods " + (*dir_ / "pods.json").string(), dir);
  const CliRun live = Gpufit(replay + " --format json --kubeconfig " + plane_->kubeconfig(), dir);
  ASSERT_EQ(live.exit_code, files.exit_code) << live.err;
  EXPECT_EQ(Json::parse(live.out), Json::parse(files.out));
  EXPECT_EQ(Json::parse(live.out)["matching"], "workload");
}

TEST_F(KubeLive, ServeListsTheClusterAgainAndTakesInANewPod) {
  const fs::path dir = Scratch("kube-live-serve");
  // gpufit serve for 4 s, stopped by SIGTERM, re-listing every 0.2 s.
  std::thread serve([&] {
    const std::string cmd = fmt::format(
        "{} serve --insecure-http --kubeconfig {} --port 0 --watch-interval-s 0.2 --drain-s 0 > {} 2> {} & pid=$!; sleep 4; "
        "kill $pid; wait $pid",
        gpufit::test_paths::GpufitBin(), plane_->kubeconfig(), (dir / "stdout").string(), (dir / "stderr").string());
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Json pod = Pods()["items"][0];
  pod["metadata"]["name"] = "sd-new";
  const auto created = plane_->KubectlOk({"create", "-f", "-"}, pod.dump());
  serve.join();
  ASSERT_TRUE(created) << created.error().message;
  plane_->Kubectl({"delete", "pod", "-n", "genai", "sd-new", "--grace-period=0", "--force"});
  const std::string err = Slurp(dir / "stderr");
  EXPECT_THAT(err, HasSubstr("gpufit: read 8 nodes (1 ResourceSlices) and 31 pods from " + plane_->server()));
  EXPECT_THAT(err, HasSubstr("serving the scheduler extender"));
  EXPECT_THAT(err, HasSubstr("snapshot 2 taken in from " + plane_->server() + " (context gpufit-test): 8 nodes"));
}

}  // namespace

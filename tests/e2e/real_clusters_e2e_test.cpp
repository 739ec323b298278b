// Issue 38 acceptance, end to end through the gpufit binary:
//  * HAMi nodes, registered as HAMi's device plugin writes them (hami.io/node-nvidia-register,
//    ingest/kube/node_sharing.h cites the formats), get --sharing hami without a flag, no GPU
//    Operator ClusterPolicy patch, and no nvidia.com/gpucores unless --compute-caps;
//  * a real Prometheus holding dcgm-exporter series of A100 and H100 pods (modelName) and two
//    vLLM servers flat at 0.9 of their A100 with their KV cache metrics: plan.json has each
//    pod's own current GPU and prices per model; the servers are sized by their cache use,
//    share one GPU, get --gpu-memory-utilization in their patches, and the replay shows their
//    cache use fits the new setting; two replicas of one Deployment never share a GPU.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_run.h"
#include "kube_fixture.h"
#include "manifest_validator.h"
#include "prometheus_server.h"

namespace {

using namespace gpufit::e2e;
using gpufit::testing::Container;
using gpufit::testing::List;
using gpufit::testing::Node;
using gpufit::testing::OwnerRef;
using gpufit::testing::Pod;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

Json GpuLimits(int n) { return {{"nvidia.com/gpu", std::to_string(n)}}; }

// A Deployment's pod: owner ReplicaSet <deployment>-5d8f7, label pod-template-hash.
Json DeploymentPod(const std::string& name, const std::string& deployment, int uid, Json container,
                   const std::string& node = "") {
  Json pod = Pod({.ns = "ml",
                  .name = name,
                  .labels = {{"pod-template-hash", "5d8f7"}},
                  .owners = {OwnerRef("apps/v1", "ReplicaSet", deployment + "-5d8f7")},
                  .containers = {std::move(container)},
                  .node = node},
                 uid);
  return pod;
}

// HAMi v2.4 registers 4 A100s as 7-field entries; v2.8 as JSON (every field omitempty).
std::string Hami24() {
  std::string v;
  for (int g = 0; g < 4; ++g) v += fmt::format("GPU-a{},10,81920,100,NVIDIA-NVIDIA A100-SXM4-80GB,0,true:", g);
  return v;
}
std::string Hami28() {
  Json list = Json::array();
  for (int g = 0; g < 4; ++g)
    list.push_back({{"id", fmt::format("GPU-b{}", g)},
                    {"count", 10},
                    {"devmem", 81920},
                    {"devcore", 100},
                    {"type", "NVIDIA A100-SXM4-80GB"},
                    {"mode", "hami-core"},
                    {"health", true}});
  return list.dump();
}

TEST(RealClusters, HamiNodesGetHamiWithoutAClusterPolicyAndComputeCapsOnlyWhenAsked) {
  const fs::path dir = Scratch("hami-nodes");
  // 4 single-replica Deployments on A100s, 20,000 MiB and 20% duty each, for 2 hours.
  {
    std::ofstream csv(dir / "gpu.csv");
    csv << "timestamp_s,pod,metric,value\n";
    for (int k = 0; k < 120; ++k)
      for (int w = 0; w < 4; ++w)
        csv << 60 * k << ",ml/app" << w << "-5d8f7-x" << w << ",DCGM_FI_DEV_FB_USED,20000\n"
            << 60 * k << ",ml/app" << w << "-5d8f7-x" << w << ",DCGM_FI_DEV_GPU_UTIL,20\n";
  }
  Json pods = Json::array();
  for (int w = 0; w < 4; ++w)
    pods.push_back(DeploymentPod(fmt::format("app{}-5d8f7-x{}", w, w), fmt::format("app{}", w), w,
                                 Container("server", "app:1", GpuLimits(1), GpuLimits(1)),
                                 w < 2 ? "hami-1" : "hami-2"));
  std::ofstream(dir / "pods.json") << List(pods).dump();
  // What HAMi's nodes advertise: only nvidia.com/gpu, 4 GPUs x deviceSplitCount 10.
  Json n1 = Node({.name = "hami-1",
                  .labels = {{"gpu", "on"}},
                  .capacity = {{"nvidia.com/gpu", "40"}},
                  .allocatable = {{"nvidia.com/gpu", "40"}}});
  n1["metadata"]["annotations"]["hami.io/node-nvidia-register"] = Hami24();
  n1["metadata"]["annotations"]["hami.io/node-handshake"] = "Reported 2026-01-01 00:00:00.0 +0000 UTC";
  Json n2 = Node({.name = "hami-2", .capacity = {{"nvidia.com/gpu", "40"}}, .allocatable = {{"nvidia.com/gpu", "40"}}});
  n2["metadata"]["annotations"]["hami.io/node-nvidia-register"] = Hami28();
  std::ofstream(dir / "nodes.json") << List({n1, n2}).dump();

  const std::string args = "plan --telemetry " + (dir / "gpu.csv").string() + " --pods " +
                           (dir / "pods.json").string() + " --nodes " + (dir / "nodes.json").string() +
                           " --gpu a100-80gb --search-budget 0 --format json";
  const CliRun r = Gpufit(args + " --emit-manifests " + (dir / "k8s").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--sharing hami, from the nodes (hami: 2 nodes, 8 GPUs)"));
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["options"]["sharing"], "hami");
  bool patched = false;
  for (const auto& f : fs::directory_iterator(dir / "k8s")) {
    const std::string name = f.path().filename().string();
    EXPECT_FALSE(name.starts_with("clusterpolicy")) << name;
    EXPECT_FALSE(name.starts_with("node-")) << name;  // HAMi nodes are not the device plugin's to label
    if (!name.starts_with("workload-")) continue;
    const YAML::Node spec = YAML::LoadFile(f.path().string())["spec"]["template"]["spec"];
    if (!spec["containers"]) continue;
    patched = true;
    EXPECT_EQ(spec["schedulerName"].as<std::string>(), "hami-scheduler");
    const YAML::Node limits = spec["containers"][0]["resources"]["limits"];
    EXPECT_EQ(limits["nvidia.com/gpumem"].as<std::string>(), "22000");  // 20,000 x 1.10
    EXPECT_FALSE(limits["nvidia.com/gpucores"]) << name;
  }
  EXPECT_TRUE(patched);
  const gpufit::testing::ManifestValidation v = gpufit::testing::ValidateManifests({dir / "k8s"});
  EXPECT_EQ(v.exit_code, 0) << v.output;

  const CliRun caps = Gpufit(args + " --compute-caps --emit-manifests " + (dir / "k8s-caps").string(), dir);
  ASSERT_EQ(caps.exit_code, 0) << caps.err;
  std::set<std::string> cores;
  for (const auto& f : fs::directory_iterator(dir / "k8s-caps")) {
    if (!f.path().filename().string().starts_with("workload-")) continue;
    const YAML::Node c = YAML::LoadFile(f.path().string())["spec"]["template"]["spec"]["containers"];
    if (c) cores.insert(c[0]["resources"]["limits"]["nvidia.com/gpucores"].as<std::string>());
  }
  EXPECT_EQ(cores, (std::set<std::string>{"22"}));  // ceil(p99 20 x 1.10)
  // HAMi registers what it hands out: 2 pods and 30,000 MiB per GPU here. Two caps of 22,000
  // MiB do not fit 30,000, so each pod gets a GPU of its own (4 GPUs, not 1).
  std::string small;
  for (int g = 0; g < 4; ++g) small += fmt::format("GPU-c{},2,30000,100,NVIDIA-NVIDIA A100-SXM4-80GB,0,true:", g);
  n1["metadata"]["annotations"]["hami.io/node-nvidia-register"] = small;
  n2["metadata"]["annotations"]["hami.io/node-nvidia-register"] = small;
  std::ofstream(dir / "nodes-small.json") << List({n1, n2}).dump();
  const CliRun limited =
      Gpufit("plan --telemetry " + (dir / "gpu.csv").string() + " --pods " + (dir / "pods.json").string() +
                 " --nodes " + (dir / "nodes-small.json").string() + " --gpu a100-80gb --search-budget 0 --format json",
             dir);
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  EXPECT_THAT(limited.err, HasSubstr("devmem 30000 MiB, count 2"));
  const Json lj = Json::parse(limited.out);
  EXPECT_EQ(lj["capacity_mib"], 30000);
  EXPECT_EQ(lj["totals"]["gpus_after"], 4);
  // --compute-caps is HAMi's: with another back end it is an error.
  const CliRun wrong = Gpufit(args + " --sharing time-slicing --compute-caps", dir);
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_THAT(wrong.err, HasSubstr("--compute-caps applies to --sharing hami only"));
}

constexpr double kT0 = 1767225600;  // 2026-01-01T00:00:00Z
constexpr int kSamples = 121;       // 2 hours at 60 s

struct PodOnGpu {
  std::string name, model;
  double fb_mib, util;
};

// The Prometheus data: each pod's dcgm-exporter series on its own GPU; the two vLLM servers'
// cache usage (0.10 rising to 0.20 and back) and cache configuration.
std::string OpenMetrics(const std::vector<PodOnGpu>& pods) {
  std::string fb = "# TYPE DCGM_FI_DEV_FB_USED gauge\n", util = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
              kv = "# TYPE vllm:kv_cache_usage_perc gauge\n", info = "# TYPE vllm:cache_config_info gauge\n";
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const PodOnGpu& p = pods[i];
    const std::string labels = fmt::format(
        R"(gpu="0",UUID="GPU-{:04d}",modelName="{}",Hostname="node-{}",pod="{}",namespace="ml",container="c")", i,
        p.model, i, p.name);
    const bool vllm = p.name.starts_with("llm-");
    for (int k = 0; k < kSamples; ++k) {
      const double t = kT0 + 60.0 * k;
      fb += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", labels, p.fb_mib, t);
      util += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} {} {}\n", labels, p.util, t);
      if (vllm)
        kv += fmt::format(
            "vllm:kv_cache_usage_perc{{model_name=\"meta-llama/Llama-3.1-8B-Instruct\",engine=\"0\",pod=\"{}\","
            "namespace=\"ml\"}} {} {}\n",
            p.name, 0.10 + 0.10 * std::sin(3.14159265 * k / (kSamples - 1)), t);
      if (vllm)
        info += fmt::format(
            "vllm:cache_config_info{{block_size=\"16\",cache_dtype=\"auto\",gpu_memory_utilization=\"0.9\","
            "num_gpu_blocks=\"28672\",kv_cache_memory_bytes=\"None\",engine=\"0\",pod=\"{}\",namespace=\"ml\"}} 1 "
            "{}\n",
            p.name, t);
    }
  }
  return fb + util + kv + info + "# EOF\n";
}

TEST(RealClusters, MixedModelsVllmServersAndReplicasFromAPrometheus) {
  const fs::path dir = Scratch("mixed-vllm");
  const std::string a100 = "NVIDIA A100-SXM4-80GB", h100 = "NVIDIA H100 80GB HBM3";
  const std::vector<PodOnGpu> pods = {
      {"llm-a-5d8f7-x1", a100, 73728, 30},  // 0.9 x 81,920 MiB, flat
      {"llm-b-5d8f7-x1", a100, 73728, 30},
      {"web-5d8f7-x1", a100, 8000, 5},  // two replicas of Deployment web
      {"web-5d8f7-x2", a100, 8000, 5},
      {"train-0", h100, 60000, 10},  // too big beside a server: 2 GPUs need both servers on one
  };
  auto server = gpufit::testing::PrometheusServer::Start(OpenMetrics(pods), dir.string());
  ASSERT_TRUE(server) << server.error().message;

  Json items = Json::array();
  const Json vllm_args = {"--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.9"};
  for (const char* d : {"llm-a", "llm-b"}) {
    Json c = Container("vllm", "vllm/vllm-openai:v0.10.1", GpuLimits(1), GpuLimits(1));
    c["args"] = vllm_args;
    items.push_back(DeploymentPod(std::string(d) + "-5d8f7-x1", d, static_cast<int>(items.size()), c));
  }
  for (const char* name : {"web-5d8f7-x1", "web-5d8f7-x2"})
    items.push_back(DeploymentPod(name, "web", static_cast<int>(items.size()),
                                  Container("web", "web:1", GpuLimits(1), GpuLimits(1))));
  items.push_back(Pod({.ns = "ml",
                       .name = "train-0",
                       .owners = {OwnerRef("apps/v1", "StatefulSet", "train")},
                       .containers = {Container("trainer", "train:1", GpuLimits(1), GpuLimits(1))}},
                      9));
  std::ofstream(dir / "pods.json") << List(items).dump();

  const std::string args = fmt::format(
      "plan --prometheus {} --since {:.0f} --until {:.0f} --step 60 --gpu a100-80gb --pods {} "
      "--search-budget 2000000 --format json",
      (*server)->url(), kT0 - 60, kT0 + 60.0 * (kSamples - 1), (dir / "pods.json").string());
  const CliRun r = Gpufit(args + " --emit-manifests " + (dir / "k8s").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);

  // Each pod's own GPU, and prices per model: 4 A100s at 3.4309 and 1 H100 at 6.88 USD/h.
  std::map<std::string, std::string> current;
  for (const Json& p : j["pods"]) current[p["pod"]] = p["current_gpu"]["id"];
  EXPECT_EQ(current["ml/train-0"], "h100-80gb");
  EXPECT_EQ(current["ml/llm-a-5d8f7-x1"], "a100-80gb");
  ASSERT_EQ(j["current_gpus"].size(), 2U);
  EXPECT_EQ(j["current_gpus"][0]["gpus"], 4);
  EXPECT_EQ(j["current_gpus"][1]["id"], "h100-80gb");
  EXPECT_NEAR(j["totals"]["usd_per_month_before"].get<double>(), (4 * 3.4309 + 6.88) * 730, 1e-6);
  EXPECT_THAT(r.err, Not(HasSubstr("names no GPU model")));

  // The servers: K = 28672 blocks x 16 tokens x 131072 B (llama-3.1-8b: 2 x 32 layers x 8 KV
  // heads x 128 x 2 B) = 57,344 MiB of the 73,728 held; the rest 16,384 MiB stays. Usage p99 is
  // at most its peak 0.20: the new cache is at most 57,344 x 0.20 x 1.10 = 12,615.68 MiB.
  ASSERT_EQ(j["preallocated_servers"].size(), 2U);
  for (const Json& s : j["preallocated_servers"]) {
    EXPECT_TRUE(s["sized"].get<bool>()) << s.dump();
    EXPECT_DOUBLE_EQ(s["kv_cache_mib"].get<double>(), 57344);
    const double u = s["kv_usage_quantile"].get<double>();
    EXPECT_GT(u, 0.19);
    EXPECT_LE(u, 0.2 + 1e-6);
    EXPECT_DOUBLE_EQ(s["need_mib"].get<double>(), std::ceil(16384 + 57344 * u * 1.1));
    // The replay: no sample's cache use passes the new cache.
    EXPECT_EQ(s["replay"]["samples_kv_above_new_cache"], 0);
    EXPECT_EQ(s["replay"]["samples"], kSamples);
  }
  // Both servers share one GPU now; the two web replicas never do (nor in the mixed fleet).
  bool servers_together = false;
  for (const Json& g : j["groups"]) {
    std::set<std::string> on(g["pods"].begin(), g["pods"].end());
    servers_together = servers_together || (on.count("ml/llm-a-5d8f7-x1") && on.count("ml/llm-b-5d8f7-x1"));
    EXPECT_FALSE(on.count("ml/web-5d8f7-x1") && on.count("ml/web-5d8f7-x2")) << g.dump();
  }
  EXPECT_TRUE(servers_together) << j["groups"].dump();
  // 5 GPUs before; 2 after: {both servers, a web replica} and {train-0, the other replica}.
  EXPECT_EQ(j["totals"]["gpus_before"], 5);
  EXPECT_EQ(j["totals"]["gpus_after"], 2);
  for (const Json& g : j["fleet"]["shared_gpus"]) {
    std::set<std::string> on(g["pods"].begin(), g["pods"].end());
    EXPECT_FALSE(on.count("ml/web-5d8f7-x1") && on.count("ml/web-5d8f7-x2")) << g.dump();
  }
  // The engine's setting in the patch: need / 81,920 MiB rounded up to 0.01.
  const double need = j["preallocated_servers"][0]["need_mib"];
  const YAML::Node c = YAML::LoadFile(
      (dir / "k8s" / "workload-ml-deployment-llm-a.yaml").string())["spec"]["template"]["spec"]["containers"][0];
  ASSERT_TRUE(c["args"]) << Slurp(dir / "k8s" / "workload-ml-deployment-llm-a.yaml");
  EXPECT_EQ(c["args"][3].as<std::string>(), fmt::format("{:.2f}", std::ceil(need / 81920 * 100 - 1e-9) / 100));
  EXPECT_EQ(c["args"][1].as<std::string>(), "meta-llama/Llama-3.1-8B-Instruct");

  // Under HAMi the share is of the pod's cap, which the plan makes memory_cap_mib.
  const CliRun hami = Gpufit(args + " --sharing hami --emit-manifests " + (dir / "k8s-hami").string(), dir);
  ASSERT_EQ(hami.exit_code, 0) << hami.err;
  const Json h = Json::parse(hami.out);
  const double cap = h["preallocated_servers"][0]["memory_cap_mib"];
  const YAML::Node hc = YAML::LoadFile(
      (dir / "k8s-hami" / "workload-ml-deployment-llm-a.yaml").string())["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(hc["resources"]["limits"]["nvidia.com/gpumem"].as<double>(), cap);
  EXPECT_EQ(hc["args"][3].as<std::string>(), fmt::format("{:.2f}", std::ceil(need / cap * 100 - 1e-9) / 100));
  const gpufit::testing::ManifestValidation v = gpufit::testing::ValidateManifests({dir / "k8s", dir / "k8s-hami"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  fs::remove_all(dir);
}

}  // namespace

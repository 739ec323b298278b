#include "kube_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace gpufit::testing {
namespace {
// ---------------------------------------------------------------------------------------
// A test cluster in the shape `kubectl get nodes -o json` / `kubectl get pods -A -o json`
// print, with the generator's own tally of what it wrote.

// A kubectl-style 5-character name suffix.
std::string Suffix(int i) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int k = 0; k < 5; ++k, i /= 27) s += kAlphabet[static_cast<std::size_t>(i % 27)];
  return s;
}

std::string Uid(int i) { return fmt::format("7c2d7c6e-0000-4000-8000-{:012d}", i); }

}  // namespace

Json Taint(const std::string& key, const std::string& value, const std::string& effect) {
  return {{"key", key}, {"value", value}, {"effect", effect}};
}

Json Node(const NodeArgs& a) {
  Json labels = {{"kubernetes.io/arch", "amd64"},
                 {"kubernetes.io/hostname", a.name},
                 {"kubernetes.io/os", "linux"},
                 {"topology.kubernetes.io/zone", "us-east-1a"}};
  labels.update(a.labels);
  Json capacity = {
      {"ephemeral-storage", "203070420Ki"}, {"hugepages-1Gi", "0"}, {"hugepages-2Mi", "0"}, {"pods", "110"}};
  capacity.update(a.capacity);
  Json allocatable = {
      {"ephemeral-storage", "187149698763"}, {"hugepages-1Gi", "0"}, {"hugepages-2Mi", "0"}, {"pods", "110"}};
  allocatable.update(a.allocatable);
  Json spec = {{"providerID", "aws:///us-east-1a/i-0" + a.name}};
  if (!a.taints.empty()) spec["taints"] = a.taints;
  if (a.unschedulable) spec["unschedulable"] = true;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", a.name},
            {"uid", "node-" + a.name},
            {"resourceVersion", "123456"},
            {"creationTimestamp", "2025-12-01T08:00:00Z"},
            {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}},
            {"labels", labels}}},
          {"spec", spec},
          {"status",
           {{"capacity", capacity},
            {"allocatable", allocatable},
            {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}})},
            {"nodeInfo", {{"kubeletVersion", "v1.31.2"}, {"containerRuntimeVersion", "containerd://1.7.22"}}}}}};
}

// A container: `requests` and `limits` are resource lists as kubectl prints them.
Json Container(const std::string& name, const std::string& image, Json requests, Json limits) {
  Json resources = Json::object();
  if (!requests.empty()) resources["requests"] = requests;
  if (!limits.empty()) resources["limits"] = limits;
  return {{"name", name},
          {"image", image},
          {"imagePullPolicy", "IfNotPresent"},
          {"resources", resources},
          {"terminationMessagePath", "/dev/termination-log"},
          {"terminationMessagePolicy", "File"}};
}

Json Sidecar(Json c) {
  c["restartPolicy"] = "Always";
  return c;
}

Json OwnerRef(const std::string& api, const std::string& kind, const std::string& name) {
  return {{"apiVersion", api},      {"kind", kind},       {"name", name},
          {"uid", "owner-" + name}, {"controller", true}, {"blockOwnerDeletion", true}};
}

Json Pod(const PodArgs& a, int uid) {
  Json meta = {{"name", a.name},
               {"namespace", a.ns},
               {"uid", Uid(uid)},
               {"resourceVersion", std::to_string(1000 + uid)},
               {"creationTimestamp", "2026-01-01T00:00:00Z"},
               {"labels", a.labels}};
  if (!a.owners.empty()) meta["ownerReferences"] = a.owners;
  Json spec = {{"containers", a.containers},
               {"dnsPolicy", "ClusterFirst"},
               {"enableServiceLinks", true},
               {"restartPolicy", "Always"},
               {"schedulerName", "default-scheduler"},
               {"securityContext", Json::object()},
               {"serviceAccountName", "default"},
               {"terminationGracePeriodSeconds", 30},
               {"tolerations", Json::array({{{"effect", "NoExecute"},
                                             {"key", "node.kubernetes.io/not-ready"},
                                             {"operator", "Exists"},
                                             {"tolerationSeconds", 300}}})}};
  if (!a.init.empty()) spec["initContainers"] = a.init;
  if (!a.node.empty()) spec["nodeName"] = a.node;
  if (!a.node_selector.empty()) spec["nodeSelector"] = a.node_selector;
  Json status = {{"phase", a.phase}, {"qosClass", a.qos}};
  if (!a.node.empty()) {
    status["hostIP"] = "10.0.0.1";
    status["podIP"] = "10.1.0.1";
    status["startTime"] = "2026-01-01T00:00:05Z";
  }
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}, {"status", status}};
}

Json List(Json items) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}, {"metadata", {{"resourceVersion", ""}}}};
}

Json H200NodeList() {
  Json items = Json::array();
  for (int n = 0; n < 8; ++n)
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata",
                      {{"name", fmt::format("gpu-node-{}", n)},
                       {"labels",
                        {{"nvidia.com/gpu.product", "NVIDIA-H200"},
                         {"nvidia.com/gpu.count", "4"},
                         {"nvidia.com/gpu.memory", "143771"},
                         {"karpenter.sh/capacity-type", "on-demand"}}}}},
                     {"status",
                      {{"capacity", {{"cpu", "96"}, {"memory", "1056758636Ki"}, {"nvidia.com/gpu", "4"}}},
                       {"allocatable", {{"cpu", "95500m"}, {"memory", "1046758636Ki"}, {"nvidia.com/gpu", "4"}}}}}});
  return List(std::move(items));
}

void TestCluster::AddPod(const PodArgs& a, const std::string& owner_kind, const std::string& workload) {
  pods.push_back(Pod(a, static_cast<int>(pods.size())));
  ++pods_by_owner_kind[owner_kind];
  ++pods_by_workload[owner_kind + "/" + workload];
}

TestCluster MakeCluster() {
  TestCluster c;
  const Json gpu_taint = Json::array({Taint("nvidia.com/gpu", "present", "NoSchedule")});
  for (int i = 0; i < 6; ++i) {
    c.nodes.push_back(Node({.name = fmt::format("cpu-{}", i),
                            .labels = {{"karpenter.sh/capacity-type", i < 3 ? "on-demand" : "spot"},
                                       {"node.kubernetes.io/instance-type", "m6i.8xlarge"}},
                            .capacity = {{"cpu", "32"}, {"memory", "134217728Ki"}},
                            .allocatable = {{"cpu", "31850m"}, {"memory", "130023424Ki"}},
                            .unschedulable = i == 0}));
  }
  const char* eks[] = {"ON_DEMAND", "ON_DEMAND", "SPOT", "CAPACITY_BLOCK"};
  for (int i = 0; i < 4; ++i) {
    c.nodes.push_back(Node({.name = fmt::format("h100-{}", i),
                            .labels = {{"eks.amazonaws.com/capacityType", eks[i]},
                                       {"node.kubernetes.io/instance-type", "p5.48xlarge"},
                                       {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                       {"nvidia.com/gpu.memory", "81559"},
                                       {"nvidia.com/gpu.count", "8"},
                                       {"nvidia.com/gpu.replicas", "8"},
                                       {"nvidia.com/gpu.sharing-strategy", "none"},
                                       {"nvidia.com/mig.capable", "true"},
                                       {"nvidia.com/mig.strategy", "single"},
                                       {"nvidia.com/mig.config", "all-disabled"}},
                            .capacity = {{"cpu", "192"}, {"memory", "2113638400Ki"}, {"nvidia.com/gpu", "8"}},
                            .allocatable = {{"cpu", "191450m"}, {"memory", "2097152000Ki"}, {"nvidia.com/gpu", "8"}},
                            .taints = gpu_taint}));
  }
  const char* gke[][2] = {{"cloud.google.com/gke-spot", "true"},
                          {"cloud.google.com/gke-spot", "true"},
                          {"cloud.google.com/gke-preemptible", "true"},
                          {"cloud.google.com/gke-nodepool", "a100-pool"}};
  for (int i = 0; i < 4; ++i) {
    c.nodes.push_back(Node({.name = fmt::format("a100-mig-{}", i),
                            .labels = {{gke[i][0], gke[i][1]},
                                       {"cloud.google.com/gke-accelerator", "nvidia-a100-80gb"},
                                       {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                                       {"nvidia.com/gpu.memory", "81920"},
                                       {"nvidia.com/gpu.count", "8"},
                                       {"nvidia.com/mig.capable", "true"},
                                       {"nvidia.com/mig.strategy", "mixed"},
                                       {"nvidia.com/mig.config", "gpufit-a100-mixed"},
                                       {"nvidia.com/mig.config.state", "success"},
                                       {"nvidia.com/mig-1g.10gb.count", "16"},
                                       {"nvidia.com/mig-3g.40gb.count", "4"}},
                            .capacity = {{"cpu", "96"},
                                         {"memory", "1056758636Ki"},
                                         {"nvidia.com/gpu", "4"},
                                         {"nvidia.com/mig-1g.10gb", "16"},
                                         {"nvidia.com/mig-3g.40gb", "4"}},
                            .allocatable = {{"cpu", "95690m"},
                                            {"memory", "1045000000Ki"},
                                            {"nvidia.com/gpu", "4"},
                                            {"nvidia.com/mig-1g.10gb", i == 3 ? "15" : "16"},  // one unhealthy
                                            {"nvidia.com/mig-3g.40gb", "4"}},
                            .taints = gpu_taint}));
  }
  for (int i = 0; i < 4; ++i) {
    const bool spot = i < 2;
    Json taints = gpu_taint;
    if (spot) taints.push_back(Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"));
    c.nodes.push_back(Node({.name = fmt::format("l4-ts-{}", i),
                            .labels = {{"kubernetes.azure.com/scalesetpriority", spot ? "spot" : "regular"},
                                       {"nvidia.com/gpu.product", "NVIDIA-L4-SHARED"},
                                       {"nvidia.com/gpu.memory", "23034"},
                                       {"nvidia.com/gpu.count", "4"},
                                       {"nvidia.com/gpu.replicas", "32"},
                                       {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
                                       {"nvidia.com/device-plugin.config", "l4-ts-8"}},
                            .capacity = {{"cpu", "48"}, {"memory", "192Gi"}, {"nvidia.com/gpu", "32"}},
                            .allocatable = {{"cpu", "47.5"}, {"memory", "188Gi"}, {"nvidia.com/gpu", "32"}},
                            .taints = taints}));
  }
  for (int i = 0; i < 5; ++i) {
    c.nodes.push_back(Node({.name = fmt::format("t4-{}", i),
                            .labels = {{"nvidia.com/gpu.product", "Tesla-T4"}, {"nvidia.com/gpu.memory", "15360"}},
                            .capacity = {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}},
                            .allocatable = {{"cpu", "7910m"}, {"memory", "30Gi"}, {"nvidia.com/gpu", "1"}}}));
  }
  c.nodes.push_back(Node({.name = "l4-mps-0",
                          .labels = {{"karpenter.sh/capacity-type", "reserved"},
                                     {"nvidia.com/gpu.product", "NVIDIA-L4-SHARED"},
                                     {"nvidia.com/gpu.memory", "23034"},
                                     {"nvidia.com/gpu.count", "4"},
                                     {"nvidia.com/gpu.replicas", "40"},
                                     {"nvidia.com/gpu.sharing-strategy", "mps"},
                                     {"nvidia.com/mps.capable", "true"}},
                          .capacity = {{"cpu", "16"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "40"}},
                          .allocatable = {{"cpu", "15890m"}, {"memory", "62Gi"}, {"nvidia.com/gpu", "40"}}}));
  for (const Json& n : c.nodes) {
    if (n["metadata"]["labels"].contains("nvidia.com/gpu.product")) {
      c.gpu_nodes.push_back(n["metadata"]["name"].get<std::string>());
    }
  }

  int serial = 0;  // pod name suffixes
  // kube-proxy DaemonSet on every node.
  for (const Json& n : c.nodes) {
    c.AddPod(
        {.ns = "kube-system",
         .name = "kube-proxy-" + Suffix(serial++),
         .labels = {{"k8s-app", "kube-proxy"}, {"controller-revision-hash", "5d8f7c9b6"}},
         .owners = Json::array({OwnerRef("apps/v1", "DaemonSet", "kube-proxy")}),
         .containers = Json::array({Container("kube-proxy", "registry.k8s.io/kube-proxy:v1.31.2", {{"cpu", "100m"}})}),
         .node = n["metadata"]["name"].get<std::string>()},
        "DaemonSet", "kube-proxy");
  }
  // dcgm-exporter DaemonSet on every GPU node, with an init container; memory from limits.
  for (const std::string& node : c.gpu_nodes) {
    c.AddPod({.ns = "gpu-operator",
              .name = "nvidia-dcgm-exporter-" + Suffix(serial++),
              .labels = {{"app", "nvidia-dcgm-exporter"}},
              .owners = Json::array({OwnerRef("apps/v1", "DaemonSet", "nvidia-dcgm-exporter")}),
              .init = Json::array({Container("toolkit-validation", "nvcr.io/nvidia/cloud-native/gpu-operator-validator",
                                             {{"cpu", "10m"}, {"memory", "16Mi"}})}),
              .containers = Json::array({Container("nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.8",
                                                   {{"cpu", "100m"}}, {{"memory", "256Mi"}})}),
              .node = node},
             "DaemonSet", "nvidia-dcgm-exporter");
  }
  // Deployment "web" (shop), 20 pods with the classic istio sidecar (a second app container)
  // and the istio-init init container, on cpu-1..cpu-5.
  for (int i = 0; i < 20; ++i) {
    c.AddPod(
        {.ns = "shop",
         .name = "web-7d9f8b6c5d-" + Suffix(serial++),
         .labels = {{"app", "web"}, {"pod-template-hash", "7d9f8b6c5d"}},
         .owners = Json::array({OwnerRef("apps/v1", "ReplicaSet", "web-7d9f8b6c5d")}),
         .init = Json::array({Container("istio-init", "docker.io/istio/proxyv2:1.23.0",
                                        {{"cpu", "100m"}, {"memory", "128Mi"}}, {{"cpu", "2"}, {"memory", "1Gi"}})}),
         .containers = Json::array(
             {Container("web", "registry.example/web:2.3", {{"cpu", "500m"}, {"memory", "512Mi"}}, {{"memory", "1G"}}),
              Container("istio-proxy", "docker.io/istio/proxyv2:1.23.0", {{"cpu", "100m"}, {"memory", "128Mi"}},
                        {{"cpu", "2"}, {"memory", "1Gi"}})}),
         .node = fmt::format("cpu-{}", 1 + i % 5)},
        "Deployment", "web");
  }
  // Deployment "llm-serve" (ml), 8 pods with a native sidecar (init container with
  // restartPolicy Always) started before the model-download init container, and a classic
  // fluent-bit log sidecar (8 log agents on one node), on h100-3.
  for (int i = 0; i < 8; ++i) {
    c.AddPod({.ns = "ml",
              .name = "llm-serve-5c8d7f9b4-" + Suffix(serial++),
              .labels = {{"app", "llm-serve"}, {"pod-template-hash", "5c8d7f9b4"}},
              .owners = Json::array({OwnerRef("apps/v1", "ReplicaSet", "llm-serve-5c8d7f9b4")}),
              .init = Json::array(
                  {Sidecar(Container("istio-proxy", "docker.io/istio/proxyv2:1.23.0",
                                     {{"cpu", "250m"}, {"memory", "256Mi"}})),
                   Container("model-download", "registry.example/fetch:1.0", {{"cpu", "6"}, {"memory", "8Gi"}})}),
              .containers = Json::array(
                  {Container("server", "vllm/vllm-openai:v0.6.3",
                             {{"cpu", "4"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}, {{"nvidia.com/gpu", "1"}}),
                   Container("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.1.9",
                             {{"cpu", "100m"}, {"memory", "64Mi"}})}),
              .node = "h100-3",
              .node_selector = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}},
             "Deployment", "llm-serve");
  }
  // A ReplicaSet without a Deployment: no pod-template-hash label, and a label that does not match.
  for (int i = 0; i < 2; ++i) {
    Json labels = {{"app", "legacy"}};
    if (i == 1) labels["pod-template-hash"] = "abc123";
    c.AddPod({.ns = "shop",
              .name = "legacy-rs-" + Suffix(serial++),
              .labels = labels,
              .owners = Json::array({OwnerRef("apps/v1", "ReplicaSet", "legacy-rs")}),
              .containers = Json::array(
                  {Container("legacy", "registry.example/legacy:0.9", {{"cpu", "250m"}, {"memory", "256Mi"}})}),
              .node = "cpu-3"},
             "ReplicaSet", "legacy-rs");
  }
  // StatefulSet "llm-ft" (ml), 8 H100s each; llm-ft-3 is pending.
  for (int i = 0; i < 4; ++i) {
    c.AddPod({.ns = "ml",
              .name = fmt::format("llm-ft-{}", i),
              .labels = {{"app", "llm-ft"}, {"statefulset.kubernetes.io/pod-name", fmt::format("llm-ft-{}", i)}},
              .owners = Json::array({OwnerRef("apps/v1", "StatefulSet", "llm-ft")}),
              .containers = Json::array({Container("trainer", "registry.example/ft:1.4",
                                                   {{"cpu", "64"}, {"memory", "512Gi"}, {"nvidia.com/gpu", "8"}},
                                                   {{"memory", "512Gi"}, {"nvidia.com/gpu", "8"}})}),
              .node = i < 3 ? fmt::format("h100-{}", i) : "",
              .phase = i < 3 ? "Running" : "Pending"},
             "StatefulSet", "llm-ft");
  }
  // Job "batch-train" (research), 6 pods on MIG 3g.40gb slices; app resources as limits only.
  for (int i = 0; i < 6; ++i) {
    c.AddPod(
        {.ns = "research",
         .name = "batch-train-" + Suffix(serial++),
         .labels = {{"job-name", "batch-train"}, {"batch.kubernetes.io/job-name", "batch-train"}},
         .owners = Json::array({OwnerRef("batch/v1", "Job", "batch-train")}),
         .init =
             Json::array({Container("fetch-data", "registry.example/fetch:1.0", {{"cpu", "3"}, {"memory", "256Mi"}})}),
         .containers = Json::array({Container("train", "registry.example/train:0.3", Json::object(),
                                              {{"cpu", "2"}, {"memory", "16Gi"}, {"nvidia.com/mig-3g.40gb", "1"}})}),
         .node = fmt::format("a100-mig-{}", i % 4),
         .phase = i < 2 ? "Succeeded" : "Running"},
        "Job", "batch-train");
  }
  // A bare pod, no owner and no resources.
  c.AddPod({.ns = "default",
            .name = "debug-shell",
            .containers = Json::array({Container("shell", "busybox:1.36")}),
            .node = "cpu-2",
            .qos = "BestEffort"},
           "Pod", "debug-shell");
  // Deployment "embed" (ml), 10 pods on MIG 1g.10gb slices.
  for (int i = 0; i < 10; ++i) {
    c.AddPod({.ns = "ml",
              .name = "embed-6f7c9d8b7-" + Suffix(serial++),
              .labels = {{"app", "embed"}, {"pod-template-hash", "6f7c9d8b7"}},
              .owners = Json::array({OwnerRef("apps/v1", "ReplicaSet", "embed-6f7c9d8b7")}),
              .containers = Json::array({Container("embed", "registry.example/embed:1.1",
                                                   {{"cpu", "2"}, {"memory", "16Gi"}, {"nvidia.com/mig-1g.10gb", "1"}},
                                                   {{"nvidia.com/mig-1g.10gb", "1"}})}),
              .node = fmt::format("a100-mig-{}", i % 4)},
             "Deployment", "embed");
  }
  // Deployment "notebook" (research), 30 pods on the time-sliced L4s.
  for (int i = 0; i < 30; ++i) {
    c.AddPod({.ns = "research",
              .name = "notebook-84d5c7b6f9-" + Suffix(serial++),
              .labels = {{"app", "notebook"}, {"pod-template-hash", "84d5c7b6f9"}},
              .owners = Json::array({OwnerRef("apps/v1", "ReplicaSet", "notebook-84d5c7b6f9")}),
              .containers = Json::array({Container("jupyter", "quay.io/jupyter/pytorch-notebook:cuda12",
                                                   {{"cpu", "1.5"}, {"memory", "129e6"}}, {{"nvidia.com/gpu", "1"}})}),
              .node = fmt::format("l4-ts-{}", i % 4)},
             "Deployment", "notebook");
  }
  // Two pods of a custom controller: the controller reference wins over a non-controller
  // one, and without any `controller: true` the first reference counts.
  Json config_ref = OwnerRef("v1", "ConfigMap", "ray-tune-cfg");
  config_ref["controller"] = false;
  Json ray_ref = OwnerRef("ray.io/v1", "RayCluster", "ray-tune");
  Json ray_ref_plain = ray_ref;
  ray_ref_plain.erase("controller");
  const Json ray_owners[] = {Json::array({config_ref, ray_ref}), Json::array({ray_ref_plain, config_ref})};
  for (int i = 0; i < 2; ++i) {
    c.AddPod({.ns = "research",
              .name = (i == 0 ? "ray-tune-head-" : "ray-tune-worker-") + Suffix(serial++),
              .labels = {{"ray.io/cluster", "ray-tune"}},
              .owners = ray_owners[i],
              .containers = Json::array({Container("ray", "rayproject/ray:2.37.0-gpu",
                                                   {{"cpu", "2"}, {"memory", "256Mi"}}, {{"nvidia.com/gpu", "1"}})}),
              .node = fmt::format("t4-{}", i)},
             "RayCluster", "ray-tune");
  }
  // Written in no particular order: reverse what was generated.
  std::reverse(c.pods.begin(), c.pods.end());
  std::reverse(c.nodes.begin(), c.nodes.end());
  return c;
}

}  // namespace gpufit::testing

// A test cluster in the shape `kubectl get nodes -o json` / `kubectl get pods -A -o json`
// print (24 nodes, 125 pods of every workload kind, sidecars classic and native, MIG,
// time-slicing, spot labels of each provider), with the generator's own tally of what it
// wrote. Shared by the kubectl reader's tests and the sidecar right-sizing tests.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpufit::testing {

using Json = nlohmann::json;

Json Taint(const std::string& key, const std::string& value, const std::string& effect);

struct NodeArgs {
  std::string name{};
  Json labels = Json::object();
  Json capacity = Json::object();
  Json allocatable = Json::object();
  Json taints = Json::array();
  bool unschedulable = false;
};
Json Node(const NodeArgs& a);

// A container: `requests` and `limits` are resource lists as kubectl prints them.
Json Container(const std::string& name, const std::string& image, Json requests = Json::object(),
               Json limits = Json::object());
// A native sidecar: an init container with restartPolicy Always.
Json Sidecar(Json c);
Json OwnerRef(const std::string& api, const std::string& kind, const std::string& name);

struct PodArgs {
  std::string ns{};
  std::string name{};
  Json labels = Json::object();
  Json owners = Json::array();
  Json init = Json::array();
  Json containers = Json::array();
  std::string node{};  // "" = pending
  std::string phase = "Running";
  std::string qos = "Burstable";
  Json node_selector = Json::object();
};
Json Pod(const PodArgs& a, int uid);
// A `kind: List` of `items`, as kubectl prints several objects.
Json List(Json items);

// kubectl get nodes -o json of eight H200 nodes, gpu-node-0..7, of four GPUs each (the GPU
// Operator's product, count and memory labels; on-demand), with status: the cluster that the
// Kubernetes-in-the-loop tests create on a real API server (a node's status may be set on create).
Json H200NodeList();

struct TestCluster {
  Json nodes = Json::array();
  Json pods = Json::array();
  std::vector<std::string> gpu_nodes;
  std::map<std::string, int> pods_by_owner_kind;  // what the generator wrote, by expected owner kind
  std::map<std::string, int> pods_by_workload;    // "Kind/name" -> pods

  void AddPod(const PodArgs& a, const std::string& owner_kind, const std::string& workload);
};

// 24 nodes: 6 CPU, 4 H100 (EKS), 4 A100 with mixed MIG (GKE), 4 time-sliced L4 (AKS),
// 5 T4 (no capacity label), 1 MPS L4 (Karpenter reserved); and 125 pods.
TestCluster MakeCluster();

}  // namespace gpufit::testing

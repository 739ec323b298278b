#include "cluster_fixture.h"

#include <fmt/format.h>

#include "dcgm_fixture.h"

namespace gpufit::testing {

ClusterFixture MakeClusterFixture(bool opencost, int samples) {
  const int kSamples = samples;
  const auto t = [](int k) { return static_cast<long long>(kFixtureT0) + 60LL * k; };
  std::string fb = "# TYPE DCGM_FI_DEV_FB_USED gauge\n", util = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
              rx = "# TYPE container_network_receive_bytes counter\n", info = "# TYPE kube_pod_info gauge\n",
              cpu = "# TYPE container_cpu_usage_seconds counter\n",
              mem = "# TYPE container_memory_working_set_bytes gauge\n",
              req = "# TYPE kube_pod_container_resource_requests gauge\n", labels = "# TYPE kube_node_labels gauge\n",
              speed = "# TYPE node_network_speed_bytes gauge\n", uname = "# TYPE node_uname_info gauge\n",
              gpu_cost = "# TYPE node_gpu_hourly_cost gauge\n", cpu_cost = "# TYPE node_cpu_hourly_cost gauge\n",
              ram_cost = "# TYPE node_ram_hourly_cost gauge\n", gpu_count = "# TYPE node_gpu_count gauge\n";
  struct Pod {
    const char* name;
    const char* node;
    const char* uuid;
    const char* sandbox;  // cAdvisor labels of the pod's network counters
  };
  const Pod pods[] = {
      {"serve-a", "gpu-a", "GPU-aaaaaaaa-0000-4000-8000-000000000001",
       R"(container="POD",id="/kubepods.slice/pod-a/crio-1",image="",interface="eth0")"},
      {"serve-b", "gpu-b", "GPU-bbbbbbbb-0000-4000-8000-000000000002",
       R"(container="",id="/kubepods/pod-b/c2",image="registry.k8s.io/pause:3.9",interface="eth0")"},
  };
  for (int p = 0; p < 2; ++p) {
    const Pod& pod = pods[p];
    const std::string dcgm = fmt::format(
        R"(gpu="0",UUID="{}",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="{}",container="server",namespace="llm",pod="{}")",
        pod.uuid, pod.node, pod.name);
    const std::string c =
        fmt::format(R"(container="server",namespace="llm",pod="{}",image="vllm/vllm-openai:v0.6.3")", pod.name);
    double counter = 0, cpu_s = 0;
    for (int k = 0; k < kSamples; ++k) {
      double mib = 512;
      if (k >= 10) mib = p == 0 && k == 10 ? 7680 : 14848;
      fb += fmt::format("DCGM_FI_DEV_FB_USED{{{}}} {} {}\n", dcgm, mib, t(k));
      util += fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}}} {} {}\n", dcgm, k <= 11 ? 0 : 40, t(k));
      double rate = 100000;
      if (p == 0 && (k == 10 || k == 11)) rate = 125000000;
      if (p == 1 && k == 10) rate = 250000000;
      if (k > 0) counter += 60 * rate;
      rx += fmt::format("container_network_receive_bytes_total{{namespace=\"llm\",pod=\"{}\",{}}} {} {}\n", pod.name,
                        pod.sandbox, counter, t(k));
      if (p == 0)
        rx += fmt::format(
            "container_network_receive_bytes_total{{namespace=\"llm\",pod=\"serve-a\",container=\"POD\",interface="
            "\"lo\"}} "
            "{} {}\n",
            6e11 * k, t(k));
      info += fmt::format("kube_pod_info{{namespace=\"llm\",pod=\"{}\",node=\"{}\",uid=\"uid-{}\"}} 1 {}\n", pod.name,
                          pod.node, p, t(k));
      cpu_s += k > 0 ? 120 : 0;
      cpu += fmt::format("container_cpu_usage_seconds_total{{{}}} {} {}\n", c, cpu_s, t(k));
      mem += fmt::format("container_memory_working_set_bytes{{{}}} {} {}\n", c, 8LL << 30, t(k));
      const std::string ksm =
          fmt::format(R"(namespace="llm",pod="{}",uid="uid-{}",container="server",node="{}")", pod.name, p, pod.node);
      req += fmt::format("kube_pod_container_resource_requests{{{},resource=\"cpu\",unit=\"core\"}} 8 {}\n", ksm, t(k));
      req += fmt::format("kube_pod_container_resource_requests{{{},resource=\"memory\",unit=\"byte\"}} {} {}\n", ksm,
                         64LL << 30, t(k));
    }
  }
  for (int k = 0; k < kSamples; ++k) {
    rx += fmt::format(
        "container_network_receive_bytes_total{{container=\"\",id=\"/\",image=\"\",interface=\"eth0\",name=\"\","
        "namespace=\"\",pod=\"\"}} {} {}\n",
        6e11 * k, t(k));
    labels += fmt::format(
        "kube_node_labels{{node=\"gpu-a\",label_nvidia_com_gpu_product=\"NVIDIA-H100-80GB-HBM3\"}} 1 {}\n", t(k));
    speed += fmt::format("node_network_speed_bytes{{instance=\"10.0.0.1:9100\",device=\"eth0\"}} 125000000 {}\n", t(k));
    speed += fmt::format(
        "node_network_speed_bytes{{instance=\"10.0.0.2:9100\",node=\"gpu-b\",device=\"ens5\"}} 3125000000 {}\n", t(k));
    speed += fmt::format(
        "node_network_speed_bytes{{instance=\"10.0.0.2:9100\",node=\"gpu-b\",device=\"eth1\"}} 1250000000 {}\n", t(k));
    uname +=
        fmt::format("node_uname_info{{instance=\"10.0.0.1:9100\",nodename=\"gpu-a\",sysname=\"Linux\"}} 1 {}\n", t(k));
    if (!opencost) continue;
    struct NodeCost {
      const char* node;
      const char* type;
      double gpu, cpu, ram;
      int gpus;
    };
    const NodeCost nodes[] = {{"gpu-a", "p5.48xlarge", 3.0, 0.05, 0.005, 8},
                              {"gpu-b", "p5.24xlarge", k < kSamples / 2 ? 4.0 : 5.0, 0.04, 0.004, 4},
                              {"cpu-a", "m7i.4xlarge", 0, 0.03, 0.003, 0}};
    for (const NodeCost& n : nodes) {
      const std::string l = fmt::format(
          R"(instance="{0}",node="{0}",instance_type="{1}",region="us-east-1",provider_id="aws:///us-east-1a/i-{0}",arch="amd64",uid="u-{0}")",
          n.node, n.type);
      gpu_cost += fmt::format("node_gpu_hourly_cost{{{}}} {} {}\n", l, n.gpu, t(k));
      cpu_cost += fmt::format("node_cpu_hourly_cost{{{}}} {} {}\n", l, n.cpu, t(k));
      ram_cost += fmt::format("node_ram_hourly_cost{{{}}} {} {}\n", l, n.ram, t(k));
      gpu_count += fmt::format("node_gpu_count{{{}}} {} {}\n", l, n.gpus, t(k));
    }
  }
  ClusterFixture out;
  out.since_s = kFixtureT0;
  out.until_s = static_cast<double>(t(kSamples - 1));
  out.openmetrics = fb + util + rx + info + cpu + mem + req + labels + speed + uname +
                    (opencost ? gpu_cost + cpu_cost + ram_cost + gpu_count : std::string()) + "# EOF\n";
  return out;
}

}  // namespace gpufit::testing

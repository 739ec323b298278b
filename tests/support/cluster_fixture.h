// A small cluster in OpenMetrics text for the prices and network checks of `plan
// --prometheus` (plan/cluster_prices.h, analyze/network_loading.h): no public trace carries
// OpenCost prices or pod network counters, so the values are written by hand, chosen so that
// every figure the plan derives can be computed by hand.
//
// `samples` samples (180 unless given), one a minute from kFixtureT0 (sample k at kFixtureT0 + 60 k):
//  * node gpu-a: 8 H100 (kube_node_labels label_nvidia_com_gpu_product), 1 Gbit/s link:
//    node-exporter instance "10.0.0.1:9100", tied to the node by node_uname_info{nodename};
//    node_network_speed_bytes{device="eth0"} 125,000,000. OpenCost: 3.00 USD/GPU-hour,
//    0.05 USD/core-hour, 0.005 USD/GiB-hour, node_gpu_count 8.
//  * node gpu-b: 4 H100 (only dcgm-exporter's modelName names the model), node-exporter
//    series labelled node="gpu-b": ens5 at 3,125,000,000 (25 Gbit/s) and eth1 at
//    1,250,000,000 (10 Gbit/s). OpenCost: 4.00 USD/GPU-hour for samples 0 to samples / 2 - 1,
//    5.00 after (of 180: 0-89, mean 4.50), 0.04 USD/core-hour, 0.004 USD/GiB-hour, node_gpu_count 4.
//  * node cpu-a: OpenCost 0 USD/GPU-hour (no GPU), 0.03 and 0.003.
//  * pods llm/serve-a on gpu-a and llm/serve-b on gpu-b (kube_pod_info), one H100 each:
//    DCGM_FI_DEV_FB_USED 512 MiB for samples 0-9; serve-a loads a 14,336 MiB model over
//    two steps (7,680 MiB at sample 10, 14,848 from 11), serve-b in one (14,848 from 10);
//    duty 0 through sample 11, then 40%.
//  * cAdvisor network counters on each pod's sandbox (serve-a container="POD" as under
//    CRI-O, serve-b container="" with the pause image as under containerd), interface eth0:
//    100,000 B/s, except serve-a receives at its link's rate (125,000,000 B/s) in steps 10 and
//    11 and serve-b 15,000,000,000 bytes in step 10 (250,000,000 B/s, 8% of its link).
//    Decoys the reader must skip: serve-a's `lo` at 10 GB/s, and the host's own eth0
//    (pod="", id="/") at 10 GB/s.
//  * cAdvisor CPU (2 cores) and working set (8 GiB) of container "server" in each pod, and
//    kube-state-metrics requests of 8 cores and 64 GiB.
// Without OpenCost (opencost = false) the same cluster has no node_*_hourly_cost series.
#pragma once

#include <string>

namespace gpufit::testing {

struct ClusterFixture {
  std::string openmetrics;
  double since_s = 0;  // the first sample's time
  double until_s = 0;  // the last sample's time
};

ClusterFixture MakeClusterFixture(bool opencost, int samples = 180);

}  // namespace gpufit::testing

#include "gpufit/analyze/network_loading.h"

#include <algorithm>
#include <cmath>

#include "gpufit/core/units.h"

namespace gpufit {

NetworkReport AnalyzeNetworkLoading(const Telemetry& telemetry, const std::vector<PodNetwork>& network,
                                    const std::vector<NodeLink>& links, const NetworkOptions& o) {
  NetworkReport r;
  r.options = o;
  std::map<std::string, const NodeLink*> link_of;
  for (const NodeLink& l : links) {
    link_of[l.node] = &l;
    if (l.bytes_per_s > r.fastest_link_bytes_per_s) {
      r.fastest_link_bytes_per_s = l.bytes_per_s;
      r.fastest_link_node = l.node;
    }
  }
  std::map<std::string, const PodNetwork*> net_of;
  for (const PodNetwork& n : network) net_of[n.pod] = &n;
  const double step = telemetry.step_s;
  for (const PodSeries& s : telemetry.pods) {
    const std::string key(PodKeyOf(s.pod));
    const auto n = net_of.find(key);
    if (n == net_of.end()) {
      r.not_judged.push_back(s.pod + ": no container_network_receive_bytes_total series");
      continue;
    }
    if (n->second->node.empty()) {
      r.not_judged.push_back(s.pod + ": node unknown (kube_pod_info or --pods)");
      continue;
    }
    const auto l = link_of.find(n->second->node);
    if (l == link_of.end()) {
      r.not_judged.push_back(s.pod + ": no node_network_speed_bytes for node " + n->second->node);
      continue;
    }
    if (!(l->second->bytes_per_s > 0)) {
      r.not_judged.push_back(s.pod + ": node " + n->second->node + ": " + l->second->unusable);
      continue;
    }
    const std::vector<float>& rx = n->second->receive_bytes_per_s;
    const double link = l->second->bytes_per_s;
    const auto at_link = [&](std::size_t k) {
      return k < rx.size() && std::isfinite(rx[k]) && rx[k] >= o.link_share * link;
    };
    PodNetworkFinding f{.pod = s.pod, .node = n->second->node, .link_bytes_per_s = link};
    std::vector<bool> in_load(telemetry.samples, false);
    for (std::size_t k = s.first + 1; k <= s.last; ++k) {
      if (s.fb_used_mib[k - 1] > o.near_zero_mib || s.fb_used_mib[k] - s.fb_used_mib[k - 1] < o.min_step_mib) continue;
      const std::size_t s0 = k - 1;
      std::size_t e = k;
      while (e + 1 <= s.last && s.fb_used_mib[e + 1] - s.fb_used_mib[e] >= o.min_step_mib) ++e;
      const double rise = static_cast<double>(s.fb_used_mib[e]) - s.fb_used_mib[s0];
      if (rise < o.min_load_mib) continue;
      NetworkLoad load{.pod = s.pod,
                       .node = f.node,
                       .start_s = telemetry.start_s + static_cast<double>(s0) * step,
                       .steps = e - s0,
                       .seconds = static_cast<double>(e - s0) * step,
                       .model_mib = rise,
                       .link_bytes_per_s = link};
      for (std::size_t j = s0 + 1; j <= e; ++j) {
        in_load[j] = true;
        if (j < rx.size() && std::isfinite(rx[j])) load.received_bytes += static_cast<double>(rx[j]) * step;
        load.steps_at_link += at_link(j) ? 1 : 0;
      }
      load.mean_bytes_per_s = load.received_bytes / load.seconds;
      load.network_bound =
          static_cast<double>(load.steps_at_link) >= o.bound_step_share * static_cast<double>(load.steps);
      if (load.network_bound) {
        const double bytes = rise * static_cast<double>(kBytesPerMiB);
        load.cache_s = bytes / (o.cache_gb_per_s * 1e9);
        load.cache_saved_s = std::max(0.0, load.seconds - load.cache_s);
        if (r.fastest_link_bytes_per_s > link) {
          load.faster_link_bytes_per_s = r.fastest_link_bytes_per_s;
          load.faster_link_s = bytes / r.fastest_link_bytes_per_s;
          load.faster_link_saved_s = std::max(0.0, load.seconds - load.faster_link_s);
        }
        ++f.network_bound_loads;
        f.cache_saved_s += load.cache_saved_s;
        f.faster_link_saved_s += load.faster_link_saved_s;
      }
      ++f.loads;
      r.loads.push_back(std::move(load));
      k = e;  // the next load starts after this one
    }
    for (std::size_t k = s.first + 1; k <= s.last; ++k) {
      if (in_load[k] || k >= rx.size() || !std::isfinite(rx[k])) continue;
      ++f.data_samples;
      f.data_bound_samples += at_link(k) && s.gpu_util_pct[k] < o.data_duty_pct ? 1 : 0;
    }
    f.data_bound = f.data_samples > 0 &&
                   static_cast<double>(f.data_bound_samples) >= o.data_min_share * static_cast<double>(f.data_samples);
    r.pods.push_back(std::move(f));
  }
  return r;
}

}  // namespace gpufit

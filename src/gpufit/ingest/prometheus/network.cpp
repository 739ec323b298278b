#include "gpufit/ingest/prometheus/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/prometheus/opencost.h"

namespace gpufit {
namespace {

std::string Label(const PromSeries& s, const char* name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? std::string() : it->second;
}

std::string PodKey(const PromSeries& s) {
  const std::string ns = Label(s, "namespace"), pod = Label(s, "pod");
  return ns.empty() ? pod : ns + "/" + pod;
}

std::string WithoutPort(std::string instance) {
  // "10.0.0.1:9100" or "[fd00::1]:9100" -> the host; a bare IPv6 address keeps its colons.
  if (!instance.empty() && instance.front() == '[') {
    const auto close = instance.find(']');
    return close == std::string::npos ? instance : instance.substr(1, close - 1);
  }
  if (std::count(instance.begin(), instance.end(), ':') == 1) instance.resize(instance.find(':'));
  return instance;
}

std::string Window(double step_s) { return fmt::format("[{}ms]", std::llround(step_s * 1000) - 1); }

}  // namespace

Result<void> CheckReceiveSeries(const std::vector<PromSeries>& receive_bytes) {
  for (const PromSeries& s : receive_bytes)
    for (std::size_t i = 1; i < s.value.size(); ++i) {
      const double dt = s.time_s[i] - s.time_s[i - 1];
      if (!(dt > 0) || !std::isfinite(s.value[i]) || !std::isfinite(s.value[i - 1])) continue;
      const double increase = s.value[i] >= s.value[i - 1] ? s.value[i] - s.value[i - 1] : s.value[i];
      if (increase / dt > kMaxReceiveBytesPerS)
        return InvalidArgument(
            "container_network_receive_bytes_total{{pod=\"{}\",interface=\"{}\"}} rises {:g} bytes in {:g} s to {}: "
            "{:g} bytes/s, above the bound {:g} bytes/s (8 Tbit/s; prometheus_network.h): a broken counter",
            PodKey(s), Label(s, "interface"), increase, dt, FormatRfc3339(s.time_s[i]), increase / dt,
            kMaxReceiveBytesPerS);
    }
  return {};
}

std::vector<PodNetwork> PodReceiveRates(const std::vector<PromSeries>& receive_bytes, const Telemetry& telemetry) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  // (pod, interface) -> per grid sample, the largest rate of its series.
  std::map<std::pair<std::string, std::string>, std::vector<float>> by_interface;
  for (const PromSeries& s : receive_bytes) {
    const std::string pod = Label(s, "pod");
    if (pod.empty() || Label(s, "interface") == "lo") continue;
    std::vector<float>& rates = by_interface[{PodKey(s), Label(s, "interface")}];
    if (rates.empty()) rates.assign(telemetry.samples, kNaN);
    for (std::size_t i = 1; i < s.value.size(); ++i) {
      const double dt = s.time_s[i] - s.time_s[i - 1];
      if (!(dt > 0) || !std::isfinite(s.value[i]) || !std::isfinite(s.value[i - 1])) continue;
      const double increase = s.value[i] >= s.value[i - 1] ? s.value[i] - s.value[i - 1] : s.value[i];
      const double k = std::round((s.time_s[i] - telemetry.start_s) / telemetry.step_s);
      if (k < 0 || k >= static_cast<double>(telemetry.samples)) continue;
      float& slot = rates[static_cast<std::size_t>(k)];
      const auto rate = static_cast<float>(increase / dt);
      slot = std::isnan(slot) ? rate : std::max(slot, rate);
    }
  }
  std::map<std::string, PodNetwork> pods;
  for (const auto& [key, rates] : by_interface) {
    PodNetwork& p = pods[key.first];
    p.pod = key.first;
    if (p.receive_bytes_per_s.empty()) p.receive_bytes_per_s.assign(telemetry.samples, kNaN);
    for (std::size_t k = 0; k < rates.size(); ++k) {
      if (std::isnan(rates[k])) continue;
      float& sum = p.receive_bytes_per_s[k];
      sum = std::isnan(sum) ? rates[k] : sum + rates[k];
    }
  }
  std::vector<PodNetwork> out;
  for (auto& [key, p] : pods) out.push_back(std::move(p));
  return out;
}

std::map<std::string, std::string> PodNodesFromSeries(const std::vector<PromSeries>& pod_info) {
  std::map<std::string, std::pair<double, std::string>> last;  // pod -> (last time seen, node)
  for (const PromSeries& s : pod_info) {
    const std::string node = Label(s, "node");
    if (node.empty() || Label(s, "pod").empty() || s.time_s.empty()) continue;
    auto& [t, n] = last[PodKey(s)];
    if (s.time_s.back() >= t) t = s.time_s.back(), n = node;
  }
  std::map<std::string, std::string> out;
  for (const auto& [pod, seen] : last) out[pod] = seen.second;
  return out;
}

std::vector<NodeLink> NodeLinksFromSeries(const std::vector<PromSeries>& speed, const std::vector<PromSeries>& uname) {
  std::map<std::string, std::string> nodename_of;  // instance -> nodename
  for (const PromSeries& s : uname)
    if (!Label(s, "nodename").empty()) nodename_of[Label(s, "instance")] = Label(s, "nodename");
  std::map<std::string, NodeLink> best;
  for (const PromSeries& s : speed) {
    const std::string device = Label(s, "device");
    if (device == "lo") continue;
    double bytes_per_s = 0, last = NAN;
    for (double v : s.value) {
      if (std::isfinite(v)) bytes_per_s = std::max(bytes_per_s, v);
      last = v;
    }
    NodeLink l{.device = device, .bytes_per_s = bytes_per_s};
    const std::string instance = Label(s, "instance");
    if (!Label(s, "node").empty()) {
      l.node = Label(s, "node"), l.node_source = "the series' node label";
    } else if (!Label(s, "kubernetes_node").empty()) {
      l.node = Label(s, "kubernetes_node"), l.node_source = "the series' kubernetes_node label";
    } else if (const auto it = nodename_of.find(instance); it != nodename_of.end()) {
      l.node = it->second, l.node_source = "node_uname_info nodename of instance " + instance;
    } else {
      l.node = WithoutPort(instance), l.node_source = "the instance label without its port";
    }
    if (l.node.empty()) continue;
    if (!(bytes_per_s > 0)) {
      // node-exporter reports -1 Mb/s (-125000 bytes/s) for a device whose speed is unknown.
      l.bytes_per_s = 0;
      l.unusable = fmt::format(
          "node_network_speed_bytes{{device=\"{}\"}} is {:g} (0, negative or NaN in every sample): "
          "link speed unknown",
          device, last);
      if (NodeLink& b = best[l.node]; b.node.empty()) b = std::move(l);
      continue;
    }
    NodeLink& b = best[l.node];
    if (l.bytes_per_s > b.bytes_per_s) b = std::move(l);
  }
  std::vector<NodeLink> out;
  for (auto& [node, l] : best) out.push_back(std::move(l));
  return out;
}

Result<ClusterNetwork> ReadPrometheusNetwork(const PrometheusOptions& options, const TelemetryRange& range,
                                             const Telemetry& telemetry,
                                             const std::map<std::string, std::string>& kubectl_nodes) {
  ClusterNetwork out;
  if (telemetry.samples == 0) return out;
  const double step = telemetry.step_s;
  Result<std::vector<PromSeries>> rx = QueryRange(
      options, {.query = fmt::format("max_over_time({}{})",
                                     AddMatchers("container_network_receive_bytes_total{pod!=\"\",interface!=\"lo\"}",
                                                 options.ScopeMatchers()),
                                     Window(step)),
                .start_s = telemetry.start_s - step,
                .end_s = telemetry.start_s + static_cast<double>(telemetry.samples - 1) * step,
                .step_s = step});
  if (!rx) return rx.error();
  if (Result<void> ok = CheckReceiveSeries(*rx); !ok) return ok.error();
  out.pods = PodReceiveRates(*rx, telemetry);
  const double coarse = ClusterStepFor(range);
  const RangeQuery base{.query = "",
                        .start_s = std::min(range.until_s, range.since_s + coarse),
                        .end_s = range.until_s,
                        .step_s = coarse};
  std::vector<std::vector<PromSeries>> answers;
  for (const char* q : {"kube_pod_info{node!=\"\"}", "node_network_speed_bytes", "node_uname_info"}) {
    RangeQuery query = base;
    // kube_pod_info is pod-level (scoped); the node exporter's series are node-level, cluster-wide.
    const std::string selector = query.query.empty() && answers.empty() ? AddMatchers(q, options.ScopeMatchers()) : q;
    query.query = fmt::format("max_over_time({}{})", selector, Window(coarse));
    Result<std::vector<PromSeries>> a = QueryRange(options, query);
    if (!a) return a.error();
    answers.push_back(std::move(*a));
  }
  out.pod_nodes = PodNodesFromSeries(answers[0]);
  for (const auto& [pod, node] : kubectl_nodes)
    if (!node.empty()) out.pod_nodes[pod] = node;
  for (PodNetwork& p : out.pods)
    if (const auto it = out.pod_nodes.find(p.pod); it != out.pod_nodes.end()) p.node = it->second;
  out.links = NodeLinksFromSeries(answers[1], answers[2]);
  return out;
}

}  // namespace gpufit

// The network check's part of the ancillary section (analyze/network_loading.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "gpufit/core/text.h"
#include "gpufit/plan/ancillary_plan.h"

namespace gpufit {
namespace {

using json = nlohmann::json;

std::string Gbit(double bytes_per_s) { return fmt::format("{:g} Gbit/s", bytes_per_s * 8 / 1e9); }

}  // namespace

std::string NetworkReportToJson(const NetworkReport& r) {
  json loads = json::array(), pods = json::array();
  for (const NetworkLoad& l : r.loads) {
    json remedies = nullptr;
    if (l.network_bound) {
      remedies = json::array();
      remedies.push_back({{"remedy", "node-local model cache"},
                          {"load_s", l.cache_s},
                          {"saved_s", l.cache_saved_s},
                          {"basis", fmt::format("model bytes / {:g} GB/s (--model-cache-gb-per-s), for a model the "
                                                "node has read before",
                                                r.options.cache_gb_per_s)}});
      remedies.push_back(
          {{"remedy", "peer-to-peer image/model distribution (Dragonfly, Spegel, Kraken)"},
           {"load_s", l.seconds},
           {"saved_s", l.p2p_saved_s},
           {"basis",
            "the node's own link is the limit and every byte still crosses it; peer-to-peer helps when the "
            "origin's egress is shared by many nodes pulling at once"}});
      if (l.faster_link_bytes_per_s > 0)
        remedies.push_back({{"remedy", "nodes with faster links"},
                            {"link_bytes_per_s", l.faster_link_bytes_per_s},
                            {"load_s", l.faster_link_s},
                            {"saved_s", l.faster_link_saved_s},
                            {"basis", fmt::format("model bytes / {} (the fastest link among the nodes, line rate); "
                                                  "an upper bound, the source may then limit",
                                                  Gbit(l.faster_link_bytes_per_s))}});
    }
    loads.push_back({{"pod", l.pod},
                     {"node", l.node},
                     {"start_s", l.start_s},
                     {"steps", l.steps},
                     {"load_s", l.seconds},
                     {"model_mib", l.model_mib},
                     {"received_bytes", l.received_bytes},
                     {"mean_receive_bytes_per_s", l.mean_bytes_per_s},
                     {"link_bytes_per_s", l.link_bytes_per_s},
                     {"steps_at_link", l.steps_at_link},
                     {"network_bound", l.network_bound},
                     {"remedies", remedies}});
  }
  for (const PodNetworkFinding& p : r.pods)
    pods.push_back({{"pod", p.pod},
                    {"node", p.node},
                    {"link_bytes_per_s", p.link_bytes_per_s},
                    {"loads", p.loads},
                    {"network_bound_loads", p.network_bound_loads},
                    {"cache_saved_s", p.cache_saved_s},
                    {"faster_link_saved_s", p.faster_link_saved_s},
                    {"data_samples", p.data_samples},
                    {"data_network_bound_samples", p.data_bound_samples},
                    {"data_loading_network_bound", p.data_bound}});
  const NetworkOptions& o = r.options;
  const json j = {
      {"sources",
       "cAdvisor container_network_receive_bytes_total (pod sandbox), node-exporter node_network_speed_bytes, "
       "DCGM_FI_DEV_FB_USED"},
      {"rule",
       fmt::format("a model load (GPU memory rising >= {:g} MiB a step from <= {:g} MiB, >= {:g} MiB in all) is "
                   "network-bound when in >= {:g}% of its steps the pod receives at >= {:g}% of its node's link; "
                   "data loading is when >= {:g}% of other running samples are at the link with duty < {:g}%",
                   o.min_step_mib, o.near_zero_mib, o.min_load_mib, 100 * o.bound_step_share, 100 * o.link_share,
                   100 * o.data_min_share, o.data_duty_pct)},
      {"fastest_link_bytes_per_s", r.fastest_link_bytes_per_s},
      {"fastest_link_node", r.fastest_link_node},
      {"loads", loads},
      {"pods", pods},
      {"not_judged", r.not_judged}};
  return j.dump(2) + "\n";
}

std::string NetworkReportToMarkdown(const NetworkReport& r) {
  std::size_t bound = 0;
  for (const NetworkLoad& l : r.loads) bound += l.network_bound ? 1 : 0;
  std::string s = fmt::format(
      "\n### Network: model and data loading\n\n{} model loads on {} pods; {} bound by the node's link (>= {:g}% of it "
      "in most of the load's steps).\n",
      r.loads.size(), r.pods.size(), bound, 100 * r.options.link_share);
  if (bound > 0) {
    s += "\n| pod | node | link | load | model | received | node-local cache saves | faster link saves | "
         "peer-to-peer saves |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n";
    for (const NetworkLoad& l : r.loads) {
      if (!l.network_bound) continue;
      s += fmt::format("| {} | {} | {} | {:.0f} s | {:.0f} MiB | {:.3g} GB/s | {:.1f} s | {} | 0 s |\n",
                       MarkdownText(l.pod), MarkdownText(l.node), Gbit(l.link_bytes_per_s), l.seconds, l.model_mib,
                       l.mean_bytes_per_s / 1e9, l.cache_saved_s,
                       l.faster_link_bytes_per_s > 0
                           ? fmt::format("{:.1f} s ({})", l.faster_link_saved_s, Gbit(l.faster_link_bytes_per_s))
                           : std::string("- (no faster node)"));
    }
    s += fmt::format(
        "\nA node-local cache reads at {:g} GB/s (--model-cache-gb-per-s) for a model the node has read before; a "
        "faster link at line rate is an upper bound; peer-to-peer distribution (Dragonfly, Spegel, Kraken) saves "
        "nothing on a load bound by the node's own link, and helps when the origin is the limit.\n",
        r.options.cache_gb_per_s);
  }
  for (const PodNetworkFinding& p : r.pods)
    if (p.data_bound)
      s += fmt::format(
          "- {}: data loading bound by the network in {} of {} samples (GPU < {:g}% busy): cache the "
          "dataset on the node or move it to a faster link\n",
          p.pod, p.data_bound_samples, p.data_samples, r.options.data_duty_pct);
  if (!r.not_judged.empty()) {
    s += fmt::format("\n{} pods not judged:\n\n", r.not_judged.size());
    for (const std::string& why : r.not_judged) s += fmt::format("- {}\n", why);
  }
  return s;
}

}  // namespace gpufit

#include "gpufit/ingest/kube/pod_ends.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "gpufit/ingest/prometheus/telemetry.h"

namespace gpufit {

void MergePodEnds(PodEnds& into, const PodEnds& from) {
  for (const auto& [pod, ends] : from) {
    std::vector<KnownEnd>& list = into[pod];
    list.insert(list.end(), ends.begin(), ends.end());
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
}

PodEnds PodEndsFromKubePods(const std::vector<KubePod>& pods) {
  PodEnds ends;
  for (const KubePod& p : pods)
    if (p.finished_s) ends[p.Key()].push_back({*p.finished_s, "pods JSON finishedAt"});
  for (auto& [pod, list] : ends) std::sort(list.begin(), list.end());
  return ends;
}

PodEnds PodEndsFromKubeStateMetrics(const std::vector<PromSeries>& completion_time,
                                    const std::vector<PromSeries>& ended_phase) {
  using Object = std::pair<std::string, std::string>;  // pod key, uid
  auto object = [](const PromSeries& s) {
    const auto uid = s.labels.find("uid");
    return Object{PodKeyFromLabels(s.labels), uid == s.labels.end() ? "" : uid->second};
  };
  // First evaluation time at which each pod object shows Succeeded or Failed.
  std::map<Object, double> seen_ended;
  for (const PromSeries& s : ended_phase) {
    const Object o = object(s);
    if (o.first.empty()) continue;
    for (std::size_t i = 0; i < s.time_s.size() && i < s.value.size(); ++i) {
      if (!(s.value[i] >= 1)) continue;
      const auto it = seen_ended.find(o);
      if (it == seen_ended.end() || s.time_s[i] < it->second) seen_ended[o] = s.time_s[i];
      break;
    }
  }
  std::map<Object, double> completed;
  for (const PromSeries& s : completion_time) {
    const Object o = object(s);
    for (double v : s.value)
      if (std::isfinite(v) && v > 0) completed[o] = v;  // the latest answer
  }
  PodEnds ends;
  for (const auto& [o, seen] : seen_ended) {
    const auto c = completed.find(o);
    if (c != completed.end() && c->second <= seen)
      ends[o.first].push_back({c->second, "kube_pod_completion_time"});
    else
      ends[o.first].push_back({seen, "kube_pod_status_phase"});
  }
  for (auto& [pod, list] : ends) std::sort(list.begin(), list.end());
  return ends;
}

namespace {

// A bare pod name (a long CSV without namespaces) matches the one "namespace/name" key of
// kubectl's pods with that name; none when no key or several namespaces have it (ambiguous),
// the rule plan/workload_keys.h's FindKubePod applies to the same pods.
PodEnds::const_iterator FindByBareName(const PodEnds& ends, std::string_view name) {
  if (name.find('/') != std::string_view::npos) return ends.end();
  auto match = ends.end();
  for (auto it = ends.begin(); it != ends.end(); ++it) {
    const std::size_t slash = it->first.find('/');
    if (slash == std::string::npos || std::string_view(it->first).substr(slash + 1) != name) continue;
    if (match != ends.end()) return ends.end();
    match = it;
  }
  return match;
}

}  // namespace

const KnownEnd* EndFor(const std::vector<KnownEnd>& ends, double first_s) {
  for (const KnownEnd& e : ends)
    if (e.end_s >= first_s) return &e;
  return ends.empty() ? nullptr : &ends.back();
}

std::vector<PodEnd> DropSamplesAfterEnd(RawTelemetry& raw, const PodEnds& ends) {
  std::vector<PodEnd> out;
  if (ends.empty()) return out;
  std::set<std::string> names;
  for (const auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct})
    for (const auto& [pod, s] : *metric) names.insert(pod);
  for (const std::string& pod : names) {
    auto it = ends.find(pod);
    if (it == ends.end()) it = ends.find(std::string(PodKeyOf(pod)));
    if (it == ends.end()) it = FindByBareName(ends, PodKeyOf(pod));
    if (it == ends.end()) continue;
    double first = std::numeric_limits<double>::infinity();
    for (const auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct})
      if (const auto s = metric->find(pod); s != metric->end())
        for (double t : s->second.time_s) first = std::min(first, t);
    const KnownEnd* end = EndFor(it->second, first);
    std::set<double> dropped;
    for (auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct}) {
      const auto s = metric->find(pod);
      if (s == metric->end()) continue;
      RawSeries kept;
      for (std::size_t i = 0; i < s->second.time_s.size(); ++i) {
        if (s->second.time_s[i] > end->end_s) {
          dropped.insert(s->second.time_s[i]);
          continue;
        }
        kept.time_s.push_back(s->second.time_s[i]);
        kept.value.push_back(s->second.value[i]);
      }
      if (kept.time_s.empty())
        metric->erase(s);
      else
        s->second = std::move(kept);
    }
    if (!dropped.empty()) out.push_back({pod, end->end_s, end->source, dropped.size()});
  }
  return out;
}

}  // namespace gpufit

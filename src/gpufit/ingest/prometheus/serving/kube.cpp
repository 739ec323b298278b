#include "gpufit/ingest/prometheus/serving/kube.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "gpufit/ingest/prometheus/serving/workloads.h"

namespace gpufit::serving {
namespace {

// The object's namespace on a kube-state-metrics series (exported_namespace when the scrape
// renamed it).
std::string Namespace(const Labels& l) {
  const std::string exported = Label(l, "exported_namespace");
  return exported.empty() ? Label(l, "namespace") : exported;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace

Result<void> ReadKubeStateMetrics(const Asker& ask, const std::set<std::string>& namespaces, ServingAnswers& a) {
  std::string regex;
  for (const std::string& ns : namespaces) regex += (regex.empty() ? "" : "|") + ns;
  const std::string in_ns = fmt::format("{{namespace=~\"{}\"}}", regex);
  // Scraped without honorLabels, kube-state-metrics' `namespace` is exported_namespace and the
  // plain label names its own: when its pods' owners are not found in the serving namespaces,
  // the whole cluster's series are read.
  std::string matchers = in_ns;
  const auto ksm = [&](const std::string& metric, const std::string& window, const char* over, bool per_step) {
    const std::string q = fmt::format("{}({}{}{})", over, metric, matchers, window);
    return per_step ? ask.OnGrid(q) : ask.Once(q);
  };
#define GPUFIT_ANSWER(field, call) \
  do {                             \
    auto r = call;                 \
    if (!r) return r.error();      \
    a.field = std::move(*r);       \
  } while (false)
  GPUFIT_ANSWER(pod_owner, ksm("kube_pod_owner", ask.whole(), "max_over_time", false));
  if (a.pod_owner.empty()) {
    matchers.clear();
    GPUFIT_ANSWER(pod_owner, ksm("kube_pod_owner", ask.whole(), "max_over_time", false));
    if (a.pod_owner.empty()) matchers = in_ns;
  }
  GPUFIT_ANSWER(replicaset_owner, ksm("kube_replicaset_owner", ask.whole(), "max_over_time", false));
  GPUFIT_ANSWER(pod_created, ksm("kube_pod_created", ask.whole(), "max_over_time", false));
  GPUFIT_ANSWER(pod_ready_time, ksm("kube_pod_status_ready_time", ask.whole(), "min_over_time", false));
  if (a.pod_ready_time.empty())
    GPUFIT_ANSWER(pod_ready, ksm("kube_pod_status_ready", ask.window(), "max_over_time", true));
  GPUFIT_ANSWER(deployment_replicas, ksm("kube_deployment_status_replicas", ask.window(), "last_over_time", true));
  GPUFIT_ANSWER(statefulset_replicas, ksm("kube_statefulset_status_replicas", ask.window(), "last_over_time", true));
#undef GPUFIT_ANSWER
  return {};
}

KubeObjects::KubeObjects(const ServingAnswers& a, const GridSpec& grid)
    : grid_(grid), since_s_(grid.start_s - grid.step_s) {
  for (const PromSeries& s : a.pod_owner) {
    const std::string pod = PodKeyFromLabels(s.labels);
    if (pod.empty()) continue;
    const bool controller = Label(s.labels, "owner_is_controller") != "false";
    if (controller || !pod_owner_.contains(pod))
      pod_owner_[pod] = {Label(s.labels, "owner_kind"), Label(s.labels, "owner_name")};
  }
  for (const PromSeries& s : a.replicaset_owner) {
    const std::string rs = Label(s.labels, "replicaset");
    if (!rs.empty() && Label(s.labels, "owner_is_controller") != "false")
      rs_owner_[{Namespace(s.labels), rs}] = {Label(s.labels, "owner_kind"), Label(s.labels, "owner_name")};
  }
  for (const PromSeries& s : a.pod_created) {
    const std::string pod = PodKeyFromLabels(s.labels);
    const double v = LastFinite(s);
    if (!pod.empty() && std::isfinite(v) && v > 0) created_[pod] = v;
  }
  for (const PromSeries& s : a.pod_ready_time) {
    const std::string pod = PodKeyFromLabels(s.labels);
    for (const double v : s.value)
      if (!pod.empty() && std::isfinite(v) && v > 0)
        ready_time_[pod] = ready_time_.contains(pod) ? std::min(ready_time_[pod], v) : v;
  }
  for (const PromSeries& s : a.pod_ready) {
    const std::string pod = PodKeyFromLabels(s.labels);
    if (pod.empty() || Label(s.labels, "condition") != "true") continue;
    for (std::size_t i = 0; i < s.value.size(); ++i)
      if (s.value[i] >= 1) {
        first_ready_[pod] = first_ready_.contains(pod) ? std::min(first_ready_[pod], s.time_s[i]) : s.time_s[i];
        break;
      }
  }
  for (const PromSeries& s : a.deployment_replicas)
    if (const double v = LastFinite(s); std::isfinite(v))
      deployments_[{Namespace(s.labels), Label(s.labels, "deployment")}] = v;
  for (const PromSeries& s : a.statefulset_replicas)
    if (const double v = LastFinite(s); std::isfinite(v))
      statefulsets_[{Namespace(s.labels), Label(s.labels, "statefulset")}] = v;
}

KubeObjects::Owner KubeObjects::OwnerOf(const std::string& pod) const {
  Owner o;
  const auto p = pod_owner_.find(pod);
  if (p == pod_owner_.end()) {
    o.basis = "no kube_pod_owner for its pods: the pods of one model in one namespace";
    return o;
  }
  std::tie(o.kind, o.name) = p->second;
  o.basis = fmt::format("kube_pod_owner: {} {}", o.kind, o.name);
  if (o.kind == "ReplicaSet") {
    if (const auto r = rs_owner_.find({NamespaceOf(pod), o.name}); r != rs_owner_.end() && !r->second.first.empty()) {
      o.basis += fmt::format(" -> kube_replicaset_owner: {} {}", r->second.first, r->second.second);
      std::tie(o.kind, o.name) = r->second;
    }
  }
  return o;
}

bool KubeObjects::BornInRange(const std::string& pod) const {
  const auto it = created_.find(pod);
  return it != created_.end() && it->second > since_s_;
}

void KubeObjects::AddReplicasAndColdStart(ServingWorkload& w) const {
  const std::pair<std::string, std::string> object{w.kube_namespace, w.owner_name};
  if (const auto d = deployments_.find(object);
      (w.owner_kind == "Deployment" || w.owner_kind.empty()) && d != deployments_.end()) {
    w.current_replicas = static_cast<int>(std::lround(d->second));
    w.replicas_basis = "kube_deployment_status_replicas (its last value in the range)";
  } else if (const auto s = statefulsets_.find(object); w.owner_kind == "StatefulSet" && s != statefulsets_.end()) {
    w.current_replicas = static_cast<int>(std::lround(s->second));
    w.replicas_basis = "kube_statefulset_status_replicas (its last value in the range)";
  }
  std::vector<double> from_time, from_steps;
  for (const std::string& pod : w.pods) {
    const auto c = created_.find(pod);
    if (c == created_.end()) continue;
    if (const auto r = ready_time_.find(pod); r != ready_time_.end() && r->second >= c->second) {
      from_time.push_back(r->second - c->second);
    } else if (const auto f = first_ready_.find(pod);
               f != first_ready_.end() && c->second > since_s_ && f->second >= c->second) {
      from_steps.push_back(f->second - c->second);
    }
  }
  if (!from_time.empty()) {
    w.cold_start_s = Median(from_time);
    w.cold_start_basis = fmt::format("median over {} of {} pods of kube_pod_status_ready_time - kube_pod_created",
                                     from_time.size(), w.pods.size());
  } else if (!from_steps.empty()) {
    w.cold_start_s = Median(from_steps);
    w.cold_start_basis = fmt::format(
        "median over {} pods created in the range of (first step with kube_pod_status_ready{{condition=\"true\"}} "
        "= 1) - kube_pod_created (an upper bound, {:g} s coarse)",
        from_steps.size(), grid_.step_s);
  }
}

}  // namespace gpufit::serving

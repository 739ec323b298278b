// serve/pod_affinity.h: each verdict read off the Kubernetes rules the header cites, by hand.
// Nodes a-1 and a-2 are in zone a, b-1 in zone b; web-0 (app=web) runs on a-1, db-0 (app=db,
// namespace data) on b-1.
#include "gpufit/serve/pod_affinity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

const BindingArgs kWeb1{.pod_name = "web-1", .pod_namespace = "ml", .pod_uid = "u-1", .node = "a-1"};

AffinityView Cluster() {
  AffinityView v;
  v.node_labels = {{"a-1", {{"kubernetes.io/hostname", "a-1"}, {"zone", "a"}}},
                   {"a-2", {{"kubernetes.io/hostname", "a-2"}, {"zone", "a"}}},
                   {"b-1", {{"kubernetes.io/hostname", "b-1"}, {"zone", "b"}}},
                   {"bare", Json::object()}};
  v.pods = {Json::parse(R"({"metadata": {"name": "web-0", "namespace": "ml", "uid": "u-0", "labels": {"app": "web"}},
                            "spec": {"nodeName": "a-1"}})"),
            Json::parse(R"({"metadata": {"name": "db-0", "namespace": "data", "uid": "u-9", "labels": {"app": "db"}},
                            "spec": {"nodeName": "b-1"}})")};
  v.namespace_labels = {{"ml", {{"team", "ml"}}}, {"data", {{"team", "data"}}}};
  return v;
}

// The pod web-1 (app=web, namespace ml) with one required term of `kind`.
Json WebPod(const char* kind, const Json& term) {
  Json pod = Json::parse(R"({"metadata": {"name": "web-1", "namespace": "ml", "uid": "u-1", "labels": {"app": "web"}},
                             "spec": {}})");
  pod["spec"]["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"] = Json::array({term});
  return pod;
}

Json Term(const std::string& key, const Json& selector) { return {{"topologyKey", key}, {"labelSelector", selector}}; }

std::string AffinityWhy(const Result<void>& r) { return r ? "" : r.error().message; }

TEST(PodAffinity, AntiAffinityByHostAndByZone) {
  const Json apart = WebPod("podAntiAffinity", Term("kubernetes.io/hostname", {{"matchLabels", {{"app", "web"}}}}));
  // web-0 runs on a-1: a-1 is excluded, a-2 (another host) is not.
  EXPECT_EQ(AffinityWhy(CheckPodAffinity(apart, "a-1", Cluster(), kWeb1)),
            "bind ml/web-1 to a-1: its required pod anti-affinity (topologyKey kubernetes.io/hostname) excludes the "
            "node: ml/web-0 runs in kubernetes.io/hostname=a-1");
  EXPECT_TRUE(CheckPodAffinity(apart, "a-2", Cluster(), kWeb1));
  // By zone: a-2 shares zone a with a-1, so it is excluded too; b-1 is not; a node without the
  // label satisfies the term.
  const Json zone = WebPod("podAntiAffinity", Term("zone", {{"matchLabels", {{"app", "web"}}}}));
  EXPECT_THAT(AffinityWhy(CheckPodAffinity(zone, "a-2", Cluster(), kWeb1)), HasSubstr("ml/web-0 runs in zone=a"));
  EXPECT_TRUE(CheckPodAffinity(zone, "b-1", Cluster(), kWeb1));
  EXPECT_TRUE(CheckPodAffinity(zone, "bare", Cluster(), kWeb1));
  // Only the term's namespaces: db-0 (namespace data) does not count for a term of ml, but does
  // when the term names data or selects it.
  const Json db = Json::parse(R"({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]})");
  EXPECT_TRUE(CheckPodAffinity(WebPod("podAntiAffinity", Term("zone", db)), "b-1", Cluster(), kWeb1));
  Json named = Term("zone", db);
  named["namespaces"] = {"data"};
  EXPECT_FALSE(CheckPodAffinity(WebPod("podAntiAffinity", named), "b-1", Cluster(), kWeb1));
  Json selected = Term("zone", db);
  selected["namespaceSelector"] = {{"matchLabels", {{"team", "data"}}}};
  EXPECT_FALSE(CheckPodAffinity(WebPod("podAntiAffinity", selected), "b-1", Cluster(), kWeb1));
  Json every = Term("zone", db);
  every["namespaceSelector"] = Json::object();  // {}: every namespace
  EXPECT_FALSE(CheckPodAffinity(WebPod("podAntiAffinity", every), "b-1", Cluster(), kWeb1));
  // A null labelSelector selects no pod; an empty one every pod.
  EXPECT_TRUE(CheckPodAffinity(WebPod("podAntiAffinity", {{"topologyKey", "zone"}}), "a-2", Cluster(), kWeb1));
  EXPECT_FALSE(CheckPodAffinity(WebPod("podAntiAffinity", Term("zone", Json::object())), "a-2", Cluster(), kWeb1));
}

TEST(PodAffinity, AffinityNeedsAPodInTheTopologyOrIsTheFirstOfItsGroup) {
  const Json near_web = WebPod("podAffinity", Term("zone", {{"matchLabels", {{"app", "web"}}}}));
  EXPECT_TRUE(CheckPodAffinity(near_web, "a-2", Cluster(), kWeb1));  // web-0 is in zone a
  EXPECT_EQ(AffinityWhy(CheckPodAffinity(near_web, "b-1", Cluster(), kWeb1)),
            "bind ml/web-1 to b-1: its required pod affinity (topologyKey zone) is not met there: no pod it asks "
            "for runs in zone=b");
  EXPECT_THAT(AffinityWhy(CheckPodAffinity(near_web, "bare", Cluster(), kWeb1)), HasSubstr("the node has no label zone"));
  // No pod anywhere matches app=cache, and web-1 is not one: refused everywhere. A term web-1
  // matches itself (app=web) with no web pod running: the first of its group, allowed.
  const Json near_cache = WebPod("podAffinity", Term("zone", {{"matchLabels", {{"app", "cache"}}}}));
  EXPECT_FALSE(CheckPodAffinity(near_cache, "a-2", Cluster(), kWeb1));
  AffinityView empty = Cluster();
  empty.pods.clear();
  EXPECT_TRUE(CheckPodAffinity(near_web, "b-1", empty, kWeb1));
  // The pod itself (same UID), already listed, is not its own neighbour.
  AffinityView self = empty;
  self.pods.push_back(WebPod("podAffinity", Json::object()));
  self.pods.back()["spec"]["nodeName"] = "a-1";
  EXPECT_TRUE(CheckPodAffinity(near_web, "b-1", self, kWeb1));
}

TEST(PodAffinity, WhatTheCheckReads) {
  EXPECT_FALSE(AffinityReadsOf(Json::parse(R"({"metadata": {"namespace": "ml"}, "spec": {}})")).any);
  const AffinityReads own = AffinityReadsOf(WebPod("podAntiAffinity", Term("zone", Json::object())));
  EXPECT_TRUE(own.any);
  EXPECT_FALSE(own.every_namespace);
  EXPECT_EQ(own.namespaces, (std::set<std::string>{"ml"}));
  Json t = Term("zone", Json::object());
  t["namespaces"] = {"data", "ops"};
  EXPECT_EQ(AffinityReadsOf(WebPod("podAffinity", t)).namespaces, (std::set<std::string>{"data", "ops"}));
  t["namespaceSelector"] = Json::object();
  EXPECT_TRUE(AffinityReadsOf(WebPod("podAffinity", t)).every_namespace);
}

}  // namespace
}  // namespace gpufit::serve

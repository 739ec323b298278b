#include "gpufit/serve/extender_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::NodeJson;
using testing::PodJson;

// nodeCacheCapable: true. The keys are the Go field names of ExtenderArgs (formats.md (d)).
TEST(ExtenderWire, NodeNamesInNodeNamesOut) {
  const Json request{{"Pod", PodJson("p", "8", "16Gi", 1)}, {"Nodes", nullptr}, {"NodeNames", {"a", "b", "c"}}};
  const Result<ExtenderArgs> args = ParseExtenderArgs(request.dump(), "filter request");
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_FALSE(args->full_nodes);
  EXPECT_EQ(args->pod.Key(), "ml/p");
  EXPECT_EQ(args->pod.Devices("nvidia.com/gpu"), 1);
  EXPECT_THAT(args->node_names, ElementsAre("a", "b", "c"));

  FilterResult result{.kept = {1}, .failed = {{.node = 0, .reason = "insufficient cpu"}},
                      .failed_and_unresolvable = {{.node = 2, .reason = "x"}}};
  const Json answer = Json::parse(WriteFilterResult(*args, result));
  const Json expected = Json::parse(R"({"Nodes": null, "NodeNames": ["b"], "FailedNodes": {"a": "insufficient cpu"},
                                        "FailedAndUnresolvableNodes": {"c": "x"}, "Error": ""})");
  EXPECT_EQ(answer, expected) << answer.dump();
}

// nodeCacheCapable: false. The kept Node objects come back as sent, in the request's order.
// What the extender remembers per pod is bounded in bytes: a 4 MiB UID, or a name that is not a
// DNS-1123 subdomain, is refused in either reader (NodeNames by simdjson, Nodes by nlohmann).
TEST(ExtenderWire, LongUidsAndNamesThatAreNotDnsNamesAreRefused) {
  Json pod = PodJson("p", "1", "1Gi", 1);
  pod["metadata"]["uid"] = std::string(129, 'u');
  for (const Json& body :
       {Json{{"Pod", pod}, {"NodeNames", {"n1"}}}, Json{{"Pod", pod}, {"Nodes", {{"items", Json::array()}}}}}) {
    const Result<ExtenderArgs> r = ParseExtenderArgs(body.dump(), "filter request");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "filter request: Pod: metadata.uid of 129 bytes (at most 128)");
  }
  pod["metadata"]["uid"] = std::string(128, 'u');
  EXPECT_TRUE(ParseExtenderArgs(Json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump(), "filter request"));
  pod["metadata"]["name"] = "Not_A_Name";
  const Result<ExtenderArgs> r = ParseExtenderArgs(Json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump(), "filter request");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "filter request: Pod: namespace 'ml' and name 'Not_A_Name' must be DNS-1123 subdomains");
}

TEST(ExtenderWire, NodesInKeptNodeObjectsOut) {
  const Json a = NodeJson("a", 16, "64Gi", 1, "NVIDIA-A100-SXM4-80GB");
  const Json b = NodeJson("b", 32, "128Gi", 2, "NVIDIA-H100-80GB-HBM3");
  const Json c = NodeJson("c", 8, "32Gi", 0, "");
  const Json request{{"Pod", PodJson("p", "1", "1Gi", 0)}, {"Nodes", testing::ListOf({a, b, c}, "NodeList")},
                     {"NodeNames", nullptr}};
  const Result<ExtenderArgs> args = ParseExtenderArgs(request.dump(), "filter request");
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_TRUE(args->full_nodes);
  EXPECT_THAT(args->node_names, ElementsAre("a", "b", "c"));
  const Json answer = Json::parse(WriteFilterResult(*args, FilterResult{.kept = {2, 0}}));
  ASSERT_TRUE(answer["Nodes"].is_object());
  EXPECT_EQ(answer["Nodes"]["kind"], "NodeList");
  EXPECT_EQ(answer["Nodes"]["items"], Json::array({c, a}));
  EXPECT_TRUE(answer["NodeNames"].is_null());
  EXPECT_EQ(answer["FailedNodes"], Json::object());
}

// Go's encoding/json matches keys case-insensitively; so does the reader.
TEST(ExtenderWire, KeysMatchCaseInsensitivelyAsGoDecodes) {
  const Json request{{"pod", PodJson("p", "1", "1Gi", 0)}, {"nodenames", {"x"}}};
  const Result<ExtenderArgs> args = ParseExtenderArgs(request.dump(), "filter request");
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_THAT(args->node_names, ElementsAre("x"));
}

// kube-scheduler encodes the Pod and the NodeList without TypeMeta: no `kind` on either.
TEST(ExtenderWire, PodAndNodeListWithoutKindAsGoEncodesThem) {
  Json pod = PodJson("p", "2", "1Gi", 1);
  pod.erase("kind");
  pod.erase("apiVersion");
  Json node = NodeJson("a", 16, "64Gi", 1, "A100");
  node.erase("kind");
  const Json request{{"Pod", pod}, {"Nodes", {{"metadata", Json::object()}, {"items", {node}}}}, {"NodeNames", nullptr}};
  const Result<ExtenderArgs> args = ParseExtenderArgs(request.dump(), "filter request");
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->pod.Key(), "ml/p");
  EXPECT_EQ(args->pod.Devices("nvidia.com/gpu"), 1);
  EXPECT_THAT(args->node_names, ElementsAre("a"));
  // One Node object in place of a list is that node, and it comes back as sent.
  const Json single{{"Pod", pod}, {"Nodes", NodeJson("b", 8, "32Gi", 0, "")}};
  const Result<ExtenderArgs> one = ParseExtenderArgs(single.dump(), "filter request");
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_THAT(one->node_names, ElementsAre("b"));
  EXPECT_EQ(Json::parse(WriteFilterResult(*one, FilterResult{.kept = {0}}))["Nodes"]["items"],
            Json::array({NodeJson("b", 8, "32Gi", 0, "")}));
}

// Names and reasons come back as the JSON strings they were: the writer escapes quote, backslash
// and control characters (RFC 8259 section 7), and passes other UTF-8 through; nlohmann reads
// the answer back as the oracle.
TEST(ExtenderWire, AnswersEscapeNamesAsJsonStrings) {
  const std::vector<std::string> odd = {"q\"uote", "back\\slash", "tab\tnew\nline\rcr", std::string("nul\0x", 5),
                                        "\x01\x1f\x7f", "gr\xc3\xbc\xc3\x9f" "e \xe2\x82\xac \xf0\x9f\x9a\x80", ""};
  const Json request{{"Pod", PodJson("p", "1", "1Gi", 0)}, {"NodeNames", odd}};
  const Result<ExtenderArgs> args = ParseExtenderArgs(request.dump(), "filter request");
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->node_names, odd);
  FilterResult result{.kept = {0, 3, 6}, .failed = {{.node = 1, .reason = "re\"ason\\"}},
                      .failed_and_unresolvable = {{.node = 2, .reason = "x"}, {.node = 4, .reason = "y"}, {.node = 5, .reason = "z"}}};
  const Json answer = Json::parse(WriteFilterResult(*args, result));
  EXPECT_EQ(answer["NodeNames"], Json::array({odd[0], odd[3], odd[6]}));
  EXPECT_EQ(answer["FailedNodes"], Json({{odd[1], "re\"ason\\"}}));
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"], Json({{odd[2], "x"}, {odd[4], "y"}, {odd[5], "z"}}));
  std::vector<HostPriority> priorities;
  for (std::size_t i = 0; i < odd.size(); ++i) priorities.push_back({.host = odd[i], .score = static_cast<std::int64_t>(i)});
  const Json list = Json::parse(WriteHostPriorityList(priorities));
  ASSERT_EQ(list.size(), odd.size());
  for (std::size_t i = 0; i < odd.size(); ++i) EXPECT_EQ(list[i], Json({{"Host", odd[i]}, {"Score", i}}));
}

// The writer skips runs of 8 plain bytes at once: every byte that needs escaping, and the bytes
// next to it (0x20 itself, 0x7f, UTF-8 lead bytes), at every position of a 20-byte name.
TEST(ExtenderWire, EveryEscapedByteAtEveryPositionRoundTrips) {
  std::vector<HostPriority> priorities;
  for (int c = 0; c < 0x20; ++c) {
    for (const int b : {c, int{'"'}, int{'\\'}, 0x20, 0x7f, 0xc3}) {
      for (std::size_t at = 0; at < 20; ++at) {
        std::string name(20, 'n');
        name[at] = static_cast<char>(b);
        if (b == 0xc3) name.insert(at + 1, 1, static_cast<char>(0xa9));  // keep it UTF-8 (U+00E9)
        priorities.push_back({.host = name, .score = 0});
      }
    }
  }
  const Json list = Json::parse(WriteHostPriorityList(priorities));
  ASSERT_EQ(list.size(), priorities.size());
  for (std::size_t i = 0; i < priorities.size(); ++i) ASSERT_EQ(list[i]["Host"], priorities[i].host) << i;
}

// The nodeCacheCapable reader (simdjson) and the general one (nlohmann) agree: an exact key
// wins over a case-insensitive one wherever it stands, \u escapes are decoded, and a body that
// only one of them would look at closely (trailing text, a bad value under an unread key) is
// refused with nlohmann's message.
TEST(ExtenderWire, BothReadersAgreeOnKeysEscapesAndErrors) {
  const std::string pod = PodJson("p", "1", "1Gi", 0).dump();
  const Result<ExtenderArgs> exact = ParseExtenderArgs(R"({"nodenames": ["x"], "Pod": )" + pod + R"(, "NodeNames": ["\u0041b"], "NODENAMES": ["z"]})", "r");
  ASSERT_TRUE(exact) << exact.error().message;
  EXPECT_THAT(exact->node_names, ElementsAre("Ab"));
  const Result<ExtenderArgs> folded = ParseExtenderArgs(R"({"nodeNames": ["x"], "pOD": )" + pod + "}", "r");
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_THAT(folded->node_names, ElementsAre("x"));
  const Result<ExtenderArgs> trailing = ParseExtenderArgs(R"({"Pod": )" + pod + R"(, "NodeNames": []} x)", "r");
  ASSERT_FALSE(trailing);
  EXPECT_THAT(trailing.error().message, HasSubstr("r: malformed JSON at byte"));
  const Result<ExtenderArgs> unread = ParseExtenderArgs(R"({"Pod": )" + pod + R"(, "NodeNames": [], "Extra": [01]})", "r");
  ASSERT_FALSE(unread);
  EXPECT_THAT(unread.error().message, HasSubstr("r: malformed JSON at byte"));
}

// ExtenderBindingArgs and ExtenderBindingResult (formats.md (d)).
TEST(ExtenderWire, BindingArgsAndResult) {
  const Result<BindingArgs> args =
      ParseBindingArgs(R"({"PodName": "p", "PodNamespace": "ml", "PodUID": "u-1", "Node": "n1"})", "bind request");
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->pod_name, "p");
  EXPECT_EQ(args->pod_namespace, "ml");
  EXPECT_EQ(args->pod_uid, "u-1");
  EXPECT_EQ(args->node, "n1");
  const Result<BindingArgs> folded = ParseBindingArgs(R"({"podname": "p", "node": "n1"})", "bind request");
  ASSERT_TRUE(folded) << folded.error().message;
  EXPECT_EQ(folded->pod_uid, "");
  auto error = [](const std::string& body) {
    const Result<BindingArgs> r = ParseBindingArgs(body, "bind request");
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_THAT(error(R"({"PodName": )"), HasSubstr("bind request: malformed JSON at byte"));
  EXPECT_THAT(error(R"(["p"])"), HasSubstr("expected a JSON object (ExtenderBindingArgs), got array"));
  EXPECT_THAT(error(R"({"Node": "n1"})"), HasSubstr("bind request: .PodName: missing or empty"));
  EXPECT_THAT(error(R"({"PodName": "p", "Node": ""})"), HasSubstr(".Node: missing or empty"));
  EXPECT_THAT(error(R"({"PodName": "p", "Node": "n1", "PodUID": 7})"), HasSubstr(".PodUID: expected a string, got number"));
  EXPECT_EQ(Json::parse(WriteBindingResult("")), Json::parse(R"({"Error": ""})"));
  EXPECT_EQ(Json::parse(WriteBindingResult("no \"room\"")), Json::parse(R"({"Error": "no \"room\""})"));
}

TEST(ExtenderWire, HostPriorityListKeys) {
  const Json answer = Json::parse(WriteHostPriorityList({{.host = "a", .score = 10}, {.host = "b", .score = 0}}));
  EXPECT_EQ(answer, Json::parse(R"([{"Host": "a", "Score": 10}, {"Host": "b", "Score": 0}])"));
}

TEST(ExtenderWire, FilterErrorCarriesTheMessage) {
  const Json answer = Json::parse(WriteFilterError("bad pod"));
  EXPECT_EQ(answer["Error"], "bad pod");
  EXPECT_TRUE(answer["NodeNames"].is_null());
  EXPECT_TRUE(answer["Nodes"].is_null());
}

TEST(ExtenderWire, BadRequestsNameTheField) {
  auto error = [](const std::string& body) {
    const Result<ExtenderArgs> r = ParseExtenderArgs(body, "filter request");
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_THAT(error(R"({"Pod": )"), HasSubstr("filter request: malformed JSON at byte"));
  EXPECT_THAT(error("[1]"), HasSubstr("expected a JSON object (ExtenderArgs), got array"));
  EXPECT_THAT(error(R"({"NodeNames": ["a"]})"), HasSubstr(".Pod: missing"));
  const std::string pod = PodJson("p", "1", "1Gi", 0).dump();
  EXPECT_THAT(error(R"({"Pod": )" + pod + "}"), HasSubstr("neither .NodeNames nor .Nodes is set"));
  EXPECT_THAT(error(R"({"Pod": )" + pod + R"(, "NodeNames": "a"})"), HasSubstr(".NodeNames: expected an array, got string"));
  EXPECT_THAT(error(R"({"Pod": )" + pod + R"(, "NodeNames": ["a", 7]})"), HasSubstr(".NodeNames[1]: expected a string, got number"));
  Json bad_pod = PodJson("p", "1", "1Gi", 0);
  bad_pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-2";
  EXPECT_THAT(error(Json{{"Pod", bad_pod}, {"NodeNames", {"a"}}}.dump()),
              HasSubstr("filter request: .Pod: ml/p: .spec.containers[0].resources.requests.cpu"));
  EXPECT_THAT(error(Json{{"Pod", PodJson("p", "1", "1Gi", 0)}, {"Nodes", {{"kind", "PodList"}, {"items", Json::array()}}}}.dump()),
              HasSubstr(".Nodes: .kind: expected Node, NodeList or List, got 'PodList'"));
}

}  // namespace
}  // namespace gpufit::serve

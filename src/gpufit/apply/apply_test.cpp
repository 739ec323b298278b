#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>

#include "gpufit/apply/change_set.h"
#include "gpufit/apply/guardrails.h"
#include "gpufit/apply/history.h"
#include "gpufit/apply/history_seal.h"
#include "gpufit/apply/object_diff.h"
#include "gpufit/apply/soak.h"
#include "gpufit/core/rfc3339.h"

namespace gpufit::apply {
namespace {

using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A Deployment as the API server returns it, and the HAMi patch gpufit emits for it.
Json Live() {
  return Json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"ml","uid":"u1","resourceVersion":"7","generation":2},
    "spec":{"replicas":2,"template":{"spec":{"schedulerName":"default-scheduler","containers":[
      {"name":"sd","image":"sd:1","resources":{"limits":{"nvidia.com/gpu":"1"}}},
      {"name":"proxy","image":"envoy:1","resources":{"requests":{"cpu":"100m"}}}]}}},
    "status":{"readyReplicas":2}})");
}
Json HamiPatch() {
  return Json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ml"},
    "spec":{"template":{"spec":{"schedulerName":"hami-scheduler","containers":[
      {"name":"sd","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"60330"}}}]}}}})");
}

TEST(InversePatch, RestoresWhatTheStrategicPatchTouchedOnly) {
  const Json inverse = InversePatch(Live(), HamiPatch(), true);
  // By hand: schedulerName back to default-scheduler, gpumem deleted (null), nvidia.com/gpu kept
  // at its value, the container matched by name, the proxy container untouched.
  const Json expected = Json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"ml"},
    "spec":{"template":{"spec":{"schedulerName":"default-scheduler","containers":[
      {"name":"sd","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":null}}}]}}}})");
  EXPECT_EQ(inverse, expected) << inverse.dump(1);
}

TEST(InversePatch, AnAddedListElementIsDeletedAndAMigDeletionRestored) {
  // A MIG patch deletes nvidia.com/gpu (null) and adds a container the live object lacks.
  const Json patch = Json::parse(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"sd","resources":{"limits":{"nvidia.com/gpu":null,"nvidia.com/mig-3g.40gb":"1"}}},
      {"name":"new","image":"x"}],"tolerations":[{"key":"k","operator":"Exists"}]}}}})");
  const Json inverse = InversePatch(Live(), patch, true);
  const Json expected = Json::parse(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"sd","resources":{"limits":{"nvidia.com/gpu":"1","nvidia.com/mig-3g.40gb":null}}},
      {"name":"new","$patch":"delete"}],"tolerations":null}}}})");
  EXPECT_EQ(inverse, expected) << inverse.dump(1);
  // A merge patch (RFC 7386) replaces lists whole: the inverse is the saved list.
  const Json merge = InversePatch(Live(), patch, false);
  EXPECT_EQ(merge["spec"]["template"]["spec"]["containers"], Live()["spec"]["template"]["spec"]["containers"]);
}

TEST(Diff, OneLinePerLeafWithNamedListsAndServerFieldsLeftOut) {
  Json after = Live();
  after["spec"]["template"]["spec"]["schedulerName"] = "hami-scheduler";
  after["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = "60330";
  after["spec"]["template"]["spec"]["containers"][1]["resources"]["requests"].erase("cpu");
  after["metadata"]["resourceVersion"] = "8";
  after["metadata"]["generation"] = 3;
  after["status"]["readyReplicas"] = 1;
  EXPECT_THAT(Diff(Live(), after),
              ElementsAre("+ spec.template.spec.containers[sd].resources.limits.nvidia.com/gpumem: \"60330\"",
                          "- spec.template.spec.containers[proxy].resources.requests.cpu: \"100m\"",
                          "~ spec.template.spec.schedulerName: \"default-scheduler\" -> \"hami-scheduler\""));
  EXPECT_TRUE(Diff(Live(), Live()).empty());
}

TEST(Guardrails, WindowsByDayTimeAndPastMidnight) {
  // 2026-12-05 is a Saturday (day 20427 since 1970-01-01, a Thursday: 20427 % 7 = 1 -> Thu + 2).
  Result<double> sat_0300 = ParseRfc3339("2026-12-05T03:00:00Z");
  Result<double> sat_0600 = ParseRfc3339("2026-12-05T06:00:00Z");
  Result<double> sun_0100 = ParseRfc3339("2026-12-06T01:00:00Z");
  Result<double> sun_0300 = ParseRfc3339("2026-12-06T03:00:00Z");
  ASSERT_TRUE(sat_0300 && sat_0600 && sun_0100 && sun_0300);
  Result<std::vector<MaintenanceWindow>> w = ParseWindows("Sat 02:00-06:00, Sat 23:00-02:00");
  ASSERT_TRUE(w) << w.error().message;
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[1].text, "Sat 23:00-02:00");  // as given, without the blanks around it
  EXPECT_EQ(WindowAt(*w, *sat_0300), &(*w)[0]);
  EXPECT_EQ(WindowAt(*w, *sat_0600), nullptr);   // the end is not in it
  EXPECT_EQ(WindowAt(*w, *sun_0100), &(*w)[1]);  // Saturday's window past midnight
  EXPECT_EQ(WindowAt(*w, *sun_0300), nullptr);
  Result<std::vector<MaintenanceWindow>> every = ParseWindows("* 00:00-24:00");
  ASSERT_TRUE(every);
  EXPECT_NE(WindowAt(*every, *sun_0300), nullptr);
  for (const char* bad : {"Sat 2:00-06:00", "Fri 25:00-26:00", "Mon 03:00-03:00", "Sunday 01:00-02:00"})
    EXPECT_FALSE(ParseWindow(bad)) << bad;
  EXPECT_THAT(ParseWindow("Fri 25:00-26:00").error().message, HasSubstr("Fri 25:00-26:00"));
}

// Issue 50: every day of one week (2026-12-06 is a Sunday in the Gregorian calendar), at the
// last second before midnight UTC, at midnight and just after. A day's window holds on that day
// only; listed before '*', it is the one named on its day and '*' is named on the six others;
// a window past midnight holds from its start to midnight and on the next day until its end,
// Saturday's into Sunday included.
TEST(Guardrails, EveryDayOfTheWeekAroundMidnightUtc) {
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  Result<double> sunday = ParseRfc3339("2026-12-06T00:00:00Z");
  ASSERT_TRUE(sunday);
  const double kDay = 86400;
  for (int d = 0; d < 7; ++d) {
    const double start = *sunday + d * kDay;  // 00:00:00 of day d
    Result<std::vector<MaintenanceWindow>> first = ParseWindows(fmt::format("{} 00:00-24:00, * 00:00-24:00", kDays[d]));
    Result<std::vector<MaintenanceWindow>> late = ParseWindows(fmt::format("{} 23:30-00:30", kDays[d]));
    ASSERT_TRUE(first && late);
    for (int other = 0; other < 7; ++other) {
      const double day = *sunday + other * kDay;
      for (double t : {day, day + 0.5, day + 60, day + kDay - 60, day + kDay - 0.5}) {
        const MaintenanceWindow* w = WindowAt(*first, t);
        ASSERT_NE(w, nullptr) << FormatRfc3339(t);
        EXPECT_EQ(w->text, other == d ? fmt::format("{} 00:00-24:00", kDays[d]) : "* 00:00-24:00")
            << kDays[d] << " at " << FormatRfc3339(t);
      }
    }
    // The window past midnight: 23:30 of day d to 00:30 of day d + 1 (Sat -> Sun wraps the week).
    const double midnight = start + kDay;
    EXPECT_EQ(WindowAt(*late, midnight - 1801), nullptr) << kDays[d];        // 23:29:59
    EXPECT_NE(WindowAt(*late, midnight - 1800), nullptr) << kDays[d];        // 23:30:00
    EXPECT_NE(WindowAt(*late, midnight - 0.5), nullptr) << kDays[d];         // 23:59:59.5
    EXPECT_NE(WindowAt(*late, midnight), nullptr) << kDays[d];               // 00:00:00, the next day
    EXPECT_NE(WindowAt(*late, midnight + 1799), nullptr) << kDays[d];        // 00:29:59
    EXPECT_EQ(WindowAt(*late, midnight + 1800), nullptr) << kDays[d];        // 00:30:00: the end is not in it
    EXPECT_EQ(WindowAt(*late, start + 60), nullptr) << kDays[d];             // 00:01 of day d itself
    EXPECT_EQ(WindowAt(*late, midnight + kDay - 60), nullptr) << kDays[d];   // 23:59 of day d + 1
  }
  // Before 1970 too (the floor of a negative minute): 1969-12-31 was a Wednesday.
  Result<std::vector<MaintenanceWindow>> wed = ParseWindows("Wed 23:00-24:00");
  ASSERT_TRUE(wed);
  EXPECT_NE(WindowAt(*wed, -0.5), nullptr);
  EXPECT_EQ(WindowAt(*wed, 0), nullptr);
}

TEST(Guardrails, ControlConfigMapAndOptOut) {
  Result<Control> c =
      ReadControl(Json::parse(R"({"data":{"stop":"true","maintenance-windows":"* 01:00-02:00"}})"), "cm");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->stop);
  EXPECT_EQ(c->windows.size(), 1u);
  EXPECT_FALSE(ReadControl(Json::parse(R"({"data":{"stop":"yes"}})"), "cm x/y"));
  EXPECT_THAT(ReadControl(Json::parse(R"({"data":{"stop":"yes"}})"), "cm x/y").error().message, HasSubstr("cm x/y"));
  EXPECT_FALSE(ReadControl(Json::object(), "cm")->stop);
  EXPECT_TRUE(Excluded(Json::parse(R"({"metadata":{"annotations":{"gpufit.io/exclude":"true"}}})")));
  EXPECT_FALSE(Excluded(Json::parse(R"({"metadata":{"annotations":{"gpufit.io/exclude":"false"}}})")));
  EXPECT_FALSE(Excluded(Json::parse(R"({"metadata":{"annotations":{"gpufit.io/exclude":"False"}}})")));
  EXPECT_TRUE(Excluded(Json::parse(R"({"metadata":{"annotations":{"gpufit.io/exclude":"True"}}})")));
  EXPECT_TRUE(Excluded(Json::parse(R"({"metadata":{"annotations":{"gpufit.io/exclude":"yes"}}})")));
  EXPECT_FALSE(Excluded(Json::parse(R"({"metadata":{"annotations":{"other":"true"}}})")));
}

Json Pod(const std::string& name, const std::string& phase, Json statuses, const std::string& created) {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"creationTimestamp", created}}},
          {"status", {{"phase", phase}, {"containerStatuses", statuses}}}};
}

TEST(Soak, OomKilledRestartsAndPendingSinceTheWave) {
  const double since = *ParseRfc3339("2026-12-06T08:00:00Z");
  const Json running = {{"name", "sd"}, {"restartCount", 0}, {"state", {{"running", Json::object()}}}};
  Json before = {{"items", {Pod("a", "Running", {running}, "2026-12-06T07:00:00Z")}}};
  const RestartBaseline baseline = Baseline(before);
  EXPECT_TRUE(FindBreaches(before, baseline, since, since + 60, 300).empty());
  // An OOM kill before the wave does not count; one after it does, at its finishedAt.
  Json old_oom = running;
  old_oom["restartCount"] = 0;
  old_oom["lastState"] = {
      {"terminated", {{"reason", "OOMKilled"}, {"exitCode", 137}, {"finishedAt", "2026-12-06T07:30:00Z"}}}};
  EXPECT_TRUE(FindBreaches({{"items", {Pod("a", "Running", {old_oom}, "2026-12-06T07:00:00Z")}}}, baseline, since,
                           since + 60, 300)
                  .empty());
  Json oom = running;
  oom["restartCount"] = 1;
  oom["lastState"] = {
      {"terminated", {{"reason", "OOMKilled"}, {"exitCode", 137}, {"finishedAt", "2026-12-06T08:00:42Z"}}}};
  std::vector<Breach> b =
      FindBreaches({{"items", {Pod("b", "Running", {oom}, "2026-12-06T08:00:10Z")}}}, baseline, since, since + 60, 300);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].reason, "OOMKilled");
  EXPECT_EQ(b[0].pod, "ml/b");
  EXPECT_DOUBLE_EQ(b[0].at_s, since + 42);
  EXPECT_THAT(b[0].detail, HasSubstr("exit code 137"));
  // A restart of another reason: counted against the baseline.
  Json crashed = running;
  crashed["restartCount"] = 2;
  crashed["lastState"] = {{"terminated", {{"reason", "Error"}, {"finishedAt", "2026-12-06T08:00:30Z"}}}};
  b = FindBreaches({{"items", {Pod("a", "Running", {crashed}, "2026-12-06T07:00:00Z")}}}, baseline, since, since + 60,
                   300);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].reason, "restarted");
  EXPECT_THAT(b[0].detail, HasSubstr("2 time(s)"));
  // Pending: only past pending_s since the later of its creation and the wave.
  const Json pending = {{"items", {Pod("c", "Pending", Json::array(), "2026-12-06T08:01:00Z")}}};
  EXPECT_TRUE(FindBreaches(pending, baseline, since, since + 60 + 299, 300).empty());
  b = FindBreaches(pending, baseline, since, since + 60 + 301, 300);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].reason, "Pending");
  EXPECT_DOUBLE_EQ(b[0].at_s, since + 360);
}

TEST(Soak, GpuMemoryAtTheCapFromPrometheus) {
  Json pod = Pod("a", "Running", Json::array(), "2026-12-06T07:00:00Z");
  pod["spec"]["containers"] = Json::parse(R"([{"name":"sd","resources":{"limits":{"nvidia.com/gpumem":"30000"}}},
                                               {"name":"side","resources":{"limits":{"nvidia.com/gpumem":"2k"}}}])");
  Json uncapped = Pod("b", "Running", Json::array(), "2026-12-06T07:00:00Z");
  uncapped["spec"]["containers"] = Json::parse(R"([{"name":"sd"}])");
  const Json pods = {{"items", {pod, uncapped}}};
  // The pod's cap is 32000 MiB, the sum of its containers' (2k: how the API server spells 2000).
  EXPECT_TRUE(MemoryAtCap(pods, {{"ml/a", 31999}, {"ml/b", 80000}}, 100).empty());
  const std::vector<Breach> b = MemoryAtCap(pods, {{"ml/a", 32000}}, 100);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].pod, "ml/a");
  EXPECT_THAT(b[0].detail, HasSubstr("32000 MiB of GPU memory in use, its nvidia.com/gpumem cap is 32000 MiB"));
}

TEST(ChangeSet, ReadmeRowsInTheReadmesOrderWithStrategies) {
  const fs::path dir = fs::temp_directory_path() / ("gpufit-apply-changes-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "README.md")
      << "# Manifests\n\n| file | changes | why | apply |\n|---|---|---|---|\n"
         "| `workload-ml-deployment-web.yaml` | caps \\| more | why | `kubectl patch deployment web -n ml --type "
         "strategic --patch-file workload-ml-deployment-web.yaml` |\n"
         "| `workload-ml-job-j.yaml` | c | w | `kustomize: list workload-ml-job-j.yaml under patches: of the Job's "
         "source` |\n"
         "| `priorityclass-gpufit-inference.yaml` | c | w | `kubectl apply -f priorityclass-gpufit-inference.yaml` |\n"
         "| `configmap-gpu-operator-gpufit-device-plugin-config.yaml` | c | w | `kubectl apply -f "
         "configmap-gpu-operator-gpufit-device-plugin-config.yaml` |\n\n## Notes\n";
  std::ofstream(dir / "workload-ml-deployment-web.yaml") << HamiPatch().dump();
  std::ofstream(dir / "workload-ml-job-j.yaml")
      << "apiVersion: \"batch/v1\"\nkind: \"Job\"\nmetadata:\n  name: \"j\"\n  namespace: \"ml\"\n";
  std::ofstream(dir / "priorityclass-gpufit-inference.yaml")
      << "apiVersion: \"scheduling.k8s.io/v1\"\nkind: \"PriorityClass\"\nmetadata:\n  name: "
         "\"gpufit-inference\"\nvalue: 1000\n";
  std::ofstream(dir / "configmap-gpu-operator-gpufit-device-plugin-config.yaml")
      << "apiVersion: \"v1\"\nkind: \"ConfigMap\"\nmetadata:\n  name: \"gpufit-device-plugin-config\"\n  "
         "namespace: \"gpu-operator\"\ndata:\n  a: \"1\"\n";
  const Json plan = {{"backtest", {{"status", Json::object()}}}, {"options", {{"sharing", "hami"}}}};
  Result<std::vector<Change>> c = ReadChanges(dir, plan);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 4u);
  EXPECT_EQ((*c)[0].file, "configmap-gpu-operator-gpufit-device-plugin-config.yaml");
  EXPECT_EQ((*c)[0].ref.Path(), "/api/v1/namespaces/gpu-operator/configmaps/gpufit-device-plugin-config");
  EXPECT_EQ((*c)[0].strategy, "colocation");
  EXPECT_EQ((*c)[1].ref.Path(), "/apis/scheduling.k8s.io/v1/priorityclasses/gpufit-inference");
  EXPECT_EQ((*c)[1].strategy, "lending");
  EXPECT_EQ((*c)[1].body["value"], 1000);
  EXPECT_EQ((*c)[3].method, Change::Method::kManual);
  EXPECT_EQ((*c)[2].ref.Path(), "/apis/apps/v1/namespaces/ml/deployments/web");
  EXPECT_EQ((*c)[2].what, "caps | more");
  EXPECT_TRUE((*c)[2].workload);
  EXPECT_EQ((*c)[2].patch_type, "strategic");
  EXPECT_EQ((*c)[2].ref.WorkloadKey(), "deployment/ml/web");
  // A row naming a missing file, and an apply command of another form, are refused by line.
  std::ofstream(dir / "README.md", std::ios::app) << "| file | changes | why | apply |\n|---|---|---|---|\n"
                                                     "| `gone.yaml` | c | w | `kubectl apply -f gone.yaml` |\n";
  Result<std::vector<Change>> gone = ReadChanges(dir, plan);
  ASSERT_FALSE(gone);
  EXPECT_THAT(gone.error().message, HasSubstr("README.md:13: names"));
  // A file of another kind than its name says, and a workload patch past the pod template.
  std::ofstream(dir / "priorityclass-gpufit-inference.yaml")
      << "apiVersion: \"rbac.authorization.k8s.io/v1\"\nkind: \"ClusterRoleBinding\"\nmetadata:\n  name: \"x\"\n";
  EXPECT_THAT(ReadChanges(dir, plan).error().message, HasSubstr("a ClusterRoleBinding in a priorityclass-*.yaml file"));
  std::ofstream(dir / "priorityclass-gpufit-inference.yaml")
      << "apiVersion: \"scheduling.k8s.io/v1\"\nkind: \"PriorityClass\"\nmetadata:\n  name: \"gpufit-inference\"\n";
  Json replicas = HamiPatch();
  replicas["spec"]["replicas"] = 0;
  std::ofstream(dir / "workload-ml-deployment-web.yaml") << replicas.dump();
  EXPECT_THAT(ReadChanges(dir, plan).error().message,
              HasSubstr("workload-ml-deployment-web.yaml: spec.replicas: not a field gpufit changes"));
  std::ofstream(dir / "workload-ml-deployment-web.yaml") << HamiPatch().dump();
  EXPECT_TRUE(CheckPlanJson(plan, "p.json"));
  EXPECT_EQ(CheckPlanJson(Json::object(), "p.json").error().message,
            "p.json: no backtest.status: not a plan.json of gpufit plan");
  fs::remove_all(dir);
}

TEST(History, RunRecordRoundTripsThroughItsSealedConfigMap) {
  const std::string key(64, 'a');
  RunRecord r;
  r.run = "20261206t080000z-abc123";
  r.started_s = *ParseRfc3339("2026-12-06T08:00:00Z");
  r.plan = "plan.json";
  r.state = "applied";
  r.verdict = "ok";
  r.changes.push_back({.file = "workload-ml-deployment-web.yaml",
                       .ref = {.api_version = "apps/v1", .kind = "Deployment", .ns = "ml", .name = "web"},
                       .method = "patch",
                       .patch_type = "strategic",
                       .wave = 1,
                       .intended_at_s = r.started_s + 4,
                       .applied_at_s = r.started_s + 5,
                       .reverted_at_s = r.started_s + 9,
                       .undo_kind = "patch",
                       .undo = InversePatch(Live(), HamiPatch(), true),
                       .body = HamiPatch(),
                       .diff = {"~ a: 1 -> 2"}});
  r.skipped = {"g.yaml: opted out"};
  const Json cm = RunConfigMap(r, "gpufit", key);
  EXPECT_EQ(cm["metadata"]["name"], "gpufit-apply-20261206t080000z-abc123");
  EXPECT_EQ(cm["metadata"]["annotations"]["gpufit.io/started"], "2026-12-06T08:00:00Z");
  // The seal is HMAC-SHA256 of "NAME\nTEXT", as OpenSSL's command computes it: RFC 4231's key
  // of case 2 on its message with a newline for the blank, `printf 'what do ya want \nfor
  // nothing?' | openssl dgst -sha256 -hmac Jefe`.
  EXPECT_EQ(Seal("Jefe", "what do ya want ", "for nothing?"),
            "2b9465add41e8aa0dbcc02871fef19654a8699bde87fd049e66a6aa765dbc5e1");
  EXPECT_EQ(cm["metadata"]["annotations"]["gpufit.io/seal"],
            Seal(key, "gpufit-apply-20261206t080000z-abc123", cm["data"]["run.json"].get<std::string>()));
  Result<RunRecord> back = ReadRunConfigMap(cm, "cm", key);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->changes.at(0).undo, r.changes[0].undo);
  EXPECT_EQ(back->changes.at(0).body, HamiPatch());
  EXPECT_DOUBLE_EQ(back->changes.at(0).intended_at_s, r.started_s + 4);
  EXPECT_DOUBLE_EQ(back->changes.at(0).applied_at_s, r.started_s + 5);
  EXPECT_DOUBLE_EQ(back->changes.at(0).reverted_at_s, r.started_s + 9);
  EXPECT_EQ(back->skipped, r.skipped);
  EXPECT_FALSE(ReadRunConfigMap(Json::parse(R"({"data":{"run.json":"{}"}})"), "cm", key));
  // Another key (a record planted by whoever can write ConfigMaps there, sealed with a guess).
  EXPECT_THAT(ReadRunConfigMap(cm, "cm", std::string(64, 'b')).error().message, HasSubstr("its seal"));
  // An edited record, even one byte: a Namespace to delete.
  Json edited = cm;
  Json run = Json::parse(edited["data"]["run.json"].get<std::string>());
  run["changes"][0]["object"] = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"namespace", ""}, {"name", "ml"}};
  run["changes"][0]["undo_kind"] = "delete";
  edited["data"]["run.json"] = run.dump(1);
  EXPECT_THAT(ReadRunConfigMap(edited, "cm", key).error().message, HasSubstr("does not match its record"));
  // Sealed (the key stolen), still refused: not a change gpufit apply makes.
  edited["metadata"]["annotations"]["gpufit.io/seal"] =
      Seal(key, "gpufit-apply-20261206t080000z-abc123", edited["data"]["run.json"].get<std::string>());
  EXPECT_THAT(ReadRunConfigMap(edited, "cm", key).error().message, HasSubstr("a Namespace in a workload-*.yaml file"));
  // A genuine record copied under another run's name.
  Json moved = cm;
  moved["metadata"]["name"] = "gpufit-apply-20261206t090000z-zzz999";
  moved["metadata"]["annotations"]["gpufit.io/seal"] =
      Seal(key, "gpufit-apply-20261206t090000z-zzz999", cm["data"]["run.json"].get<std::string>());
  EXPECT_THAT(ReadRunConfigMap(moved, "cm", key).error().message, HasSubstr("holds the record of run"));
  Json unlabelled = cm;
  unlabelled["metadata"].erase("labels");
  EXPECT_THAT(ReadRunConfigMap(unlabelled, "cm", key).error().message, HasSubstr("not labelled"));
}

TEST(History, RunIdsAreUniqueAndStartWithTheUtcSecond) {
  const double t = *ParseRfc3339("2026-12-07T18:15:00Z");
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const std::string id = NewRunId(t);
    EXPECT_TRUE(std::regex_match(id, std::regex("20261207t181500z-[a-z0-9]{6}"))) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);  // 36^6 = 2.2e9 ids a second: a collision among 100 has odds of 2e-6
}

}  // namespace
}  // namespace gpufit::apply

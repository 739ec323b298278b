// Issue 41: the Helm chart deploy/helm/gpufit. Linted (also --strict) and rendered by a real Helm
// (v3.21.4, built from the Go module proxy once per machine by scripts/helm-build); the rendered
// objects are checked field by field (the plan's ClusterRole writes nothing, the CronJob's
// arguments, every container's security context, the extender's TLS volume), and applied by a
// real kube-apiserver with dryRun=All (tests/support/kube_dry_run.h).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "kube_control_plane.h"
#include "kube_dry_run.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::testing::CommandResult;
using gpufit::testing::DryRunManifests;
using gpufit::testing::KubeControlPlane;
using gpufit::testing::RunCommand;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kNamespace = "gpufit-system";
const std::string kRelease = "gpufit";  // the objects are named gpufit-<part>

std::string Chart() { return gpufit::test_paths::SourcePath("deploy/helm/gpufit"); }

// The helm binary: scripts/helm-build builds it on the first call of a machine, then prints the
// cached path. Empty (and `error` set) when it cannot.
const std::string& HelmBin(std::string* error) {
  static std::string bin, failure;
  if (bin.empty() && failure.empty()) {
    const CommandResult r = RunCommand({"bash", gpufit::test_paths::SourcePath("scripts/helm-build")});
    if (r.rc == 0 && !r.out.empty()) {
      bin = r.out.substr(0, r.out.find('\n'));
    } else {
      failure = "scripts/helm-build: " + r.err + r.out;
    }
  }
  if (error != nullptr) *error = failure;
  return bin;
}

CommandResult Helm(std::vector<std::string> args) {
  args.insert(args.begin(), HelmBin(nullptr));
  return RunCommand(args);
}

// `helm template` of the chart with `--set` values, as the list of objects it renders.
std::vector<YAML::Node> Render(const std::vector<std::string>& sets, std::string* text = nullptr) {
  std::vector<std::string> args = {"template", kRelease, Chart(), "--namespace", kNamespace};
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  const CommandResult r = Helm(args);
  EXPECT_EQ(r.rc, 0) << r.err;
  if (text != nullptr) *text = r.out;
  std::vector<YAML::Node> objects;
  for (const YAML::Node& doc : YAML::LoadAll(r.out))
    if (doc.IsMap()) objects.push_back(doc);
  return objects;
}

// The documents of a YAML stream, as text (helm's quoting kept: "8888" stays a string, which a
// round trip through yaml-cpp's emitter would lose).
std::vector<std::string> Documents(const std::string& stream) {
  std::vector<std::string> docs(1);
  std::istringstream in(stream);
  for (std::string line; std::getline(in, line);) {
    if (line == "---") {
      docs.emplace_back();
    } else {
      docs.back() += line + "\n";
    }
  }
  std::erase_if(docs, [](const std::string& d) { return !YAML::Load(d).IsMap(); });
  return docs;
}

std::vector<std::string> Strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  for (const YAML::Node& n : seq) out.push_back(n.as<std::string>());
  return out;
}

std::set<std::string> KindsAndNames(const std::vector<YAML::Node>& objects) {
  std::set<std::string> out;
  for (const YAML::Node& o : objects)
    out.insert(o["kind"].as<std::string>() + "/" + o["metadata"]["name"].as<std::string>());
  return out;
}

YAML::Node Find(const std::vector<YAML::Node>& objects, const std::string& kind, const std::string& name) {
  for (const YAML::Node& o : objects)
    if (o["kind"].as<std::string>() == kind && o["metadata"]["name"].as<std::string>() == name) return o;
  ADD_FAILURE() << "no " << kind << "/" << name << " rendered";
  return YAML::Node();
}

// The pod spec of a CronJob or a Deployment.
YAML::Node PodSpec(const YAML::Node& o) {
  if (o["kind"].as<std::string>() == "CronJob") return o["spec"]["jobTemplate"]["spec"]["template"]["spec"];
  return o["spec"]["template"]["spec"];
}

// The version `gpufit --version` prints ("gpufit 0.1.0 (git ...)"), read from the binary itself.
std::string BinaryVersion() {
  const fs::path dir = Scratch("helm-version");
  const auto r = Gpufit("--version", dir);
  EXPECT_EQ(r.exit_code, 0);
  const std::string prefix = "gpufit ";
  EXPECT_EQ(r.out.rfind(prefix, 0), 0u) << r.out;
  return r.out.substr(prefix.size(), r.out.find(' ', prefix.size()) - prefix.size());
}

// Non-root, read-only root filesystem, no privilege escalation, every capability dropped: on
// every container and pod the chart renders.
void ExpectLockedDown(const std::vector<YAML::Node>& objects) {
  int pods = 0;
  for (const YAML::Node& o : objects) {
    const std::string kind = o["kind"].as<std::string>();
    if (kind != "CronJob" && kind != "Deployment") continue;
    ++pods;
    SCOPED_TRACE(kind + "/" + o["metadata"]["name"].as<std::string>());
    const YAML::Node spec = PodSpec(o);
    EXPECT_TRUE(spec["securityContext"]["runAsNonRoot"].as<bool>());
    EXPECT_GT(spec["securityContext"]["runAsUser"].as<int>(), 0);
    EXPECT_EQ(spec["securityContext"]["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
    for (const YAML::Node& c : spec["containers"]) {
      const YAML::Node sc = c["securityContext"];
      EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>());
      EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>());
      EXPECT_THAT(Strings(sc["capabilities"]["drop"]), ElementsAre("ALL"));
      EXPECT_FALSE(sc["privileged"].IsDefined());
    }
  }
  EXPECT_GT(pods, 0);
}

class HelmChart : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    if (HelmBin(&error).empty()) FAIL() << error;
  }
};

TEST_F(HelmChart, LintsStrictWithEveryOption) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{},
        {"extender.enabled=true", "web.enabled=true", "plan.prometheus=http://prometheus.monitoring:9090",
         "controller.enabled=true", "controller.apply.enabled=true"}}) {
    std::vector<std::string> args = {"lint", "--strict", Chart()};
    for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
    const CommandResult r = Helm(args);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("1 chart(s) linted, 0 chart(s) failed"));
  }
  // values.schema.json refuses what would render a broken object or a wrong command line.
  const CommandResult no_scheme = Helm({"lint", "--strict", Chart(), "--set", "plan.prometheus=prometheus:9090"});
  EXPECT_NE(no_scheme.rc, 0) << no_scheme.out;
  EXPECT_THAT(no_scheme.out + no_scheme.err, HasSubstr("/plan/prometheus"));
  const CommandResult one_mode = Helm({"lint", "--strict", Chart(), "--set", "reports.accessModes=ReadWriteOnce"});
  EXPECT_NE(one_mode.rc, 0) << one_mode.out;
  EXPECT_THAT(one_mode.out + one_mode.err, HasSubstr("/reports/accessModes"));
}

TEST_F(HelmChart, DefaultsRenderAReadOnlyScheduledPlan) {
  const std::vector<YAML::Node> objects = Render({});
  EXPECT_EQ(KindsAndNames(objects),
            (std::set<std::string>{"ServiceAccount/gpufit-plan", "ClusterRole/gpufit-plan-reader",
                                   "ClusterRoleBinding/gpufit-plan-reader", "PersistentVolumeClaim/gpufit-reports",
                                   "CronJob/gpufit-plan"}));
  // The ClusterRole reads and never writes: get/list/watch on the objects plan reads, get on
  // the service proxy it reaches Prometheus through.
  const YAML::Node role = Find(objects, "ClusterRole", "gpufit-plan-reader");
  const std::set<std::string> read_only = {"get", "list", "watch"};
  std::set<std::string> readable, proxied;
  for (const YAML::Node& rule : role["rules"]) {
    for (const std::string& verb : Strings(rule["verbs"])) {
      EXPECT_TRUE(read_only.count(verb)) << "verb " << verb;
    }
    const std::vector<std::string> verbs = Strings(rule["verbs"]);
    for (const std::string& res : Strings(rule["resources"])) {
      EXPECT_NE(res, "*");
      if (res == "services/proxy") {
        EXPECT_THAT(verbs, ElementsAre("get"));
        proxied.insert(res);
      } else if (std::set<std::string>(verbs.begin(), verbs.end()) == read_only) {
        readable.insert(res);
      }
    }
    EXPECT_THAT(Strings(rule["apiGroups"]), ElementsAre(""));
  }
  EXPECT_EQ(readable, (std::set<std::string>{"namespaces", "nodes", "pods", "services"}));
  EXPECT_EQ(proxied, std::set<std::string>{"services/proxy"});
  const YAML::Node binding = Find(objects, "ClusterRoleBinding", "gpufit-plan-reader");
  EXPECT_EQ(binding["roleRef"]["name"].as<std::string>(), "gpufit-plan-reader");
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(), "gpufit-plan");
  EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(), kNamespace);

  const YAML::Node cron = Find(objects, "CronJob", "gpufit-plan");
  EXPECT_EQ(cron["metadata"]["namespace"].as<std::string>(), kNamespace);
  EXPECT_EQ(cron["spec"]["schedule"].as<std::string>(), "0 6 * * *");
  EXPECT_EQ(cron["spec"]["concurrencyPolicy"].as<std::string>(), "Forbid");
  const YAML::Node pod = PodSpec(cron);
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "gpufit-plan");
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node plan = pod["containers"][0];
  // No --prometheus when none is set (gpufit discovers it); the long --out, never -o; the HTML
  // report as index.html, which the web server serves at / (--out alone writes no report).
  EXPECT_THAT(Strings(plan["args"]), ElementsAre("plan", "--kubeconfig", "in-cluster", "--out", "/reports", "--report",
                                                 "/reports/index.html"));
  // The image of `make image`: gpufit:<the binary's version>, as deploy/kubernetes names it.
  EXPECT_EQ(plan["image"].as<std::string>(), "gpufit:" + BinaryVersion());
  const YAML::Node deploy =
      YAML::LoadFile(gpufit::test_paths::SourcePath("deploy/kubernetes/deployment.yaml"))["spec"]["template"]["spec"];
  EXPECT_EQ(plan["image"].as<std::string>(), deploy["containers"][0]["image"].as<std::string>());
  EXPECT_EQ(pod["securityContext"]["runAsUser"].as<int>(), 65532);  // the image's user
  // /reports is the report volume's claim; /tmp an emptyDir under the read-only root.
  std::map<std::string, std::string> mounts;
  for (const YAML::Node& m : plan["volumeMounts"])
    mounts[m["mountPath"].as<std::string>()] = m["name"].as<std::string>();
  EXPECT_EQ(mounts, (std::map<std::string, std::string>{{"/reports", "reports"}, {"/tmp", "tmp"}}));
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "reports") {
      EXPECT_EQ(v["persistentVolumeClaim"]["claimName"].as<std::string>(), "gpufit-reports");
    } else {
      EXPECT_TRUE(v["emptyDir"].IsDefined());
    }
  }
  ExpectLockedDown(objects);
}

// The CronJob's own arguments, run here: the cluster's inputs (--kubeconfig in-cluster) swapped
// for a telemetry file and a target, /reports for a scratch folder. The web server's root
// (nginx's /usr/share/nginx/html, the same volume) then holds index.html, the HTML report it
// serves at /, beside plan.json and plan.md.
TEST_F(HelmChart, TheCronJobsArgumentsWriteTheReportTheWebServerServes) {
  const std::vector<YAML::Node> objects = Render({"web.enabled=true"});
  const fs::path dir = Scratch("helm-cronjob-args");
  const fs::path reports = dir / "reports";
  std::string args;
  const std::vector<std::string> rendered =
      Strings(PodSpec(Find(objects, "CronJob", "gpufit-plan"))["containers"][0]["args"]);
  for (std::size_t i = 0; i < rendered.size(); ++i) {
    if (rendered[i] == "--kubeconfig") {
      args +=
          " --telemetry " + gpufit::test_paths::SourcePath("tests/e2e/bad_inputs/telemetry.csv") + " --gpu h100-80gb";
      ++i;
      continue;
    }
    std::string a = rendered[i];
    if (a.rfind("/reports", 0) == 0) a = reports.string() + a.substr(8);
    args += " " + a;
  }
  const auto r = Gpufit("-q" + args, dir);
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  EXPECT_TRUE(fs::exists(reports / "plan.json"));
  EXPECT_TRUE(fs::exists(reports / "plan.md"));
  ASSERT_TRUE(fs::exists(reports / "index.html")) << args;
  std::ifstream html(reports / "index.html");
  std::string head(15, '\0');
  html.read(head.data(), static_cast<std::streamsize>(head.size()));
  EXPECT_EQ(head, "<!doctype html>");
  const YAML::Node web = PodSpec(Find(objects, "Deployment", "gpufit-web"))["containers"][0];
  for (const YAML::Node& m : web["volumeMounts"]) {
    if (m["name"].as<std::string>() == "reports") {
      EXPECT_EQ(m["mountPath"].as<std::string>(), "/usr/share/nginx/html");
    }
  }
}

TEST_F(HelmChart, PrometheusAndExtraArgsFollowTheDefaults) {
  const std::vector<YAML::Node> objects = Render({"plan.prometheus=https://prometheus.monitoring:9090",
                                                  "plan.extraArgs={--gpu,a100-80gb}", "plan.schedule=*/30 * * * *"});
  const YAML::Node cron = Find(objects, "CronJob", "gpufit-plan");
  EXPECT_EQ(cron["spec"]["schedule"].as<std::string>(), "*/30 * * * *");
  EXPECT_THAT(Strings(PodSpec(cron)["containers"][0]["args"]),
              ElementsAre("plan", "--kubeconfig", "in-cluster", "--out", "/reports", "--report", "/reports/index.html",
                          "--prometheus", "https://prometheus.monitoring:9090", "--gpu", "a100-80gb"));
}

TEST_F(HelmChart, ExtenderAndWebServerAreOptions) {
  const std::vector<YAML::Node> objects = Render({"extender.enabled=true", "web.enabled=true"});
  const std::set<std::string> names = KindsAndNames(objects);
  for (const char* want :
       {"ServiceAccount/gpufit-extender", "ClusterRole/gpufit-extender-binder",
        "ClusterRoleBinding/gpufit-extender-binder", "Deployment/gpufit-extender", "Service/gpufit-extender",
        "NetworkPolicy/gpufit-extender", "Deployment/gpufit-web", "Service/gpufit-web", "CronJob/gpufit-plan"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_EQ(names.size(), 13u);  // the plan's 5, the extender's 6, the web server's 2

  // The extender runs deploy/kubernetes's serve command line, HTTPS with the TLS Secret.
  const YAML::Node extender = Find(objects, "Deployment", "gpufit-extender");
  const YAML::Node pod = PodSpec(extender);
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "gpufit-extender");
  const YAML::Node container = pod["containers"][0];
  const YAML::Node deploy =
      YAML::LoadFile(gpufit::test_paths::SourcePath("deploy/kubernetes/deployment.yaml"))["spec"]["template"]["spec"];
  EXPECT_EQ(Strings(container["args"]), Strings(deploy["containers"][0]["args"]));
  const std::vector<std::string> args = Strings(container["args"]);
  std::string tls_mount;
  for (const YAML::Node& m : container["volumeMounts"])
    if (m["name"].as<std::string>() == "tls") {
      tls_mount = m["mountPath"].as<std::string>();
      EXPECT_TRUE(m["readOnly"].as<bool>());
    }
  ASSERT_FALSE(tls_mount.empty());
  for (const char* flag : {"--tls-cert-file", "--tls-key-file", "--client-ca-file"}) {
    const auto it = std::find(args.begin(), args.end(), flag);
    ASSERT_NE(it, args.end()) << flag;
    EXPECT_EQ((it + 1)->rfind(tls_mount + "/", 0), 0u) << flag << " " << *(it + 1);
  }
  bool tls_volume = false;
  for (const YAML::Node& v : pod["volumes"])
    if (v["name"].as<std::string>() == "tls") {
      tls_volume = true;
      EXPECT_EQ(v["secret"]["secretName"].as<std::string>(), "gpufit-extender-tls");
    }
  EXPECT_TRUE(tls_volume);
  EXPECT_EQ(container["readinessProbe"]["httpGet"]["scheme"].as<std::string>(), "HTTPS");
  EXPECT_EQ(Find(objects, "Service", "gpufit-extender")["spec"]["ports"][0]["port"].as<int>(), 8888);

  // The plan's role stays read-only beside the extender's binder role.
  for (const YAML::Node& rule : Find(objects, "ClusterRole", "gpufit-plan-reader")["rules"])
    for (const std::string& verb : Strings(rule["verbs"])) {
      EXPECT_NE(verb, "create");
    }

  // The web server serves the report volume read-only.
  const YAML::Node web = PodSpec(Find(objects, "Deployment", "gpufit-web"));
  for (const YAML::Node& v : web["volumes"])
    if (v["name"].as<std::string>() == "reports") {
      EXPECT_EQ(v["persistentVolumeClaim"]["claimName"].as<std::string>(), "gpufit-reports");
      EXPECT_TRUE(v["persistentVolumeClaim"]["readOnly"].as<bool>());
    }
  for (const YAML::Node& m : web["containers"][0]["volumeMounts"])
    if (m["name"].as<std::string>() == "reports") {
      EXPECT_TRUE(m["readOnly"].as<bool>());
    }
  EXPECT_FALSE(web["automountServiceAccountToken"].as<bool>());
  ExpectLockedDown(objects);
}

// Issue 42: `gpufit controller` as a Deployment (its /metrics must answer between runs) with
// the plan's read-only ServiceAccount, HTTPS with the TLS Secret and the token Secret, and a
// Service Prometheus finds by the prometheus.io annotations; the webhook URL from a Secret.
TEST_F(HelmChart, ControllerIsAnOption) {
  const std::vector<YAML::Node> objects = Render({"controller.enabled=true", "controller.webhookSecretName=hook",
                                                  "controller.interval=30m", "controller.extraArgs={--gpu,h100-80gb}"});
  const std::set<std::string> names = KindsAndNames(objects);
  EXPECT_TRUE(names.count("Deployment/gpufit-controller"));
  EXPECT_TRUE(names.count("Service/gpufit-controller"));
  EXPECT_TRUE(names.count("CronJob/gpufit-plan"));  // the HTML report stays
  EXPECT_EQ(names.size(), 7u);                      // the plan's 5, the controller's 2
  const YAML::Node pod = PodSpec(Find(objects, "Deployment", "gpufit-controller"));
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "gpufit-plan");
  const YAML::Node container = pod["containers"][0];
  EXPECT_THAT(Strings(container["args"]),
              ElementsAre("controller", "--kubeconfig", "in-cluster", "--interval", "30m", "--out", "/plans",
                          "--metrics-listen", "0.0.0.0:9464", "--metrics-tls-cert-file", "/tls/tls.crt",
                          "--metrics-tls-key-file", "/tls/tls.key", "--metrics-auth-token-file", "/token/token",
                          "--webhook", "$(GPUFIT_WEBHOOK_URL)", "--gpu", "h100-80gb"));
  EXPECT_EQ(container["env"][0]["valueFrom"]["secretKeyRef"]["name"].as<std::string>(), "hook");
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["scheme"].as<std::string>(), "HTTPS");
  std::map<std::string, std::string> secrets;
  for (const YAML::Node& v : pod["volumes"])
    if (v["secret"]) secrets[v["name"].as<std::string>()] = v["secret"]["secretName"].as<std::string>();
  EXPECT_EQ(secrets, (std::map<std::string, std::string>{{"tls", "gpufit-controller-tls"},
                                                         {"token", "gpufit-controller-token"}}));
  const YAML::Node service = Find(objects, "Service", "gpufit-controller");
  EXPECT_EQ(service["metadata"]["annotations"]["prometheus.io/scrape"].as<std::string>(), "true");
  EXPECT_EQ(service["metadata"]["annotations"]["prometheus.io/scheme"].as<std::string>(), "https");
  EXPECT_EQ(service["spec"]["ports"][0]["port"].as<int>(), 9464);
  ExpectLockedDown(objects);
}

// Issue 42: controller.apply.enabled runs `gpufit controller --apply` as a ServiceAccount of its
// own: it may patch workloads (never create or delete them, never touch Secrets), keeps its
// history in the release's namespace, and the plan's identity stays read-only.
TEST_F(HelmChart, ControllerApplyWritesAsItsOwnIdentity) {
  const std::vector<YAML::Node> objects =
      Render({"controller.enabled=true", "controller.apply.enabled=true", "controller.apply.soakSeconds=900"});
  const std::set<std::string> names = KindsAndNames(objects);
  for (const char* name :
       {"ServiceAccount/gpufit-apply", "ClusterRole/gpufit-applier", "ClusterRoleBinding/gpufit-applier",
        "ClusterRole/gpufit-apply-workloads", "ClusterRoleBinding/gpufit-apply-workloads", "Role/gpufit-apply-history",
        "RoleBinding/gpufit-apply-history", "Role/gpufit-apply-lending", "ValidatingAdmissionPolicy/gpufit-apply-guard",
        "ValidatingAdmissionPolicyBinding/gpufit-apply-guard"})
    EXPECT_TRUE(names.count(name)) << name;
  const YAML::Node pod = PodSpec(Find(objects, "Deployment", "gpufit-controller"));
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "gpufit-apply");
  const std::vector<std::string> args = Strings(pod["containers"][0]["args"]);
  const std::string joined = fmt::format("{}", fmt::join(args, " "));
  EXPECT_THAT(joined, HasSubstr("--emit-manifests /plans/k8s --apply --apply-soak 900 --apply-history-namespace " +
                                std::string(kNamespace)));
  // What the applier may do, rule by rule: workloads are patched, never created or deleted.
  std::map<std::string, std::set<std::string>> verbs;  // "group/resource" -> verbs
  for (const YAML::Node& rule : Find(objects, "ClusterRole", "gpufit-applier")["rules"])
    for (const std::string& group : Strings(rule["apiGroups"]))
      for (const std::string& res : Strings(rule["resources"]))
        for (const std::string& verb : Strings(rule["verbs"])) verbs[group + "/" + res].insert(verb);
  // Issue 51: least privilege. Cluster-wide it reads; its writes are by name where RBAC allows
  // (PriorityClasses, Kueue objects); no Node patch and no ClusterPolicy without gpuOperator;
  // no services/proxy, no Secrets, no ConfigMaps outside its namespace.
  EXPECT_EQ(verbs["apps/deployments"], (std::set<std::string>{"get", "list"}));
  EXPECT_EQ(verbs["/events"], std::set<std::string>{"create"});
  EXPECT_EQ(verbs["/nodes"], (std::set<std::string>{"get", "list", "watch"}));
  EXPECT_FALSE(verbs.count("/services/proxy"));
  EXPECT_FALSE(verbs.count("/configmaps"));
  EXPECT_FALSE(verbs.count("nvidia.com/clusterpolicies"));
  // Server-side apply of an object that is not there yet creates it.
  EXPECT_EQ(verbs["scheduling.k8s.io/priorityclasses"],
            (std::set<std::string>{"get", "create", "patch", "update", "delete"}));
  for (const YAML::Node& rule : Find(objects, "ClusterRole", "gpufit-applier")["rules"])
    if (Strings(rule["apiGroups"]) == std::vector<std::string>{"scheduling.k8s.io"} &&
        Strings(rule["verbs"]) != std::vector<std::string>{"create"}) {
      EXPECT_THAT(Strings(rule["resourceNames"]), ElementsAre("gpufit-inference", "gpufit-night-lending"));
    }
  EXPECT_TRUE(verbs["kueue.x-k8s.io/clusterqueues"].count("create"));
  EXPECT_FALSE(verbs.count("/secrets"));
  for (const auto& [resource, set] : verbs) EXPECT_FALSE(set.count("*")) << resource;
  // Workload patches: every namespace by default, one RoleBinding per namespace when listed.
  EXPECT_THAT(Strings(Find(objects, "ClusterRole", "gpufit-apply-workloads")["rules"][0]["verbs"]),
              ElementsAre("patch"));
  const std::vector<YAML::Node> scoped = Render({"controller.enabled=true", "controller.apply.enabled=true",
                                                 "controller.apply.namespaces={ml,genai}", "controller.apply.gpuOperator=true"});
  const std::set<std::string> scoped_names = KindsAndNames(scoped);
  EXPECT_FALSE(scoped_names.count("ClusterRoleBinding/gpufit-apply-workloads"));
  int bindings = 0;
  for (const YAML::Node& o : scoped)
    if (o["kind"].as<std::string>() == "RoleBinding" &&
        o["metadata"]["name"].as<std::string>() == "gpufit-apply-workloads") {
      ++bindings;
      EXPECT_THAT(o["metadata"]["namespace"].as<std::string>(), ::testing::AnyOf("ml", "genai"));
    }
  EXPECT_EQ(bindings, 2);
  EXPECT_EQ(Find(scoped, "Role", "gpufit-apply-gpu-operator")["metadata"]["namespace"].as<std::string>(), "gpu-operator");
  const YAML::Node history = Find(objects, "Role", "gpufit-apply-history");
  EXPECT_EQ(history["metadata"]["namespace"].as<std::string>(), kNamespace);
  EXPECT_THAT(Strings(history["rules"][0]["resources"]), ElementsAre("configmaps"));
  EXPECT_THAT(Strings(history["rules"][2]["resourceNames"]), ElementsAre("gpufit-apply-key"));  // the history's key
  // The plan's ClusterRole is unchanged: read-only.
  for (const YAML::Node& rule : Find(objects, "ClusterRole", "gpufit-plan-reader")["rules"])
    for (const std::string& verb : Strings(rule["verbs"]))
      EXPECT_TRUE(verb == "get" || verb == "list" || verb == "watch");
  ExpectLockedDown(objects);
}

// Every object of the chart, with and without its options, applied by a real kube-apiserver
// (v1.37.2) with dryRun=All: schemas, defaulting, admission, unknown fields refused.
TEST_F(HelmChart, ServerSideDryRunAcceptsEveryObject) {
  const fs::path dir = Scratch("helm-dry-run");
  auto plane = KubeControlPlane::Start((dir / "plane").string());
  ASSERT_TRUE(plane) << plane.error().message;
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{},
        {"extender.enabled=true", "web.enabled=true", "plan.prometheus=http://prometheus.monitoring:9090",
         "plan.timeZone=Etc/UTC", "reports.storageClassName=standard", "extender.schedulerCIDRs={10.0.0.0/24}",
         "controller.enabled=true", "controller.webhookSecretName=hook", "controller.apply.enabled=true",
         "controller.apply.namespaces={default}", "controller.apply.gpuOperator=true",
         "controller.apply.gpuOperatorNamespace=default", "controller.apply.resourceClaims=true"}}) {
    SCOPED_TRACE(fmt::format("--set {}", fmt::join(sets, ",")));
    std::string text;
    const std::vector<YAML::Node> objects = Render(sets, &text);
    const std::vector<std::string> docs = Documents(text);
    ASSERT_EQ(docs.size(), objects.size());
    const fs::path out = dir / fmt::format("objects-{}", sets.size());
    fs::create_directories(out);
    for (std::size_t i = 0; i < docs.size(); ++i) std::ofstream(out / fmt::format("{:02}.yaml", i)) << docs[i];
    const gpufit::testing::ServerDryRun run = DryRunManifests(**plane, out);
    EXPECT_EQ(run.objects, objects.size());
    EXPECT_THAT(run.errors, ::testing::IsEmpty());
    EXPECT_THAT(run.warnings, ::testing::IsEmpty());
  }
}

}  // namespace

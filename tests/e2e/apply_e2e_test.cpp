// Issue 42: `gpufit apply` on a real control plane: the fixture, its cluster and its telemetry
// are in apply_fixture.h.
#include "apply_fixture.h"

namespace gpufit::e2e {
namespace {

TEST_F(ApplyE2e, DryRunCanaryOomRevertedAndRevertOfARun) {
  CliRun plan = Plan(72, "plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json doc = Json::parse(Slurp(dir_ / "plan" / "out" / "plan.json"));
  ASSERT_EQ(doc["backtest"]["status"]["colocation"]["status"], "held") << doc["backtest"]["status"].dump(1);
  const long cap_a = Cap("web-a"), cap_b = Cap("web-b"), cap_c = Cap("web-c");
  ASSERT_GT(cap_c, 0) << Slurp(dir_ / "plan" / "k8s" / "README.md");
  ASSERT_LT(cap_c, std::min(cap_a, cap_b));
  std::cout << "caps: web-a " << cap_a << ", web-b " << cap_b << ", web-c " << cap_c << " MiB\n";

  // 1. The dry run: the server's diff of each Deployment, nothing changed.
  CliRun dry = Apply("plan", "");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("Deployment ml/web-a (workload-ml-deployment-web-a.yaml, strategic patch):"));
  EXPECT_THAT(dry.out, HasSubstr("~ spec.template.spec.schedulerName: \"default-scheduler\" -> \"hami-scheduler\""));
  EXPECT_THAT(dry.out, HasSubstr("+ spec.template.spec.containers[srv].resources.limits.nvidia.com/gpumem: "));
  // Three Deployments, and night lending's two PriorityClasses and three Kueue objects.
  EXPECT_THAT(dry.out, HasSubstr("PriorityClass gpufit-night-lending (priorityclass-gpufit-night-lending.yaml, "
                                 "server-side apply, created):"));
  EXPECT_THAT(dry.out, HasSubstr("dry run: 8 of 8 changes would change the cluster"));
  EXPECT_EQ(plane_->Kubectl({"get", "priorityclass", "gpufit-night-lending"}).rc, 1);
  for (const auto& [name, spec] : original_) EXPECT_EQ(Spec(name), spec) << name;

  // 2. --yes with web-c's cap below the OOM threshold: the canary (web-a) holds its soak, the
  // second wave (web-b, web-c) rolls out, web-c's new pod is OOMKilled, the wave is reverted.
  SetOomThreshold((cap_c + std::min(cap_a, cap_b)) / 2);
  CliRun run = Apply("plan", "--yes --soak 15 --poll 0.5");
  EXPECT_EQ(run.exit_code, 3) << run.out << run.err;
  const std::string id = RunId(run.out);
  ASSERT_FALSE(id.empty()) << run.out;
  EXPECT_THAT(run.err, HasSubstr("wave 0 held its soak of 15 s"));
  EXPECT_THAT(run.err, HasSubstr("OOMKilled"));
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");
  EXPECT_EQ(Mib(Template("web-a")["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"]), cap_a);
  EXPECT_EQ(Spec("web-b")["template"], original_["web-b"]["template"]);
  EXPECT_EQ(Spec("web-c")["template"], original_["web-c"]["template"]);
  const Json record = Record(id);
  EXPECT_EQ(record["state"], "reverted") << record.dump(1);
  EXPECT_THAT(record["verdict"].get<std::string>(), HasSubstr("web-c"));
  // The time from the OOM kill (the container's finishedAt) to the end of the revert.
  std::smatch m;
  const std::string verdict = record["verdict"];
  ASSERT_TRUE(std::regex_search(verdict, m, std::regex(R"(reverted ([0-9.]+) s after the breach)"))) << verdict;
  std::cout << "OOM to revert: " << m[1] << " s\n";
  EXPECT_LT(std::stod(m[1]), 15.0);
  const std::string events = *plane_->KubectlOk({"get", "events", "-n", "ml", "-o", "json"});
  EXPECT_THAT(events, HasSubstr("GpufitReverted"));
  EXPECT_THAT(events, HasSubstr("GpufitApplied"));

  // 3. No OOM threshold: a second run applies everything; --revert of that run returns every
  // Deployment to the spec it had before gpufit touched it.
  SetOomThreshold(0);
  CliRun all = Apply("plan", "--yes --soak 5 --poll 0.5");
  ASSERT_EQ(all.exit_code, 0) << all.out << all.err;
  const std::string second = RunId(all.out);
  for (const std::string name : {"web-a", "web-b", "web-c"})
    EXPECT_EQ(Template(name)["schedulerName"], "hami-scheduler") << name;
  EXPECT_EQ(Record(second)["state"], "applied");
  CliRun undo = Gpufit(fmt::format("apply --revert {} --kubeconfig {}", second, plane_->kubeconfig()), dir_);
  ASSERT_EQ(undo.exit_code, 0) << undo.err;
  EXPECT_THAT(undo.out, HasSubstr("2 changes reverted"));  // web-b and web-c: the rest stood from the first run
  // web-a's cap and the lending objects came from the first run (the second found them): while it
  // stands, web-a is capped; the first run's --revert undoes its canary, then every spec is
  // the one it had before gpufit.
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);
  EXPECT_EQ(Spec("web-c"), original_["web-c"]);
  CliRun first = Gpufit(fmt::format("apply --revert {} --kubeconfig {}", id, plane_->kubeconfig()), dir_);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  // Its canary wave: web-a and the five lending objects it created (the second run found them).
  EXPECT_THAT(first.out, HasSubstr("6 changes reverted"));
  for (const auto& [name, spec] : original_) EXPECT_EQ(Spec(name), spec) << name;
  EXPECT_EQ(plane_->Kubectl({"get", "priorityclass", "gpufit-night-lending"}).rc, 1);
  EXPECT_EQ(plane_->Kubectl({"get", "clusterqueue", "gpufit-night"}).rc, 1);
  CliRun again = Gpufit(fmt::format("apply --revert {} --kubeconfig {}", id, plane_->kubeconfig()), dir_);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("nothing to revert"));
}

// The kill switch stops a run in the middle of its canary wave's soak, leaving what it applied;
// a run inside a maintenance window (the control ConfigMap's) does nothing; a workload
// annotated gpufit.io/exclude is never changed.
TEST_F(ApplyE2e, KillSwitchWindowAndOptOut) {
  ASSERT_EQ(Plan(72, "plan").exit_code, 0);
  // The kill switch, set by the test while the canary soaks (a run of 60 s soak in the background).
  const fs::path log = dir_ / "killed";
  fs::create_directories(log);
  std::thread stopper([&] {
    Eventually([&] { return Template("web-a").value("schedulerName", "") == "hami-scheduler"; }, 60);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    (void)plane_->KubectlOk({"create", "configmap", "gpufit-control", "-n", "default", "--from-literal=stop=true"});
  });
  const auto started = std::chrono::steady_clock::now();
  CliRun killed = Gpufit(fmt::format("apply {} --manifests {} --kubeconfig {} --yes --soak 60 --poll 0.5",
                                     (dir_ / "plan" / "out" / "plan.json").string(), (dir_ / "plan" / "k8s").string(),
                                     plane_->kubeconfig()),
                         log);
  stopper.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(killed.exit_code, 4) << killed.out << killed.err;
  EXPECT_THAT(killed.out, HasSubstr("stopped (by the kill switch) during wave 0's soak"));
  EXPECT_LT(took, 50.0);                                            // well before the 60 s soak ended
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");  // the canary stays
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);                     // the second wave never began
  EXPECT_EQ(Record(RunId(killed.out))["state"], "stopped");
  // With the kill switch on, a new run does nothing.
  CliRun off = Apply("plan", "--yes --soak 1");
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_THAT(off.out, HasSubstr("nothing applied: the kill switch is on"));
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);

  // A maintenance window covering every day: nothing is done. The first window is a day's that
  // is neither today nor tomorrow (UTC), so the run cannot fall into it on any day or at any
  // hour, midnight included, and the message names the second (issue 50: a fixed 'Mon' failed
  // every Monday).
  ASSERT_TRUE(Ok(plane_->KubectlOk({"delete", "configmap", "gpufit-control", "-n", "default"})));
  const std::string windows = fmt::format("{} 00:00-24:00, * 00:00-24:00", DayAfterTomorrowUtc());
  ASSERT_TRUE(Ok(plane_->KubectlOk(
      {"create", "configmap", "gpufit-control", "-n", "default", "--from-literal=maintenance-windows=" + windows})));
  CliRun window = Apply("plan", "--yes --soak 1");
  EXPECT_EQ(window.exit_code, 0) << window.err;
  EXPECT_THAT(window.out, HasSubstr("is in the maintenance window '* 00:00-24:00' (UTC)")) << windows;
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);
  EXPECT_EQ(Spec("web-c"), original_["web-c"]);

  // Opt-out: web-b annotated; the window gone: web-c alone changes.
  ASSERT_TRUE(Ok(plane_->KubectlOk({"delete", "configmap", "gpufit-control", "-n", "default"})));
  ASSERT_TRUE(Ok(plane_->KubectlOk({"annotate", "deployment", "web-b", "-n", "ml", "gpufit.io/exclude=true"})));
  CliRun rest = Apply("plan", "--yes --soak 2 --poll 0.5");
  EXPECT_EQ(rest.exit_code, 0) << rest.out << rest.err;
  EXPECT_EQ(Template("web-b"), original_["web-b"]["template"]["spec"]);
  EXPECT_EQ(Template("web-c")["schedulerName"], "hami-scheduler");
  EXPECT_THAT(Record(RunId(rest.out))["skipped"].dump(), HasSubstr("opted out (gpufit.io/exclude"));
}

// Bad input: a plan of another cluster, a plan whose backtest did not hold, and an API server
// that refuses a patch of the second wave (a ValidatingAdmissionPolicy that lets the dry run
// through): that wave is reverted and the run exits 2.
TEST_F(ApplyE2e, AnotherClusterAPlanThatDidNotHoldAndARefusedPatch) {
  ASSERT_EQ(Plan(72, "plan").exit_code, 0);
  // Another cluster: the same plan with its namespace renamed, as if planned where ml is ml-prod.
  fs::create_directories(dir_ / "other" / "out");
  fs::copy(dir_ / "plan" / "k8s", dir_ / "other" / "k8s");
  std::string other = Slurp(dir_ / "plan" / "out" / "plan.json");
  other = std::regex_replace(other, std::regex("deployment/ml/"), "deployment/ml-prod/");
  std::ofstream(dir_ / "other" / "out" / "plan.json") << other;
  CliRun foreign = Apply("other", "");
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_THAT(foreign.err,
              HasSubstr("its workload deployment/ml-prod/web-a is not in the cluster at https://127.0.0.1:"));

  // Twelve hours of telemetry: the fit part is shorter than a day, the verdict provisional.
  WriteTelemetry(12);
  ASSERT_EQ(Plan(12, "short").exit_code, 0);
  CliRun provisional = Apply("short", "--yes");
  EXPECT_EQ(provisional.exit_code, 2);
  EXPECT_THAT(provisional.err, HasSubstr("the colocation strategy provisional its backtest"));
  EXPECT_THAT(provisional.err, HasSubstr("gpufit apply applies only strategies that held"));
  for (const auto& [name, spec] : original_) EXPECT_EQ(Spec(name), spec) << name;

  // A policy that refuses web-c's real update (request.dryRun lets its dry run pass).
  const std::string policy = R"(apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: refuse-web-c}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "request.dryRun == true || object.metadata.name != 'web-c'"
    message: "web-c is frozen by the test"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: refuse-web-c}
spec:
  policyName: refuse-web-c
  validationActions: [Deny]
)";
  ASSERT_TRUE(Ok(plane_->KubectlOk({"apply", "-f", "-"}, policy)));
  // The policy takes a moment to load: wait until a real update of web-c is refused.
  ASSERT_TRUE(Eventually(
      [&] {
        return plane_->Kubectl({"annotate", "deployment", "web-c", "-n", "ml", "--overwrite", "probe=1"}).rc != 0;
      },
      30));
  const Json web_c = Spec("web-c");
  CliRun refused = Apply("plan", "--yes --soak 2 --poll 0.5");
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_THAT(refused.err,
              HasSubstr("workload-ml-deployment-web-c.yaml (Deployment ml/web-c): the API server refused it"));
  EXPECT_THAT(refused.err, HasSubstr("web-c is frozen by the test"));
  EXPECT_THAT(refused.err, HasSubstr("wave 1 reverted"));
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");  // the canary wave held and stays
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);                     // applied in wave 1, then reverted
  EXPECT_EQ(Spec("web-c"), web_c);
}

// Continuous mode: `gpufit controller --once --apply` plans from the live cluster and the
// telemetry, writes the plan and its manifests, and applies them with apply's waves and soak.
TEST_F(ApplyE2e, ControllerOnceAppliesItsOwnPlan) {
  const CliRun r =
      Gpufit(fmt::format("controller --once --apply --apply-soak 3 --kubeconfig {} --telemetry {} --gpu h100-80gb "
                         "--sharing hami --search-budget 0 --emit-manifests {} --out {}",
                         plane_->kubeconfig(), (dir_ / "telemetry-72h.csv").string(), (dir_ / "ctl" / "k8s").string(),
                         (dir_ / "ctl" / "out").string()),
             dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("apply: run "));
  EXPECT_THAT(r.err, HasSubstr("applied 8 changes in 2 wave(s)"));
  EXPECT_EQ(Mib(Template("web-b")["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"]), Cap("web-b", "ctl"));
  for (const std::string name : {"web-a", "web-b", "web-c"})
    EXPECT_EQ(Template(name)["schedulerName"], "hami-scheduler") << name;
  // Run again: the plan is the same, the cluster already has it: nothing to apply.
  const CliRun again =
      Gpufit(fmt::format("controller --once --apply --apply-soak 3 --kubeconfig {} --telemetry {} --gpu h100-80gb "
                         "--sharing hami --search-budget 0 --emit-manifests {} --out {}",
                         plane_->kubeconfig(), (dir_ / "telemetry-72h.csv").string(), (dir_ / "ctl" / "k8s").string(),
                         (dir_ / "ctl" / "out").string()),
             dir_);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, HasSubstr("apply: nothing to apply: the cluster already has every change"));
}

// One run at a time (the lock ConfigMap): a second run while the first soaks does nothing and
// names the first. SIGTERM stops a run where the kill switch would: recorded "stopped", exit 4,
// the lock released, what was applied left as it is.
TEST_F(ApplyE2e, ASecondRunAtOnceAndSigterm) {
  ASSERT_EQ(Plan(72, "plan").exit_code, 0);
  const fs::path first_dir = dir_ / "first";
  fs::create_directories(first_dir);
  // The first run, in the background, under `timeout`: SIGTERM after 20 s, during its 60 s soak.
  const std::string command = fmt::format(
      "timeout --preserve-status -s TERM 20 {} apply {} --manifests {} --kubeconfig {} --yes --soak 60 "
      "--poll 0.5 > {} 2> {}",
      gpufit::test_paths::GpufitBin(), (dir_ / "plan" / "out" / "plan.json").string(), (dir_ / "plan" / "k8s").string(),
      plane_->kubeconfig(), (first_dir / "stdout").string(), (first_dir / "stderr").string());
  int status = -1;
  std::thread first([&] { status = std::system(command.c_str()); });
  ASSERT_TRUE(Eventually([&] { return Template("web-a").value("schedulerName", "") == "hami-scheduler"; }, 30));
  const CliRun second = Apply("plan", "--yes --soak 2");
  first.join();
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("nothing applied: another run ("));
  EXPECT_THAT(second.out, HasSubstr("is in progress: ConfigMap default/gpufit-apply-lock renewed"));
  EXPECT_EQ(Spec("web-b"), original_["web-b"]);  // the second run changed nothing
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4) << Slurp(first_dir / "stderr");
  const std::string out = Slurp(first_dir / "stdout");
  EXPECT_THAT(out, HasSubstr("stopped (on SIGTERM) during wave 0's soak"));
  EXPECT_EQ(Record(RunId(out))["state"], "stopped");
  EXPECT_EQ(plane_->Kubectl({"get", "configmap", "gpufit-apply-lock", "-n", "default"}).rc, 1);  // released
  EXPECT_EQ(Template("web-a")["schedulerName"], "hami-scheduler");                               // the canary stays
}

}  // namespace
}  // namespace gpufit::e2e

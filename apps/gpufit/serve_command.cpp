#include "serve_command.h"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "cli_common.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/placement/registry.h"
#include "gpufit/serve/api_binder.h"
#include "gpufit/serve/http_server.h"
#include "gpufit/serve/restart_recovery.h"
#include "kube_source.h"

namespace gpufit::cli {
namespace {

struct ServeFlags {
  std::string nodes, pods, watch_dir, profiles, policy = "gpufit", host = "127.0.0.1", url_prefix;
  std::string kube_api, kube_token_file, kube_ca_file;
  std::string tls_cert_file, tls_key_file, client_ca_file, auth_token_file, metrics_token_file;
  std::vector<std::string> scheduler_names{"default-scheduler"};
  bool insecure_http = false, node_cache_capable = true;
  std::size_t max_connections = 1024, max_connections_per_peer = 64;
  std::string replicas_apart = "gpu";
  KubeApiFlags kube;  // --kubeconfig, --context: the live cluster, re-listed every --watch-interval-s
  int port = 8888;
  std::uint64_t seed = 42;
  double max_body_mib = 16, max_nodes_body_mib = 8, body_timeout_s = 10, drain_s = 5, watch_interval_s = 10;
};

// One snapshot file of --watch-dir as stat(2) sees it: a file renamed into place is a new
// inode, one rewritten in place a new size or modification time (nullopt: absent).
int Run(const ServeFlags& f) {
  if (!f.url_prefix.empty() && (f.url_prefix.front() != '/' || f.url_prefix.back() == '/'))
    return Fail(InvalidArgument("--url-prefix must start with '/' and not end with one (e.g. /scheduler), got '{}'",
                                f.url_prefix));
  std::optional<serve::ApiServerBinder> binder;
  if (!f.kube_api.empty()) {
    Result<serve::ApiServerBinder> made = serve::ApiServerBinder::Make(
        {.url = f.kube_api,
         .token_file = f.kube_token_file,
         .ca_file = f.kube_ca_file,
         .timeout_s = 5,
         .scheduler_names = f.scheduler_names});
    if (!made) return Fail(made.error());
    binder = std::move(*made);
  } else if (!f.kube_token_file.empty() || !f.kube_ca_file.empty()) {
    return Fail(InvalidArgument("--kube-token-file and --kube-ca-file need --kube-api"));
  }
  // Who may call: refused before any snapshot is read or waited for (serve/http_server.h).
  serve::BindFunction binds;  // only whether there is one matters here
  if (binder) binds.bind = [](const serve::BindingArgs&) -> Result<void> { return {}; };
  const serve::ServerOptions auth{.host = f.host,
                                  .bind = binds,
                                  .tls_cert_file = f.tls_cert_file,
                                  .tls_key_file = f.tls_key_file,
                                  .client_ca_file = f.client_ca_file,
                                  .auth_token_file = f.auth_token_file,
                                  .metrics_token_file = f.metrics_token_file,
                                  .insecure_http = f.insecure_http};
  if (Result<void> ok = serve::CheckAuthentication(auth); !ok) return Fail(ok.error());
  const bool live = f.kube.given();
  if (live && (!f.watch_dir.empty() || !f.nodes.empty() || !f.pods.empty()))  // before any wait for a snapshot
    return Fail(InvalidArgument(
        "--kubeconfig/--context read the nodes and pods from the live cluster: give them or --nodes/--pods "
        "(--watch-dir), not both"));
  if (!live && f.watch_dir.empty() == f.nodes.empty())
    return Fail(InvalidArgument(
        "serve needs --nodes (and --pods), or --watch-dir with nodes.json and pods.json, or --kubeconfig (the "
        "live cluster)"));
  const std::string nodes_path = f.watch_dir.empty() ? f.nodes : f.watch_dir + "/nodes.json";
  const std::string pods_path = f.watch_dir.empty() ? f.pods : f.watch_dir + "/pods.json";
  std::shared_ptr<const serve::ProfileBook> profiles;
  if (!f.profiles.empty()) {
    Result<serve::ProfileBook> book = serve::ProfileBook::FromPlanJson(f.profiles);
    if (!book) return Fail(book.error());
    profiles = std::make_shared<const serve::ProfileBook>(std::move(*book));
    std::fprintf(stderr, "gpufit: %zu workload profiles from %s (margin %.0f MiB, reserve %.0f MiB per GPU)\n",
                 profiles->size(), f.profiles.c_str(), profiles->margin_mib(), profiles->reserve_mib());
    if (const std::vector<std::string> none = profiles->Unmatchable(); !none.empty())
      std::fprintf(stderr,
                   "gpufit: warning: %zu profiles name no namespace (e.g. %s): no pod can match them (telemetry whose "
                   "pod names have no namespace)\n",
                   none.size(), none.front().c_str());
  }
  // SIGTERM (kubelet stopping the pod) and SIGINT stop the server gracefully: blocked here, so
  // every thread started below inherits the mask, and taken by one waiting thread (or by the
  // wait for the first snapshot, which then ends the process with 0).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);  // our own: Serve ended, the waiter may go
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (!f.watch_dir.empty() && !std::filesystem::exists(nodes_path)) {  // a sidecar writes the first snapshot
    // Meanwhile /healthz answers (a liveness probe must not restart the wait) and /readyz is 503.
    serve::WaitingServer waiting;
    if (f.port != 0) {
      if (Result<void> ok = waiting.Start(f.host, f.port, "waiting for the first snapshot (" + nodes_path + ")"); !ok)
        return Fail(ok.error());
    }
    std::fprintf(stderr, "gpufit: waiting for %s\n", nodes_path.c_str());
    const auto ns = static_cast<long>(f.watch_interval_s * 1e9);
    const timespec tick{.tv_sec = ns / 1'000'000'000, .tv_nsec = ns % 1'000'000'000};
    while (!std::filesystem::exists(nodes_path)) {
      const int sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        std::fprintf(stderr, "gpufit: %s received while waiting for the first snapshot\n",
                     sig == SIGTERM ? "SIGTERM" : "SIGINT");
        return 0;
      }
    }
  }
  // Where the snapshots come from (ingest/kube/cluster_source.h): the live cluster, the
  // --watch-dir or --nodes/--pods; in messages by its name.
  const KubectlFilesOptions files{
      .nodes = nodes_path, .pods = pods_path, .pods_may_be_absent = !f.watch_dir.empty(), .flag_in_errors = false};
  Result<std::unique_ptr<ClusterSource>> made = MakeClusterSource(f.kube, files, "--nodes/--pods (--watch-dir)");
  if (!made) return Fail(made.error());
  std::unique_ptr<ClusterSource> cluster = std::move(*made);
  Result<ClusterObjects> snapshot = ReadCluster(*cluster, f.kube);
  if (!snapshot) return Fail(snapshot.error());
  const std::string source = cluster->Name();
  using Apart = serve::ExtenderOptions::ReplicasApart;
  const Apart apart = f.replicas_apart == "node" ? Apart::kNode : f.replicas_apart == "off" ? Apart::kOff : Apart::kGpu;
  Result<std::unique_ptr<serve::Extender>> extender = serve::Extender::FromSnapshot(
      snapshot->nodes.value_or(std::vector<KubeNode>{}), snapshot->pods.value_or(std::vector<KubePod>{}),
      {.policy = f.policy, .seed = f.seed, .profiles = profiles, .replicas_apart = apart});
  if (!extender) return Fail(Error{extender.error().code, fmt::format("{}: {}", source, extender.error().message)});
  const serve::SnapshotStats stats = (*extender)->snapshot();
  for (const std::string& w : stats.warnings) std::fprintf(stderr, "gpufit: warning: %s\n", w.c_str());
  if (stats.nodes_with_outside_memory > 0)
    std::fprintf(stderr,
                 "gpufit: GPU memory used outside pods (reserved_gpus of %s) counted on %d nodes for the pods that "
                 "share a GPU\n",
                 f.profiles.c_str(), stats.nodes_with_outside_memory);

  // Restart recovery (serve/restart_recovery.h): files may predate the Bindings of a gpufit that
  // was killed; the API server's pods say which GPUs those hold, before the extender answers.
  if (binder && !live) {
    Result<std::vector<KubePod>> api_pods = binder->ListPods();
    if (!api_pods)
      return Fail(Error{api_pods.error().code,
                        fmt::format("serve: cannot list the pods bound so far from --kube-api (restart recovery: a "
                                    "GPU bound just before a restart would look free): {}",
                                    api_pods.error().message)});
    const serve::Recovered recovered =
        serve::AdoptBoundPods(**extender, snapshot->pods.value_or(std::vector<KubePod>{}), *api_pods);
    for (const std::string& w : recovered.warnings) std::fprintf(stderr, "gpufit: warning: %s\n", w.c_str());
    std::fprintf(stderr, "gpufit: %zu pods listed from %s; %d bound there but not in %s are counted where they run\n",
                 api_pods->size(), binder->url().c_str(), recovered.adopted, source.c_str());
  }
  serve::ServerOptions options{.host = f.host,
                               .port = f.port,
                               .url_prefix = f.url_prefix,
                               .max_body_bytes = static_cast<std::size_t>(f.max_body_mib * 1024 * 1024),
                               .body_timeout_s = f.body_timeout_s,
                               .read_timeout_s = 5,
                               .log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); },
                               .bind = {},
                               .tls_cert_file = f.tls_cert_file,
                               .tls_key_file = f.tls_key_file,
                               .client_ca_file = f.client_ca_file,
                               .auth_token_file = f.auth_token_file,
                               .metrics_token_file = f.metrics_token_file,
                               .insecure_http = f.insecure_http,
                               .node_cache_capable = f.node_cache_capable,
                               .max_nodes_body_bytes = static_cast<std::size_t>(f.max_nodes_body_mib * 1024 * 1024),
                               .max_connections = f.max_connections,
                               .max_connections_per_peer = f.max_connections_per_peer};
  if (binder)
    options.bind = {.verify = [&binder](const serve::BindingArgs& a) { return binder->Verify(a); },
                    .bind = [&binder](const serve::BindingArgs& a) { return binder->Bind(a); }};
  serve::ExtenderServer server(std::move(*extender), options);
  if (Result<void> ok = server.Bind(); !ok) return Fail(ok.error());
  std::fprintf(stderr,
               "gpufit: serving the scheduler extender on %s://%s:%d%s (filter, prioritize, bind%s; /healthz, "
               "/readyz, /metrics): %d nodes, %d pods placed, %d left out, policy %s%s\n",
               server.https() ? "https" : "http",
               (f.host.find(':') != std::string::npos ? "[" + f.host + "]" : f.host).c_str(), server.port(),
               f.url_prefix.c_str(), binder ? (" through " + binder->url()).c_str() : " not enabled: no --kube-api",
               stats.nodes, stats.pods_placed, stats.pods_not_fitting, f.policy.c_str(),
               f.insecure_http ? "; no authentication (--insecure-http)"
               : f.client_ca_file.empty() ? "; bearer token required"
               : f.auth_token_file.empty() ? "; client certificates required"
                                           : "; client certificates or bearer token required");
  std::atomic<bool> signalled{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig == SIGUSR1) return;
    signalled = true;
    std::fprintf(stderr, "gpufit: %s received: /readyz answers 503 for %g s, then the requests in flight finish\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT", f.drain_s);
    server.Stop(f.drain_s);
  });
  // --watch-dir: a new snapshot is taken in when nodes.json or pods.json is written again
  // (write each to a temporary name and rename it over the old one, as `kubectl get ... >
  // tmp && mv tmp nodes.json` does, so that a half-written file is never read). A snapshot that
  // cannot be read keeps the previous state and is tried again at the next tick.
  std::mutex watch_mu;
  std::condition_variable watch_cv;
  bool watch_done = false;
  std::string last_error;
  std::set<std::string> last_warnings(stats.warnings.begin(), stats.warnings.end());
  std::thread watcher;
  // The live cluster: listed again every --watch-interval-s (the kubeconfig resolved again too,
  // so that a rotated service account token or an exec plugin's new token is used); a list
  // whose resourceVersions are those of the last one changes nothing and is not taken in.
  if (!f.watch_dir.empty() || live) {
    watcher = std::thread([&] {
      std::unique_lock lock(watch_mu);
      while (!watch_cv.wait_for(lock, std::chrono::duration<double>(f.watch_interval_s), [&] { return watch_done; })) {
        Result<std::optional<ClusterObjects>> next = cluster->ReadIfChanged();
        if (next && !next->has_value()) continue;  // the same files, or the same resourceVersions
        Result<serve::SnapshotStats> taken =
            next ? server.extender().Reconcile((*next)->nodes.value_or(std::vector<KubeNode>{}),
                                               (*next)->pods.value_or(std::vector<KubePod>{}))
                 : Result<serve::SnapshotStats>(next.error());
        if (!taken) {
          if (taken.error().message != last_error)  // once per distinct failure, not every look
            std::fprintf(stderr, "gpufit: warning: snapshot from %s not taken in, keeping the previous one: %s\n",
                         source.c_str(), taken.error().message.c_str());
          last_error = taken.error().message;
          continue;
        }
        last_error.clear();
        // A warning the previous snapshot gave too (a pod still not fitting) is not repeated.
        std::set<std::string> warned;
        int repeated = 0;
        for (const std::string& w : taken->warnings) {
          warned.insert(w);
          if (last_warnings.contains(w))
            ++repeated;
          else
            std::fprintf(stderr, "gpufit: warning: %s\n", w.c_str());
        }
        if (repeated > 0) std::fprintf(stderr, "gpufit: %d warnings as at the previous snapshot\n", repeated);
        last_warnings = std::move(warned);
        std::fprintf(stderr,
                     "gpufit: snapshot %d taken in from %s: %d nodes, %d pods placed, %d left out; gpufit's binds: %d "
                     "kept, %d now in the snapshot, %d dropped\n",
                     taken->snapshots, source.c_str(), taken->nodes, taken->pods_placed, taken->pods_not_fitting,
                     taken->reservations_kept, taken->reservations_in_snapshot, taken->reservations_dropped);
      }
    });
  }
  const bool served = server.Serve();
  if (!signalled) pthread_kill(waiter.native_handle(), SIGUSR1);  // Serve ended by itself: wake the waiter
  waiter.join();
  if (watcher.joinable()) {
    {
      const std::lock_guard lock(watch_mu);
      watch_done = true;
    }
    watch_cv.notify_all();
    watcher.join();
  }
  return served ? 0 : Fail(Unavailable("serve: the HTTP server stopped on an error"));
}

}  // namespace

void AddServeCommand(CLI::App& app, int& rc) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "run the placement engine as a Kubernetes scheduler extender (filter, prioritize and bind verbs)");
  CLI::Option* nodes = cmd->add_option("--nodes", flags->nodes, "kubectl get nodes -o json")->check(CLI::ExistingFile);
  cmd->add_option("--pods", flags->pods, "kubectl get pods -A -o json (the running pods take their requests)")
      ->check(CLI::ExistingFile)
      ->needs(nodes);
  cmd->add_option("--watch-dir", flags->watch_dir,
                  "instead of --nodes/--pods: a directory whose nodes.json and pods.json (kubectl's output, each "
                  "renamed into place) are read at start and again whenever either is written")
      ->check(CLI::ExistingDirectory)
      ->excludes(nodes);
  AddKubeApiOptions(cmd, flags->kube);
  cmd->add_option("--watch-interval-s", flags->watch_interval_s,
                  "how often --watch-dir is looked at, or the live cluster (--kubeconfig) listed again")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  cmd->add_option("--profiles", flags->profiles,
                  "plan.json of `gpufit plan`: pods sharing a GPU are placed by their workload's memory envelope "
                  "and 24-hour duty curve (docs/serve.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--policy", flags->policy, "placement policy: " + fmt::format("{}", fmt::join(PolicyNames(), ", ")))
      ->check(CLI::IsMember(PolicyNames()))
      ->capture_default_str();
  cmd->add_option("--replicas-apart", flags->replicas_apart,
                  "replicas of one ReplicaSet, Deployment or StatefulSet: gpu (no two share a GPU), node (no two on "
                  "one node), off")
      ->check(CLI::IsMember({"gpu", "node", "off"}))
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "ties between equally good nodes go as `simulate --seeds <seed>` breaks them")
      ->capture_default_str();
  cmd->add_option("--host", flags->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", flags->port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--url-prefix", flags->url_prefix,
                  "path before the verbs, as the extender's urlPrefix has it (e.g. /scheduler)");
  cmd->add_option("--max-body-mib", flags->max_body_mib, "largest request body; larger ones get 413")
      ->check(CLI::Range(0.001, 1024.0))
      ->capture_default_str();
  cmd->add_option("--body-timeout-s", flags->body_timeout_s, "a body not read within this many seconds gets 408")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  cmd->add_option("--drain-s", flags->drain_s,
                  "on SIGTERM, answer /readyz 503 this long before closing (endpoints drop the pod first)")
      ->check(CLI::Range(0.0, 300.0))
      ->capture_default_str();
  cmd->add_option("--scheduler-name", flags->scheduler_names,
                  "with --kube-api: the kube-scheduler profiles that call this extender (repeat for each); bind "
                  "refuses a pod whose spec.schedulerName is another's")
      ->capture_default_str();
  cmd->add_option("--kube-api", flags->kube_api,
                  "API server to create Bindings on for the bind verb, e.g. https://kubernetes.default.svc "
                  "(without it, bind answers an error)");
  cmd->add_option("--kube-token-file", flags->kube_token_file,
                  "bearer token for --kube-api, read again for each Binding (in a pod: "
                  "/var/run/secrets/kubernetes.io/serviceaccount/token)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--kube-ca-file", flags->kube_ca_file,
                  "CA bundle that --kube-api's TLS certificate is checked against")
      ->check(CLI::ExistingFile);
  CLI::Option* cert = cmd->add_option("--tls-cert-file", flags->tls_cert_file,
                                      "serve HTTPS with this certificate (PEM, chain after it); the extender's "
                                      "enableHTTPS and tlsConfig.caFile on kube-scheduler's side")
                          ->check(CLI::ExistingFile);
  CLI::Option* key = cmd->add_option("--tls-key-file", flags->tls_key_file, "the private key of --tls-cert-file (PEM)")
                         ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  CLI::Option* client_ca = cmd->add_option("--client-ca-file", flags->client_ca_file,
                                           "with --tls-cert-file: filter, prioritize, bind and /metrics need a "
                                           "client certificate signed by this CA (the extender's tlsConfig.certFile "
                                           "and keyFile); /healthz and /readyz do not")
                               ->check(CLI::ExistingFile)
                               ->needs(cert);
  CLI::Option* token = cmd->add_option("--auth-token-file", flags->auth_token_file,
                                       "with --tls-cert-file: or a bearer token (Authorization: Bearer <token>) equal "
                                       "to this file's content, read again when the file changes")
                           ->check(CLI::ExistingFile);
  CLI::Option* metrics_token =
      cmd->add_option("--metrics-token-file", flags->metrics_token_file,
                      "with --tls-cert-file: a second bearer token that /metrics accepts and filter, prioritize and "
                      "bind never do (give it to Prometheus, not the scheduler's token)")
          ->check(CLI::ExistingFile);
  cmd->add_flag("--insecure-http", flags->insecure_http,
                "serve plain HTTP with no authentication (a test on loopback); not with --kube-api or the TLS flags. "
                "Without it serve needs --tls-cert-file with --client-ca-file or --auth-token-file")
      ->excludes(cert)
      ->excludes(client_ca)
      ->excludes(token)
      ->excludes(metrics_token);
  cmd->add_option("--node-cache-capable", flags->node_cache_capable,
                  "as kube-scheduler's extender nodeCacheCapable (deploy/scheduler: true): true, requests carry "
                  "NodeNames and one carrying Nodes (a full NodeList) is refused with 400; false, Nodes are read, "
                  "at most --max-nodes-body-mib")
      ->capture_default_str();
  cmd->add_option("--max-nodes-body-mib", flags->max_nodes_body_mib,
                  "with --node-cache-capable=false: largest request carrying Nodes; larger ones get 413")
      ->check(CLI::Range(0.001, 1024.0))
      ->capture_default_str();
  cmd->add_option("--max-connections", flags->max_connections,
                  "connections open at once; more are accepted and closed at once")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--max-connections-per-peer", flags->max_connections_per_peer,
                  "connections open at once from one IP address; more are accepted and closed at once")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->callback([flags, &rc] { rc = Run(*flags); });
}

}  // namespace gpufit::cli

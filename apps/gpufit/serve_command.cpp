#include "serve_command.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "cli_common.h"
#include "gpufit/ingest/kube_reader.h"
#include "gpufit/placement/registry.h"
#include "gpufit/serve/api_binder.h"
#include "gpufit/serve/http_server.h"

namespace gpufit::cli {
namespace {

struct ServeFlags {
  std::string nodes, pods, policy = "gpufit", host = "127.0.0.1", url_prefix;
  std::string kube_api, kube_token_file, kube_ca_file;
  int port = 8888;
  std::uint64_t seed = 42;
  double max_body_mib = 16, body_timeout_s = 10, drain_s = 5;
};

int Run(const ServeFlags& f) {
  if (!f.url_prefix.empty() && (f.url_prefix.front() != '/' || f.url_prefix.back() == '/'))
    return Fail(InvalidArgument("--url-prefix must start with '/' and not end with one (e.g. /scheduler), got '{}'",
                                f.url_prefix));
  std::optional<serve::ApiServerBinder> binder;
  if (!f.kube_api.empty()) {
    Result<serve::ApiServerBinder> made = serve::ApiServerBinder::Make(
        {.url = f.kube_api, .token_file = f.kube_token_file, .ca_file = f.kube_ca_file, .timeout_s = 5});
    if (!made) return Fail(made.error());
    binder = std::move(*made);
  } else if (!f.kube_token_file.empty() || !f.kube_ca_file.empty()) {
    return Fail(InvalidArgument("--kube-token-file and --kube-ca-file need --kube-api"));
  }
  Result<std::vector<KubeNode>> nodes = ReadKubeNodes(f.nodes);
  if (!nodes) return Fail(nodes.error());
  std::vector<KubePod> pods;
  if (!f.pods.empty()) {
    Result<std::vector<KubePod>> read = ReadKubePods(f.pods);
    if (!read) return Fail(read.error());
    pods = std::move(*read);
  }
  Result<std::unique_ptr<serve::Extender>> extender =
      serve::Extender::FromSnapshot(*nodes, pods, {.policy = f.policy, .seed = f.seed});
  if (!extender) return Fail(Error{extender.error().code, fmt::format("{}: {}", f.nodes, extender.error().message)});
  const serve::SnapshotStats stats = (*extender)->snapshot();
  for (const std::string& w : stats.warnings) std::fprintf(stderr, "gpufit: warning: %s\n", w.c_str());

  // SIGTERM (kubelet stopping the pod) and SIGINT stop the server gracefully: blocked here, so
  // every thread started below inherits the mask, and taken by one waiting thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);  // our own: Serve ended, the waiter may go
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  serve::ServerOptions options{.host = f.host,
                               .port = f.port,
                               .url_prefix = f.url_prefix,
                               .max_body_bytes = static_cast<std::size_t>(f.max_body_mib * 1024 * 1024),
                               .body_timeout_s = f.body_timeout_s,
                               .read_timeout_s = 5,
                               .log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); },
                               .bind = {}};
  if (binder) options.bind = [&binder](const serve::BindingArgs& a) { return binder->Bind(a); };
  serve::ExtenderServer server(std::move(*extender), options);
  if (Result<void> ok = server.Bind(); !ok) return Fail(ok.error());
  std::fprintf(stderr,
               "gpufit: serving the scheduler extender on http://%s:%d%s (filter, prioritize, bind%s; /healthz, "
               "/readyz, /metrics): %d nodes, %d pods placed, %d left out, policy %s\n",
               f.host.c_str(), server.port(), f.url_prefix.c_str(),
               binder ? (" through " + binder->url()).c_str() : " not enabled: no --kube-api", stats.nodes,
               stats.pods_placed, stats.pods_not_fitting, f.policy.c_str());
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
  const bool served = server.Serve();
  if (!signalled) pthread_kill(waiter.native_handle(), SIGUSR1);  // Serve ended by itself: wake the waiter
  waiter.join();
  return served ? 0 : Fail(Unavailable("serve: the HTTP server stopped on an error"));
}

}  // namespace

void AddServeCommand(CLI::App& app, int& rc) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "run the placement engine as a Kubernetes scheduler extender (filter, prioritize and bind verbs)");
  cmd->add_option("--nodes", flags->nodes, "kubectl get nodes -o json")->required()->check(CLI::ExistingFile);
  cmd->add_option("--pods", flags->pods, "kubectl get pods -A -o json (the running pods take their requests)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--policy", flags->policy, "placement policy: " + fmt::format("{}", fmt::join(PolicyNames(), ", ")))
      ->check(CLI::IsMember(PolicyNames()))
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed,
                  "ties between equally good nodes go as `simulate --seeds <seed>` breaks them")
      ->capture_default_str();
  cmd->add_option("--host", flags->host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", flags->port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--url-prefix", flags->url_prefix, "path before the verbs, as the extender's urlPrefix has it (e.g. /scheduler)");
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
  cmd->add_option("--kube-api", flags->kube_api,
                  "API server to create Bindings on for the bind verb, e.g. https://kubernetes.default.svc "
                  "(without it, bind answers an error)");
  cmd->add_option("--kube-token-file", flags->kube_token_file,
                  "bearer token for --kube-api, read again for each Binding (in a pod: "
                  "/var/run/secrets/kubernetes.io/serviceaccount/token)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--kube-ca-file", flags->kube_ca_file, "CA bundle that --kube-api's TLS certificate is checked against")
      ->check(CLI::ExistingFile);
  cmd->callback([flags, &rc] { rc = Run(*flags); });
}

}  // namespace gpufit::cli

#include "gpufit/serve/http_server.h"
#include "gpufit/serve/loopback.h"

#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "gpufit/serve/bearer_token.h"
#include "gpufit/serve/bind_verb.h"
#include "gpufit/serve/internal/http_listener.h"

namespace gpufit::serve {

namespace {

using Clock = std::chrono::steady_clock;
using internal::HttpAnswer;
using internal::HttpRequest;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The target's path, percent-decoded (a client may send "/a%5B" for "/a["), without the query.
std::string PathOf(const std::string& target) {
  const std::string raw = target.substr(0, target.find('?'));
  std::string out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    unsigned value = 0;
    if (raw[i] == '%' && i + 2 < raw.size() + 0 && std::sscanf(raw.substr(i + 1, 2).c_str(), "%2x", &value) == 1 &&
        std::isxdigit(static_cast<unsigned char>(raw[i + 1])) && std::isxdigit(static_cast<unsigned char>(raw[i + 2]))) {
      out.push_back(static_cast<char>(value));
      i += 2;
    } else {
      out.push_back(raw[i]);
    }
  }
  return out;
}

internal::HttpLimits LimitsOf(const ServerOptions& o) {
  return {.first_byte_s = o.read_timeout_s,
          .head_s = o.read_timeout_s + o.body_timeout_s,
          .body_s = o.body_timeout_s,
          .write_s = o.body_timeout_s,
          .max_connections = o.max_connections,
          .max_connections_per_peer = o.max_connections_per_peer,
          .body_budget_bytes = o.body_budget_bytes};
}

}  // namespace

Result<void> CheckAuthentication(const ServerOptions& o) {
  const bool tls = !o.tls_cert_file.empty();
  if (o.insecure_http) {
    if (tls || !o.client_ca_file.empty() || !o.auth_token_file.empty())
      return InvalidArgument(
          "--insecure-http serves plain HTTP without authentication: not with --tls-cert-file, --client-ca-file or "
          "--auth-token-file");
    if (o.bind.bind)
      return InvalidArgument(
          "--insecure-http with --kube-api: anyone reaching the port could bind pods; serve HTTPS with "
          "--client-ca-file or --auth-token-file");
    if (!IsLoopbackHost(o.host))
      return InvalidArgument(
          "--insecure-http only on a loopback address (127.0.0.1, ::1, localhost), got --host {}: anything that "
          "reaches it could read the cluster's placements without authentication; serve HTTPS with --client-ca-file "
          "or --auth-token-file",
          o.host);
    return {};
  }
  if (!o.auth_token_file.empty() && !tls)
    return InvalidArgument("--auth-token-file needs --tls-cert-file: a bearer token is accepted only over TLS");
  if (!o.metrics_token_file.empty() && !tls)
    return InvalidArgument("--metrics-token-file needs --tls-cert-file: a bearer token is accepted only over TLS");
  if (!tls || (o.client_ca_file.empty() && o.auth_token_file.empty()))
    return InvalidArgument(
        "serve needs authentication: --tls-cert-file and --tls-key-file with --client-ca-file (client certificates: "
        "kube-scheduler's extender tlsConfig certFile/keyFile) and/or --auth-token-file (a bearer token); or "
        "--insecure-http for plain HTTP without authentication (not with --kube-api)");
  return {};
}

struct ExtenderServer::Impl {
  explicit Impl(ExtenderServer& s) : server(s) {}
  ExtenderServer& server;
  std::optional<BearerToken> token, metrics_token;
  std::optional<internal::HttpListener> listener;

  const ServerOptions& options() const { return server.options_; }

  // "filter", "prioritize", "bind", or "" for another path.
  std::string VerbOf(const std::string& path) const {
    const std::string& prefix = options().url_prefix;
    if (!path.starts_with(prefix)) return "";
    const std::string rest = path.substr(prefix.size());
    return rest == "/filter" ? "filter" : rest == "/prioritize" ? "prioritize" : rest == "/bind" ? "bind" : "";
  }

  static std::string ErrorBody(const std::string& verb, const std::string& error) {
    if (verb == "bind") return WriteBindingResult(error);
    if (verb == "filter") return WriteFilterError(error);
    return Dump(nlohmann::json{{"Error", error}});
  }

  void Log(const HttpRequest& r, const std::string& verb, int status, const std::string& pod, std::size_t nodes,
           double seconds, const std::string& error, const std::string& request = {},
           const std::string& node = {}) const {
    if (!options().log) return;
    nlohmann::json line{{"verb", verb},       {"status", status},         {"pod", pod},
                        {"nodes", nodes},     {"duration_s", seconds},    {"peer", r.peer}};
    if (!node.empty()) line["node"] = node;  // bind: the node asked for
    if (!r.client_cn.empty()) line["client"] = r.client_cn;
    if (!request.empty()) line["request"] = request;
    if (!error.empty()) line["error"] = error;
    options().log(Dump(line));
  }

  // Nothing when the request is authenticated (or none is asked), else its 401 or 403.
  std::optional<HttpAnswer> Authenticate(const HttpRequest& r, const std::string& verb) {
    if (options().insecure_http) return std::nullopt;
    if (!options().client_ca_file.empty() && r.client_verified) return std::nullopt;
    if (token && token->Matches(r.authorization)) return std::nullopt;
    if (verb == "metrics" && metrics_token && metrics_token->Matches(r.authorization)) return std::nullopt;
    HttpAnswer a{.status = 403, .body = {}};
    std::string error = "a client certificate signed by --client-ca-file is required";
    if (token || (verb == "metrics" && metrics_token)) {
      a.status = 401;
      a.headers.emplace_back("WWW-Authenticate", "Bearer");
      error = r.authorization.empty() ? "no bearer token (Authorization: Bearer <token>)"
                                      : "the bearer token is not --auth-token-file's";
      if (!options().client_ca_file.empty()) error += ", and no client certificate signed by --client-ca-file";
    }
    a.body = ErrorBody(verb, error);
    server.metrics_.Observe(verb, "unauthenticated", 0);
    Log(r, verb, a.status, "", 0, 0, error);
    return a;
  }

  std::variant<std::size_t, HttpAnswer> Route(const HttpRequest& r) {
    const std::string path = PathOf(r.target);
    if (r.method == "GET") {
      if (path == "/healthz" || path == "/readyz") return std::size_t{0};
      if (path == "/metrics") {
        if (auto refused = Authenticate(r, "metrics")) return *refused;
        return std::size_t{0};
      }
    } else if (r.method == "POST") {
      const std::string verb = VerbOf(path);
      if (!verb.empty()) {
        if (auto refused = Authenticate(r, verb)) return *refused;
        if (verb == "bind") return options().max_bind_body_bytes;
        return options().max_body_bytes;
      }
    }
    return HttpAnswer{.status = 404, .content_type = "text/plain", .body = "not found\n"};
  }

  HttpAnswer Refused(const HttpRequest& r, int status, const std::string& outcome, const std::string& error) {
    const std::string verb = VerbOf(PathOf(r.target));
    if (!verb.empty()) server.metrics_.Observe(verb, outcome, 0);
    Log(r, verb.empty() ? r.method + " " + r.target.substr(0, 200) : verb, status, "", 0, 0, error);
    return {.status = status, .body = ErrorBody(verb, error)};
  }

  HttpAnswer Handle(HttpRequest& r) {
    const std::string path = PathOf(r.target);
    if (r.method == "GET") return Get(path);
    const std::string verb = VerbOf(path);
    const Clock::time_point t0 = Clock::now();
    try {
      if (verb == "bind") return Bind(r, t0);
      return Verb(r, verb, t0);
    } catch (const std::exception& e) {  // our bug, or out of memory: 500, counted
      return Internal(r, verb, e.what());
    } catch (...) {
      return Internal(r, verb, "unknown exception");
    }
  }

  HttpAnswer Internal(const HttpRequest& r, const std::string& verb, const std::string& what) {
    server.metrics_.Observe(verb, "internal", 0);
    Log(r, verb, 500, "", 0, 0, what);
    return {.status = 500, .body = WriteFilterError("internal error: " + what)};
  }

  HttpAnswer Get(const std::string& path) {
    if (path == "/healthz") return {.content_type = "text/plain", .body = "ok\n"};
    if (path == "/readyz") {
      if (server.stopping_) return {.status = 503, .content_type = "text/plain", .body = "shutting down\n"};
      return {.content_type = "text/plain", .body = "ready\n"};
    }
    Extender& e = *server.extender_;
    ExtenderMetrics::Gauges g;
    g.gpu_allocation_ratio = e.GpuAllocationRatio();
    const Extender::Fragmentation frag = e.GpuFragmentation();
    g.gpu_fragmentation_milli = frag.milli;
    g.gpu_fragmentation_ratio = frag.ratio;
    g.gpu_memory_overcommit_ratio = e.GpuMemoryOvercommitRatio();
    const SnapshotStats snapshot = e.snapshot();
    g.nodes = snapshot.nodes;
    g.snapshot_pods = snapshot.pods_placed;
    g.snapshot_pods_not_fitting = snapshot.pods_not_fitting;
    g.snapshots = snapshot.snapshots;
    g.reservations_kept = snapshot.reservations_kept;
    return {.content_type = "text/plain; version=0.0.4", .body = server.metrics_.Text(g)};
  }

  // Filter or prioritize: parse ExtenderArgs, answer.
  HttpAnswer Verb(const HttpRequest& r, const std::string& verb, Clock::time_point t0) {
    ExtenderMetrics& metrics = server.metrics_;
    auto fail = [&](int status, const std::string& outcome, const std::string& error) {
      metrics.Observe(verb, outcome, SecondsSince(t0));
      Log(r, verb, status, "", 0, SecondsSince(t0), error);
      return HttpAnswer{.status = status, .body = ErrorBody(verb, error)};
    };
    const Result<ExtenderArgs> args = ParseExtenderArgs(r.body, verb + " request");
    if (!args) return fail(400, "bad_request", args.error().message);
    if (args->full_nodes && options().node_cache_capable)
      return fail(400, "bad_request",
                  verb + " request: .Nodes (a full NodeList) is set, but this extender is configured "
                         "nodeCacheCapable: true (NodeNames only); start serve with --node-cache-capable=false "
                         "if kube-scheduler's extender configuration says nodeCacheCapable: false");
    if (args->full_nodes && r.body.size() > options().max_nodes_body_bytes)
      return fail(413, "too_large",
                  fmt::format("{} request: a request with .Nodes above {} bytes", verb, options().max_nodes_body_bytes));
    std::string body, request;
    if (verb == "filter") {
      const Result<FilterResult> f = server.extender_->Filter(*args);
      if (!f) return fail(400, "bad_request", f.error().message);
      request = f->request_from;
      metrics.CountPodRequest(f->request_from.starts_with("telemetry profile") ? "telemetry_profile" : "declared");
      metrics.CountNodes("kept", static_cast<std::int64_t>(f->kept.size()));
      metrics.CountNodes("failed", static_cast<std::int64_t>(f->failed.size()));
      metrics.CountNodes("unresolvable", static_cast<std::int64_t>(f->failed_and_unresolvable.size()));
      body = WriteFilterResult(*args, *f);
    } else {
      const Result<std::vector<HostPriority>> p = server.extender_->Prioritize(*args);
      if (!p) return fail(400, "bad_request", p.error().message);
      body = WriteHostPriorityList(*p);
    }
    metrics.Observe(verb, "ok", SecondsSince(t0));
    Log(r, verb, 200, args->pod.Key(), args->node_names.size(), SecondsSince(t0), "", request);
    return {.body = std::move(body)};
  }

  // Bind: serve/bind_verb.h decides; every failure is a 200 answer whose Error says why
  // (kube-scheduler then schedules the pod again); a malformed body is 400.
  HttpAnswer Bind(const HttpRequest& r, Clock::time_point t0) {
    const Result<BindingArgs> args = ParseBindingArgs(r.body, "bind request");
    if (!args) {
      server.metrics_.Observe("bind", "bad_request", SecondsSince(t0));
      Log(r, "bind", 400, "", 0, SecondsSince(t0), args.error().message);
      return {.status = 400, .body = WriteBindingResult(args.error().message)};
    }
    const std::string pod = args->pod_namespace + "/" + args->pod_name;
    const BindAnswer decided = DecideBind(*server.extender_, options().bind, *args);
    server.metrics_.Observe("bind", decided.outcome, SecondsSince(t0));
    Log(r, "bind", 200, pod, 1, SecondsSince(t0), decided.error, {}, args->node);
    return {.body = WriteBindingResult(decided.error)};
  }

  void Closed(const std::string& reason, const std::string& peer, const std::string& why) {
    server.metrics_.CountClosed(reason);
    if (!options().log || peer.empty() || reason == "idle") return;  // idle keep-alive ends are routine
    options().log(Dump(nlohmann::json{{"event", "connection closed"}, {"peer", peer}, {"reason", why}}));
  }
};

ExtenderServer::ExtenderServer(std::unique_ptr<Extender> extender, ServerOptions options)
    : extender_(std::move(extender)), options_(std::move(options)), impl_(std::make_unique<Impl>(*this)) {
  Impl* impl = impl_.get();
  impl_->listener.emplace(
      LimitsOf(options_),
      internal::HttpHandlers{
          .route = [impl](const HttpRequest& r) { return impl->Route(r); },
          .handle = [impl](HttpRequest& r) { return impl->Handle(r); },
          .refused = [impl](const HttpRequest& r, int status, const std::string& outcome,
                            const std::string& error) { return impl->Refused(r, status, outcome, error); },
          .closed = [impl](const std::string& reason, const std::string& peer,
                           const std::string& why) { impl->Closed(reason, peer, why); }});
}

ExtenderServer::~ExtenderServer() {
  Stop();
  impl_->listener.reset();  // joins its workers while the extender is still there
}

Result<void> ExtenderServer::Bind() {
  if (Result<void> ok = CheckAuthentication(options_); !ok) return ok;
  if (!options_.auth_token_file.empty()) {
    Result<BearerToken> token = BearerToken::Load(options_.auth_token_file);
    if (!token) return token.error();
    impl_->token.emplace(std::move(*token));
  }
  if (!options_.metrics_token_file.empty()) {
    Result<BearerToken> token = BearerToken::Load(options_.metrics_token_file);
    if (!token) return Error{token.error().code, "--metrics-token-file: " + token.error().message};
    impl_->metrics_token.emplace(std::move(*token));
  }
  return impl_->listener->Bind(
      options_.host, options_.port,
      {.cert_file = options_.tls_cert_file, .key_file = options_.tls_key_file, .client_ca_file = options_.client_ca_file},
      fmt::format("serve: TLS: cannot load --tls-cert-file {} with --tls-key-file {}{}{}", options_.tls_cert_file,
                  options_.tls_key_file, options_.client_ca_file.empty() ? "" : " and --client-ca-file ",
                  options_.client_ca_file));
}

int ExtenderServer::port() const { return impl_->listener->port(); }

bool ExtenderServer::Serve() {
  if (stopped_) return true;  // Stop came and went first
  impl_->listener->Run();
  return true;
}

void ExtenderServer::Stop(double drain_s) {
  stopping_ = true;  // /readyz answers 503 from now on
  if (drain_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(drain_s));
  stopped_ = true;  // a Serve that has not begun will not
  impl_->listener->Stop();
}

struct WaitingServer::Impl {
  std::string why;
  std::optional<internal::HttpListener> listener;
  std::thread thread;
};

WaitingServer::WaitingServer() : impl_(std::make_unique<Impl>()) {}

WaitingServer::~WaitingServer() { Stop(); }

Result<void> WaitingServer::Start(const std::string& host, int port, const std::string& why) {
  Impl* impl = impl_.get();
  impl->why = why;
  auto unavailable = [impl] { return HttpAnswer{.status = 503, .content_type = "text/plain", .body = impl->why + "\n"}; };
  // The extender's bounds with its default timeouts (5 s read, 10 s body); no verb is served.
  impl->listener.emplace(
      internal::HttpLimits{.io_threads = 1, .work_threads = 1},
      internal::HttpHandlers{
          .route = [unavailable](const HttpRequest& r) -> std::variant<std::size_t, HttpAnswer> {
            if (r.method == "GET" && PathOf(r.target) == "/healthz") return std::size_t{0};
            return unavailable();
          },
          .handle = [](HttpRequest&) { return HttpAnswer{.content_type = "text/plain", .body = "ok\n"}; },
          .refused = [](const HttpRequest&, int status, const std::string&, const std::string& error) {
            return HttpAnswer{.status = status, .content_type = "text/plain", .body = error + "\n"};
          },
          .closed = nullptr});
  if (Result<void> ok = impl->listener->Bind(host, port, {}, ""); !ok)
    return Unavailable("serve: cannot bind {}:{} (in use, or not an address of this machine)", host, port);
  impl->thread = std::thread([impl] { impl->listener->Run(); });
  return {};
}

void WaitingServer::Stop() {
  if (!impl_->thread.joinable()) return;
  impl_->listener->Stop(/*cut_all=*/true);  // slow clients too: the extender takes the port now
  impl_->thread.join();
  impl_->listener.reset();
}

}  // namespace gpufit::serve

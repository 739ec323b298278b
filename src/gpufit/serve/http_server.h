// The scheduler extender over HTTP (Boost.Beast: serve/internal/http_listener.h), as
// kube-scheduler calls it (formats.md (d): POST <urlPrefix>/<verb>, JSON body, any status but
// 200 is an error):
//
//   POST <prefix>/filter      ExtenderArgs -> ExtenderFilterResult
//   POST <prefix>/prioritize  ExtenderArgs -> HostPriorityList
//   POST <prefix>/bind        ExtenderBindingArgs -> ExtenderBindingResult: serve::DecideBind
//                             (bind_verb.h); without `bind`, every bind answers an Error
//   GET  /healthz             200 "ok" while the process serves
//   GET  /readyz              200 "ready" once the snapshot is loaded (always, here: the server
//                             starts with its state), 503 during Stop's drain period
//   GET  /metrics             serve/metrics.h, Prometheus text format 0.0.4
//
// Authentication (Bind refuses to start without one, kInvalidArgument):
//  * `client_ca_file` (HTTPS): a client certificate it signed. The handshake asks for one but
//    completes without (kubelet's probes present none); a certificate that fails verification
//    fails the handshake. The verbs and /metrics without a verified certificate: 403.
//  * `auth_token_file` (HTTPS only): "Authorization: Bearer <token>" (serve/bearer_token.h:
//    read again when the file changes, compared in constant time); missing or wrong: 401.
//  * both: either one suffices (401 then, when neither is there).
//  * `metrics_token_file` (HTTPS only): a second bearer token that GET /metrics accepts and the
//    verbs never do, so that what Prometheus holds to scrape cannot filter or bind (issue 51).
//  * `insecure_http`: plain HTTP, no authentication (a loopback test); on a loopback host only,
//    not with `bind` (an anonymous client could create Bindings) and not with TLS files.
// /healthz and /readyz answer everyone. A refusal is a JSON {"Error": ...}, counted as outcome
// "unauthenticated" of its verb ("metrics" for /metrics) and logged with the peer.
//
// Bounds, per request (HttpLimits; numbers are the defaults):
//  * head: request line and each header line at most 8 KiB (kube-scheduler's heads are under
//    1 KiB; 8 KiB is Apache's and Go's per-line habit), at most 100 header lines, 64 KiB in
//    all (the most one connection holds while its head arrives): 414 for the target, else 431.
//  * time: the first byte within `read_timeout_s` of the connection's start or its previous
//    answer, and the TLS handshake within `read_timeout_s` of the start (an idle connection is
//    closed, reason "idle"; a handshake not done, "head_timeout"); the whole head within
//    `read_timeout_s + body_timeout_s` of the same (closed, "head_timeout", logged); the body
//    within `body_timeout_s` of its head (408); the answer taken within `body_timeout_s`.
//  * body: filter and prioritize at most `max_body_bytes` (413 by Content-Length before it is
//    read, or once a chunked body passes it); a request with Nodes (a full NodeList) only when
//    `node_cache_capable` is false (else 400 naming why), and then at most
//    `max_nodes_body_bytes`; bind at most `max_bind_body_bytes`; GET none (a GET body is
//    refused with 413). Bodies read and handled at once hold at most `body_budget_bytes`
//    (one more gets 503; kube-scheduler tries the pod again; a chunked body counts its route's
//    whole limit); routes of at most 1 MiB (bind) are not counted, so that filters cannot
//    starve binds: the connection caps bound them; after a body above 1 MiB the
//    heap is trimmed (malloc_trim) so the memory goes back to the system.
//  * connections: at most `max_connections` open, `max_connections_per_peer` from one IP;
//    one more is accepted and closed at once ("too_many_connections", "too_many_from_peer"),
//    logged at most once a minute per peer. Listen backlog SOMAXCONN.
// Closed connections are counted in gpufit_extender_connections_closed_total{reason}.
// A malformed request is answered 400 with an ExtenderFilterResult whose Error says why
// (prioritize: a JSON {"Error": ...}); kube-scheduler fails the pod's attempt on a filter
// error and ignores a prioritize error (formats.md (d)). A handler that throws answers 500,
// counted as outcome "internal"; none takes the server down.
// Logs: one JSON line per request on `log` (verb, status, pod, nodes, duration, error, peer
// "ip:port", and with a client certificate its subject CN as "client").
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "gpufit/core/result.h"
#include "gpufit/serve/bind_verb.h"
#include "gpufit/serve/extender.h"
#include "gpufit/serve/metrics.h"

namespace gpufit::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                 // 0: any free port (see ExtenderServer::port)
  std::string url_prefix = "";  // e.g. "/scheduler"; the verbs are appended
  std::size_t max_body_bytes = std::size_t{16} << 20;  // filter, prioritize
  double body_timeout_s = 10;
  double read_timeout_s = 5;  // the first byte of a request; + body_timeout_s: its whole head
  std::function<void(const std::string& json_line)> log{};  // null: no request log
  BindFunction bind{};  // serve/bind_verb.h, e.g. ApiServerBinder::Bind; null: bind not enabled
  // HTTPS (kube-scheduler's extender `enableHTTPS`): the server's certificate chain and its key,
  // PEM files; both empty: plain HTTP. With `client_ca_file` too, a client must present a
  // certificate signed by it (the extender's tlsConfig certFile/keyFile), or the handshake fails.
  std::string tls_cert_file{}, tls_key_file{}, client_ca_file{};
  std::string auth_token_file{};  // serve/bearer_token.h; HTTPS only
  std::string metrics_token_file{};  // /metrics only (see above); HTTPS only
  bool insecure_http = false;     // plain HTTP without authentication; not with `bind`
  // kube-scheduler's extender nodeCacheCapable (deploy/scheduler/*.yaml: true): requests carry
  // NodeNames. False: they carry Nodes, a full NodeList, parsed into a DOM of about ten times
  // the text, so such a body is held to 8 MiB (about 2,000 Nodes of 4 KiB), apart from
  // max_body_bytes.
  bool node_cache_capable = true;
  std::size_t max_nodes_body_bytes = std::size_t{8} << 20;
  std::size_t max_bind_body_bytes = std::size_t{64} << 10;  // an ExtenderBindingArgs is ~200 bytes
  std::size_t max_connections = 1024, max_connections_per_peer = 64;
  std::size_t body_budget_bytes = std::size_t{64} << 20;  // 4 bodies of 16 MiB at once
};

// Whether `options` name an authentication (see above), before anything is read or bound: the
// error says what to give; `insecure_http` only on a loopback host (as the controller's
// --metrics-insecure-http). Errors: kInvalidArgument.
Result<void> CheckAuthentication(const ServerOptions& options);

class ExtenderServer {
 public:
  ExtenderServer(std::unique_ptr<Extender> extender, ServerOptions options);
  ~ExtenderServer();

  // Binds the socket. Errors: kUnavailable when the address cannot be bound; kInvalidArgument
  // when the TLS files or the token file cannot be read or do not match, or no authentication
  // is configured (see above).
  Result<void> Bind();
  bool https() const { return !options_.tls_cert_file.empty(); }
  int port() const;
  // Serves until Stop(); returns false when the server failed.
  bool Serve();
  // From any thread: /readyz answers 503 for `drain_s` seconds (so that the Service's endpoints
  // drop this pod while it still answers), then the socket closes, idle connections close,
  // in-flight requests finish and Serve returns. A Serve that begins after the drain returns at
  // once.
  void Stop(double drain_s = 0);

  const ExtenderMetrics& metrics() const { return metrics_; }
  // The extender it serves (thread-safe), e.g. for Reconcile from a snapshot watcher.
  Extender& extender() { return *extender_; }

 private:
  struct Impl;
  std::unique_ptr<Extender> extender_;
  ServerOptions options_;
  ExtenderMetrics metrics_;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};  // Stop is past its drain
};

// What answers on the extender's address before its state exists (`serve --watch-dir` waiting
// for the first snapshot): GET /healthz 200 (the process is alive: a liveness probe must not
// restart it while a sidecar is still listing a large cluster), GET /readyz 503, anything else
// 503. Stop before the extender binds the same address.
class WaitingServer {
 public:
  WaitingServer();
  ~WaitingServer();
  // Errors: kUnavailable when the address cannot be bound.
  Result<void> Start(const std::string& host, int port, const std::string& why);
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufit::serve

// The scheduler extender over HTTP (cpp-httplib), as kube-scheduler calls it
// (formats.md (d): POST <urlPrefix>/<verb>, JSON body, any status but 200 is an error):
//
//   POST <prefix>/filter      ExtenderArgs -> ExtenderFilterResult
//   POST <prefix>/prioritize  ExtenderArgs -> HostPriorityList
//   POST <prefix>/bind        ExtenderBindingArgs -> ExtenderBindingResult: Extender::Reserve,
//                             then `bind` (the Binding on the API server; Release when it
//                             fails); without `bind`, every bind answers an Error
//   GET  /healthz             200 "ok" while the process serves
//   GET  /readyz              200 "ready" once the snapshot is loaded (always, here: the server
//                             starts with its state), 503 during Stop's drain period
//   GET  /metrics             serve/metrics.h, Prometheus text format 0.0.4
//
// Bounds: a body above `max_body_bytes` is refused with 413 before it is read (httplib checks
// Content-Length; a chunked body is cut at the bound); a body still unread `body_timeout_s`
// after the request started is refused with 408 (a client sending a byte a second); each
// socket read waits at most `read_timeout_s`, an idle keep-alive connection as long; a request
// head not read within `read_timeout_s + body_timeout_s` of the connection's start or its
// previous answer gets the connection shut down (serve/header_deadline.h). A malformed request is answered 400 with an
// ExtenderFilterResult whose Error says why (prioritize: a JSON {"Error": ...}); kube-scheduler
// fails the pod's attempt on a filter error and ignores a prioritize error (formats.md (d)). A
// handler that throws answers 500, counted as outcome "internal"; none takes the server down.
// Logs: one JSON line per request on `log` (verb, status, pod, nodes, duration, error).
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
  std::size_t max_body_bytes = std::size_t{16} << 20;
  double body_timeout_s = 10;
  double read_timeout_s = 5;
  std::function<void(const std::string& json_line)> log{};  // null: no request log
  BindFunction bind{};  // serve/bind_verb.h, e.g. ApiServerBinder::Bind; null: bind not enabled
  // HTTPS (kube-scheduler's extender `enableHTTPS`): the server's certificate chain and its key,
  // PEM files; both empty: plain HTTP. With `client_ca_file` too, a client must present a
  // certificate signed by it (the extender's tlsConfig certFile/keyFile), or the handshake fails.
  std::string tls_cert_file{}, tls_key_file{}, client_ca_file{};
};

class ExtenderServer {
 public:
  ExtenderServer(std::unique_ptr<Extender> extender, ServerOptions options);
  ~ExtenderServer();

  // Binds the socket. Errors: kUnavailable when the address cannot be bound; kInvalidArgument
  // when the TLS files cannot be read or do not match.
  Result<void> Bind();
  bool https() const { return !options_.tls_cert_file.empty(); }
  int port() const { return port_; }
  // Serves until Stop(); returns false when the server failed.
  bool Serve();
  // From any thread: /readyz answers 503 for `drain_s` seconds (so that the Service's endpoints
  // drop this pod while it still answers), then the socket closes, in-flight requests finish
  // and Serve returns. A Serve that begins after the drain returns at once.
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
  std::atomic<bool> serving_{false};
  std::atomic<bool> stopped_{false};  // Stop is past its drain
  int port_ = 0;
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

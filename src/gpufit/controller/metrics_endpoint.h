// The controller's HTTP endpoint, on the extender's bounded listener
// (serve/internal/http_listener.h: head, time, body and connection bounds as there, defaults
// of HttpLimits) with its bearer-token check (serve/bearer_token.h):
//
//   GET /metrics   the exposition text `metrics()` returns (text/plain; version=0.0.4)
//   GET /healthz   200 "ok" to everyone (kubelet's probes carry no token); 503 with the reason
//                  when `unhealthy` says one (the controller's loop has not finished a run for
//                  longer than it should: a liveness probe then restarts the pod)
//   anything else  404; a method other than GET 405; a GET with a body 413
//
// Authentication, as `gpufit serve` enforces it (serve/http_server.h), checked before
// anything is bound (kInvalidArgument saying what to give):
//  * TLS (`tls_cert_file`, `tls_key_file`) with `auth_token_file`: /metrics needs
//    "Authorization: Bearer <token>", else 401 (the file is re-read when it changes);
//  * `insecure_http`: plain HTTP without authentication, only on a loopback host
//    (127.0.0.1, ::1, localhost): nothing off the machine can reach it.
// Threads: the listener's own; `metrics` is called on a worker thread and must be thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "gpufit/core/result.h"

namespace gpufit::controller {

struct MetricsEndpointOptions {
  std::string host = "127.0.0.1";
  int port = 9464;  // 0: any free port
  std::string tls_cert_file{}, tls_key_file{}, auth_token_file{};
  bool insecure_http = false;
};

// Errors: kInvalidArgument naming the flags (--metrics-*) when no authentication is given, a
// token without TLS, or plain HTTP off loopback.
Result<void> CheckMetricsAuthentication(const MetricsEndpointOptions& options);

class MetricsEndpoint {
 public:
  // `unhealthy`: "" while healthy, else why not (thread-safe; null: always healthy).
  MetricsEndpoint(MetricsEndpointOptions options, std::function<std::string()> metrics,
                  std::function<std::string()> unhealthy = {});
  ~MetricsEndpoint();  // stops and joins
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Binds and serves on threads of its own. Errors: those of CheckMetricsAuthentication, the
  // token file's (kInvalidArgument), the TLS files' (kInvalidArgument), the address's
  // (kUnavailable: in use or not local).
  Result<void> Start();
  int port() const;
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufit::controller

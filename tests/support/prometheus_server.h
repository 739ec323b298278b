// Test servers on loopback, started by a test and stopped when it ends.
//
//  * PrometheusServer: Debian's real `prometheus` (installed by scripts/bootstrap) on a free
//    127.0.0.1 port with a temporary data directory, loaded beforehand with
//    `promtool tsdb create-blocks-from openmetrics` from OpenMetrics text the test wrote;
//    the "prometheus" of metrics_server.h.
//  * FakeHttpServer: a cpp-httplib server answering GET and POST /api/v1/query_range with a handler
//    of the test's choosing, for the faults a real server will not produce on demand
//    (HTTP 500, a slow answer, malformed JSON, a header check).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "gpufit/core/result.h"
#include "metrics_server.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace gpufit::testing {

// A 127.0.0.1 port nothing listens on at the time of the call.
int FreeLoopbackPort();

class PrometheusServer final : public MetricsServer {
 public:
  struct Options {
    std::string web_config_yaml;  // optional --web.config.file contents (TLS, basic auth)
    bool https = false;           // url() scheme
    // The address it listens on and url() names: a non-loopback address of this machine for a
    // server the API server proxies to (it refuses loopback and link-local endpoints).
    std::string host = "127.0.0.1";
  };
  // Writes `openmetrics` under `dir`, builds TSDB blocks from it, starts the server and
  // waits (up to 60 s) until /-/ready answers. Errors carry promtool's or prometheus's log.
  static Result<std::unique_ptr<PrometheusServer>> Start(const std::string& openmetrics, const std::string& dir,
                                                         const Options& options);
  static Result<std::unique_ptr<PrometheusServer>> Start(const std::string& openmetrics, const std::string& dir) {
    return Start(openmetrics, dir, Options{});
  }
  ~PrometheusServer() override;  // SIGTERM, then waits for the process
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  const std::string& url() const override { return url_; }
  std::string_view Name() const override { return "prometheus"; }

 private:
  PrometheusServer() = default;
  int pid_ = -1;
  std::string url_;
};

class FakeHttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  explicit FakeHttpServer(Handler handler);
  ~FakeHttpServer();
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  std::string url() const;
  int requests() const { return requests_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
};

}  // namespace gpufit::testing

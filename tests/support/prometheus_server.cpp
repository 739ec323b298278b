#include "prometheus_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include "child_process.h"

namespace gpufit::testing {
namespace {

namespace fs = std::filesystem;

}  // namespace

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

Result<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(const std::string& openmetrics,
                                                                  const std::string& dir, const Options& options) {
  const fs::path root(dir);
  const fs::path data = root / "tsdb";
  std::ofstream(root / "fixture.om") << openmetrics;
  // promtool: the fixture becomes TSDB blocks the server loads at start.
  const int promtool = SpawnLogged(
      {"promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", (root / "fixture.om").string(), data.string()},
      root / "promtool.log");
  if (promtool < 0)
    return FailedPrecondition("cannot run promtool: install Debian's prometheus with scripts/bootstrap");
  int status = 0;
  waitpid(promtool, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return FailedPrecondition("promtool create-blocks-from openmetrics failed: {}",
                              ReadFileText(root / "promtool.log"));

  std::ofstream(root / "prometheus.yml") << "global:\n  scrape_interval: 1h\n";
  const int port = FreeLoopbackPort();
  std::vector<std::string> argv = {"prometheus",
                                   "--config.file=" + (root / "prometheus.yml").string(),
                                   "--storage.tsdb.path=" + data.string(),
                                   "--storage.tsdb.retention.time=100y",
                                   fmt::format("--web.listen-address={}:{}", options.host, port),
                                   "--log.level=warn"};
  if (!options.web_config_yaml.empty()) {
    std::ofstream(root / "web.yml") << options.web_config_yaml;
    argv.push_back("--web.config.file=" + (root / "web.yml").string());
  }
  std::unique_ptr<PrometheusServer> server(new PrometheusServer());
  server->pid_ = SpawnLogged(argv, root / "prometheus.log");
  if (server->pid_ < 0)
    return FailedPrecondition("cannot run prometheus: install Debian's prometheus with scripts/bootstrap");
  server->url_ = fmt::format("{}://{}:{}", options.https ? "https" : "http", options.host, port);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(server->pid_, &status, WNOHANG) == server->pid_) {
      server->pid_ = -1;
      return FailedPrecondition("prometheus exited at start: {}", ReadFileText(root / "prometheus.log"));
    }
    httplib::Client client(server->url_);
    client.enable_server_certificate_verification(false);
    client.set_connection_timeout(1, 0);
    if (const auto res = client.Get("/-/ready"); res && res->status == 200) return server;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return FailedPrecondition("prometheus was not ready within 60 s: {}", ReadFileText(root / "prometheus.log"));
}

PrometheusServer::~PrometheusServer() { TerminateAndWait(pid_); }

FakeHttpServer::FakeHttpServer(Handler handler) : server_(std::make_unique<httplib::Server>()) {
  const auto serve = [this, handler](const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    handler(req, res);
  };
  server_->Get("/api/v1/query_range", serve);
  server_->Post("/api/v1/query_range", serve);
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeHttpServer::~FakeHttpServer() {
  server_->stop();
  thread_.join();
}

std::string FakeHttpServer::url() const { return fmt::format("http://127.0.0.1:{}", port_); }

}  // namespace gpufit::testing

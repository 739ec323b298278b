// The HTTP server's test fixtures: an extender served on a free loopback port (Served) and a
// raw socket client (RawClient) for requests httplib::Client will not make.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/serve/http_server.h"
#include "serve_fixture.h"

namespace gpufit::serve::testing {

using Json = nlohmann::json;

// An extender over two nodes (n1: 8 cores, 2 GPUs; n2: 4 cores, 1 GPU, full) served on a free
// loopback port, on its own thread, until the test ends.
class Served {
 public:
  explicit Served(ServerOptions options = {}) {
    const Json nodes = testing::ListOf({NodeJson("n1", 8, "64Gi", 2, "A100"), NodeJson("n2", 4, "32Gi", 1, "A100")},
                                       "NodeList");
    std::vector<KubePod> pods{*ParseKubePod(PodJson("full", "4", "8Gi", 1, "n2"), "pods")};
    auto e = Extender::FromSnapshot(*ParseKubeNodes(nodes, "nodes"), pods, {});
    EXPECT_TRUE(e) << e.error().message;
    if (options.tls_cert_file.empty()) options.insecure_http = true;  // plain HTTP on loopback
    options.log = [this](const std::string& line) {
      const std::lock_guard lock(mu_);
      log_.push_back(line);
    };
    https_ = !options.tls_cert_file.empty();
    server_ = std::make_unique<ExtenderServer>(std::move(*e), options);
    const Result<void> bound = server_->Bind();
    EXPECT_TRUE(bound) << bound.error().message;
    thread_ = std::thread([this] { server_->Serve(); });
  }
  ~Served() { Stop(0); }
  void Stop(double drain_s) {
    server_->Stop(drain_s);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return server_->port(); }
  // A client of the server: plain HTTP, or HTTPS (the server's certificate not checked) with
  // the client certificate `cert` and `key` when given.
  httplib::Client Client(const std::string& cert = "", const std::string& key = "") const {
    if (!https_) return httplib::Client("127.0.0.1", port());
    httplib::Client c("https://127.0.0.1:" + std::to_string(port()), cert, key);
    c.enable_server_certificate_verification(false);
    return c;
  }
  const ExtenderMetrics& metrics() const { return server_->metrics(); }
  std::vector<std::string> log() {
    const std::lock_guard lock(mu_);
    return log_;
  }

 private:
  bool https_ = false;
  std::unique_ptr<ExtenderServer> server_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> log_;
};

// A raw loopback connection, for clients httplib::Client will not be (too large, too slow).
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  }
  ~RawClient() { ::close(fd_); }
  int fd() const { return fd_; }
  bool Send(std::string_view bytes) { return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()); }
  // Everything the server sends until it closes (or 10 s pass).
  std::string Receive() {
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd_, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
  // One answer: its headers and its Content-Length bytes of body (waiting at most 10 s a read),
  // without waiting for the server to close.
  std::string ReceiveFirst() {
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd_, buf, sizeof buf, 0)) > 0;) {
      out.append(buf, static_cast<std::size_t>(n));
      const std::size_t head = out.find("\r\n\r\n");
      const std::size_t at = out.find("Content-Length: ");
      if (head == std::string::npos || at == std::string::npos || at > head) continue;
      if (out.size() >= head + 4 + std::stoul(out.substr(at + 16))) break;
    }
    return out;
  }

 private:
  int fd_;
};

}  // namespace gpufit::serve::testing

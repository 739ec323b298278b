// A raw-socket HTTP server on loopback that answers every request with a status line and then
// one byte of a header every `interval`, never finishing the headers: the "slow headers" attack
// (Slowloris turned around). A fake, because no real Prometheus (or VictoriaMetrics, or proxy)
// trickles on demand; tests use it to check that a client's deadline covers the headers, which
// cpp-httplib's per-read timeouts do not.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace gpufit::testing {

class HeaderTrickleServer {
 public:
  explicit HeaderTrickleServer(std::chrono::milliseconds interval = std::chrono::milliseconds(1000))
      : interval_(interval) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listen_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~HeaderTrickleServer() {
    stop_ = true;
    ::shutdown(listen_, SHUT_RDWR);
    thread_.join();
    ::close(listen_);
  }
  HeaderTrickleServer(const HeaderTrickleServer&) = delete;
  HeaderTrickleServer& operator=(const HeaderTrickleServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }

 private:
  // One connection at a time: the clients under test make one request and wait.
  void Serve() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++connections_;
      const std::string head = "HTTP/1.1 200 OK\r\nX-Trickle: ";
      bool open = ::send(c, head.data(), head.size(), MSG_NOSIGNAL) > 0;
      while (open && !stop_) {
        // Sleep in small steps, watching for the client's close.
        for (auto slept = std::chrono::milliseconds(0); slept < interval_ && !stop_;
             slept += std::chrono::milliseconds(10)) {
          pollfd q{c, POLLIN | POLLRDHUP, 0};
          char buf[4096];
          if (::poll(&q, 1, 10) > 0 && (q.revents & (POLLRDHUP | POLLHUP | POLLERR))) open = false;
          if (::poll(&q, 1, 0) > 0 && (q.revents & POLLIN) && ::recv(c, buf, sizeof buf, MSG_DONTWAIT) == 0)
            open = false;
          if (!open) break;
        }
        if (open) open = ::send(c, "x", 1, MSG_NOSIGNAL) == 1;
      }
      ::close(c);
    }
  }

  std::chrono::milliseconds interval_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace gpufit::testing

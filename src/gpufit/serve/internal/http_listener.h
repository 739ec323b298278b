// The HTTP/1.1 server under serve/http_server.h (Boost.Beast over Boost.Asio; TLS through
// Boost.Asio SSL over OpenSSL): accepts connections, reads each request within its bounds,
// hands the request to a worker thread and writes the answer. It knows no routes: `route` says
// what a request head may carry (its body limit) or answers it at once, `handle` answers a
// request whose body was read.
//
// Threads: `io_threads` run every socket operation asynchronously (an idle or slow connection
// holds no thread, only its buffer: at most `max_head_bytes` while the head is read); the
// handlers run on `work_threads` others (the bind verb may wait seconds for the API server).
//
// Bounds (each refusal answers the status with Connection: close, then closes):
//  * head: at most `max_head_bytes` in all (else 431, or 414 when no line ended), a target of at
//    most `max_line_bytes` (414), at most `max_headers` header lines (431), each at most
//    `max_line_bytes` (431). Beast buffers the whole head before it parses it, so the line and
//    count bounds are checked once the head is complete; a head that never ends stops at
//    `max_head_bytes`.
//  * time: a connection's first byte (or, kept alive, its next request's) within
//    `first_byte_s` (else closed, reason "idle"); the whole head within `head_s` of the
//    connection's start or its previous answer (else closed, "head_timeout"); the body within
//    `body_s` of the head (408); the answer written within `write_s` (else closed,
//    "write_timeout"); a TLS handshake within `head_s` ("head_timeout").
//  * body: above the route's limit, 413 (by Content-Length before a byte of it is read, or
//    once a chunked body passes it); the bodies being read and handled at once hold at most
//    `body_budget_bytes` (a request past the budget, while others hold it, gets 503: its
//    Content-Length counts, or its route's limit when chunked).
//  * connections: at most `max_connections` in all and `max_connections_per_peer` from one
//    IP address; one more is accepted and closed at once (reasons "too_many_connections",
//    "too_many_from_peer"). Of the `max_connections`, a quarter are kept for
//    connections that have sent a whole request head (over TLS, after the handshake): those
//    that have not may hold the rest, and one more of them evicts the oldest of them (reason
//    "evicted"). So sockets that connect and send nothing (or no ClientHello), however many
//    and however fast they come back, cannot hold the slots a client that speaks needs: its
//    new connection takes an idle one's place, and once its head is read it is not evicted.
// Closed connections are counted always and logged at most once a minute per IP address (a
// flood of timeouts must not flood the log).
// A body above 1 MiB is handled on a thread of its own, one at a time (per-thread parser buffers,
// such as extender_wire's simdjson parser, then grow on that thread only), and after it
// malloc_trim(0) gives the freed heap back to the system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::serve::internal {

struct HttpLimits {
  std::size_t max_line_bytes = std::size_t{8} << 10;
  std::size_t max_headers = 100;
  std::size_t max_head_bytes = std::size_t{64} << 10;
  double first_byte_s = 5, head_s = 15, body_s = 10, write_s = 10;
  std::size_t max_connections = 1024, max_connections_per_peer = 64;
  std::size_t body_budget_bytes = std::size_t{64} << 20;
  int io_threads = 2, work_threads = 8;
};

// A request as read: the head, who sent it, and (for `handle`) its body.
struct HttpRequest {
  std::string method{}, target{};  // target as sent, query included
  std::string peer{};              // "ip:port"
  std::string authorization{};     // the Authorization header, "" when absent
  bool tls = false;
  bool client_verified = false;    // TLS: a client certificate the client CA signed
  std::string client_cn{};         // its subject's common name
  std::string body{};
};

struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body{};
  std::vector<std::pair<std::string, std::string>> headers{};
};

struct HttpHandlers {
  // After the head (on an I/O thread, quick): the route's body limit, or an answer at once.
  std::function<std::variant<std::size_t, HttpAnswer>(const HttpRequest&)> route;
  // The request with its body (on a worker thread).
  std::function<HttpAnswer(HttpRequest&)> handle;
  // A request the bounds refused (400, 408, 413, 414, 431, 503): its answer. `outcome` is the
  // metrics label ("bad_request", "timeout", "too_large", "busy"); `request` has what was read.
  std::function<HttpAnswer(const HttpRequest& request, int status, const std::string& outcome, const std::string& error)>
      refused;
  // A connection the server closed by a bound: reason as above, peer "ip:port", why in words.
  std::function<void(const std::string& reason, const std::string& peer, const std::string& why)> closed;
};

struct TlsFiles {
  std::string cert_file{}, key_file{}, client_ca_file{};  // cert empty: plain HTTP
};

class HttpListener {
 public:
  HttpListener(HttpLimits limits, HttpHandlers handlers);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Errors: kInvalidArgument when the TLS files cannot be loaded or do not match (`what`
  // names them); kUnavailable when the address cannot be bound (SO_REUSEADDR, not
  // SO_REUSEPORT: a second server on the port fails). Port 0: any free port.
  Result<void> Bind(const std::string& host, int port, const TlsFiles& tls, const std::string& what);
  int port() const;
  // Serves on this thread and io_threads - 1 more until Stop and the last connection ends.
  void Run();
  // From any thread: no new connection; idle ones close now (all of them with `cut_all`),
  // requests in flight finish and their connections close.
  void Stop(bool cut_all = false);

  struct Impl;  // the .cpp's

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpufit::serve::internal

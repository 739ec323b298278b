#include "gpufit/serve/internal/http_listener.h"

#include <fmt/format.h>
#include <malloc.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace gpufit::serve::internal {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {

constexpr std::size_t kTrimAboveBytes = std::size_t{1} << 20;  // malloc_trim after a body above 1 MiB
constexpr std::size_t kUnbudgetedRouteBytes = std::size_t{1} << 20;  // routes this small skip the body budget

Clock::time_point After(Clock::time_point t, double s) {
  return t + std::chrono::duration_cast<Clock::duration>(Seconds(s));
}

std::string Kib(std::size_t bytes) { return fmt::format("{} KiB", bytes / 1024); }
std::string Size(std::size_t bytes) {
  return bytes >= (std::size_t{1} << 20) ? fmt::format("{} MiB", bytes >> 20)
         : bytes >= 1024                 ? Kib(bytes)
                                         : fmt::format("{} bytes", bytes);
}

}  // namespace

// A connection, whatever its stream: what Stop and the connection count need of it.
struct Connection {
  virtual ~Connection() = default;
  virtual void Start() = 0;
  virtual void StopIfIdle(bool cut_all) = 0;  // posts to the connection's strand
};

struct HttpListener::Impl {
  Impl(HttpLimits l, HttpHandlers h)
      : limits(l), handlers(std::move(h)), work(static_cast<std::size_t>(l.work_threads)), large(1) {}

  HttpLimits limits;
  HttpHandlers handlers;
  asio::io_context io{std::max(1, limits.io_threads)};
  asio::thread_pool work;
  asio::thread_pool large;  // bodies above kTrimAboveBytes, one at a time
  tcp::acceptor acceptor{io};
  std::optional<asio::ssl::context> tls;
  bool client_ca = false;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<std::size_t> body_bytes{0};  // bodies being read and handled

  std::mutex mu;  // guards the rest
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard{io.get_executor()};
  std::map<Connection*, std::weak_ptr<Connection>> connections;
  std::map<std::string, std::size_t> per_peer;                // open connections by IP
  std::map<std::string, Clock::time_point> refusal_logged;    // by IP: at most once a minute
  // Connections that have not sent a whole request head yet, oldest first (header: eviction).
  std::list<Connection*> unproven;
  std::map<Connection*, std::list<Connection*>::iterator> unproven_at;

  void Accept();
  void Admit(tcp::socket socket);
  void Remove(Connection* c, const std::string& ip) {
    const std::lock_guard lock(mu);
    connections.erase(c);
    ForgetUnproven(c);
    if (auto it = per_peer.find(ip); it != per_peer.end() && --it->second == 0) per_peer.erase(it);
    FinishIfDone();
  }
  void ForgetUnproven(Connection* c) {  // under mu
    if (auto it = unproven_at.find(c); it != unproven_at.end()) {
      unproven.erase(it->second);
      unproven_at.erase(it);
    }
  }
  // A connection sent a whole request head: it is no longer evicted for newcomers.
  void Proven(Connection* c) {
    const std::lock_guard lock(mu);
    ForgetUnproven(c);
  }
  // Whether a closing of `ip`'s connection is logged now (at most once a minute per IP; under mu).
  bool LogNow(const std::string& ip) {
    const Clock::time_point now = Clock::now();
    auto [it, first] = refusal_logged.try_emplace(ip, now);
    const bool log = first || now - it->second >= std::chrono::minutes(1);
    if (log) it->second = now;
    if (refusal_logged.size() > 10000) refusal_logged.clear();  // bounded, whoever connects
    return log;
  }
  bool LogNowLocked(const std::string& ip) {
    const std::lock_guard lock(mu);
    return LogNow(ip);
  }
  void FinishIfDone() {  // under mu: after Stop, the io threads return once no connection is left
    if (stopping && connections.empty()) guard.reset();
  }
  bool Reserve(std::size_t n) {  // the body budget; one request alone always fits
    std::size_t now = body_bytes.load();
    do {
      if (now > 0 && now + n > limits.body_budget_bytes) return false;
    } while (!body_bytes.compare_exchange_weak(now, now + n));
    return true;
  }
};

namespace {

template <class Stream>
class Session final : public Connection, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;

  Session(HttpListener::Impl& server, tcp::socket socket, std::string ip, std::string peer)
      : server_(server), stream_(MakeStream(server, std::move(socket))), timer_(stream_.get_executor()),
        buffer_(server.limits.max_head_bytes + 1024), ip_(std::move(ip)) {
    request_.peer = std::move(peer);
    request_.tls = kTls;
  }
  ~Session() override {
    if (reserved_ > 0) server_.body_bytes -= reserved_;
    server_.Remove(this, ip_);
  }

  void Start() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->Begin(); });
  }

  void StopIfIdle(bool cut_all) override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this(), cut_all] {
      if (!self->busy_ || cut_all) self->Close();
    });
  }

 private:
  static Stream MakeStream(HttpListener::Impl& server, tcp::socket socket) {
    if constexpr (kTls)
      return Stream(std::move(socket), *server.tls);
    else
      return socket;
  }
  tcp::socket& Socket() {
    if constexpr (kTls)
      return stream_.next_layer();
    else
      return stream_;
  }
  const HttpLimits& limits() const { return server_.limits; }

  // The connection's one deadline: at `at`, `reason` ends the phase (closing the socket, or for
  // the body cancelling its read so that 408 can be answered).
  void Arm(Clock::time_point at, std::string reason) {
    const std::uint64_t gen = ++generation_;
    expired_.clear();  // a deadline that fired as its phase ended does not count for the next
    timer_.expires_at(at);
    timer_.async_wait([self = this->shared_from_this(), gen, reason = std::move(reason)](beast::error_code ec) {
      if (ec || gen != self->generation_) return;
      self->expired_ = reason;
      beast::error_code ignored;
      if (reason == "body")
        self->Socket().cancel(ignored);
      else
        self->Close();
    });
  }
  void Disarm() {
    ++generation_;
    timer_.cancel();
  }
  void Close() {
    ++generation_;
    timer_.cancel();
    beast::error_code ignored;
    Socket().shutdown(tcp::socket::shutdown_both, ignored);
    Socket().close(ignored);
  }
  void ClosedBy(const std::string& reason, const std::string& why) {
    if (server_.handlers.closed) server_.handlers.closed(reason, server_.LogNowLocked(ip_) ? request_.peer : "", why);
  }

  void Begin() {
    if (server_.stopping) return Close();
    connection_start_ = Clock::now();
    if constexpr (kTls) {
      // The handshake is the connection's first bytes: it gets the first-byte deadline, not the
      // whole head's (a socket that never starts TLS would otherwise hold a slot three times longer).
      Arm(After(connection_start_, limits().first_byte_s), "head_timeout");
      stream_.async_handshake(asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) { self->OnHandshake(ec); });
    } else {
      NextRequest();
    }
  }

  void OnHandshake(beast::error_code ec) {
    if (ec) {
      if (expired_ == "head_timeout")
        ClosedBy("head_timeout", fmt::format("TLS handshake not done within {} s", limits().first_byte_s));
      return Close();
    }
    if constexpr (kTls) {
      SSL* ssl = stream_.native_handle();
      if (X509* cert = SSL_get1_peer_certificate(ssl); cert != nullptr) {
        request_.client_verified = server_.client_ca && SSL_get_verify_result(ssl) == X509_V_OK;
        char cn[256] = {};
        if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn) > 0)
          request_.client_cn = cn;
        X509_free(cert);
      }
    }
    NextRequest();
  }

  void NextRequest() {
    if (server_.stopping) return Close();
    request_start_ = Clock::now();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits().max_head_bytes));
    parser_->body_limit(std::uint64_t{1} << 62);  // the route's limit is checked after the head
    if (buffer_.size() > 0) return ReadHead();
    Arm(After(request_start_, limits().first_byte_s), "idle");
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->buffer_.commit(n);
                              if (ec) {
                                if (self->expired_ == "idle")
                                  self->ClosedBy("idle", fmt::format("no request within {} s",
                                                                     self->limits().first_byte_s));
                                return self->Close();
                              }
                              self->ReadHead();
                            });
  }

  void ReadHead() {
    // A kept-alive connection's head deadline runs from its previous answer, a new one's from
    // its start (the TLS handshake included).
    const Clock::time_point from = answers_ == 0 ? connection_start_ : request_start_;
    Arm(After(from, limits().head_s), "head_timeout");
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnHead(ec); });
  }

  void OnHead(beast::error_code ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      const std::string_view seen(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      if (seen.find('\n') == std::string_view::npos)
        return Refuse(414, "bad_request", fmt::format("request line above {}", Kib(limits().max_line_bytes)));
      return Refuse(431, "bad_request", fmt::format("request head above {}", Kib(limits().max_head_bytes)));
    }
    if (ec) {
      if (expired_ == "head_timeout")
        ClosedBy("head_timeout", fmt::format("request head not read within {} s", limits().head_s));
      if (ec == http::error::end_of_stream || expired_ != "" || ec == asio::error::operation_aborted ||
          ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated)
        return Close();
      if (ec == http::error::bad_content_length)
        return Refuse(400, "bad_request", "Content-Length is not a byte count");
      return Refuse(400, "bad_request", "malformed request head: " + ec.message());
    }
    busy_ = true;  // a request in flight from its head to its answer: Stop lets it finish
    if (answers_ == 0) server_.Proven(this);
    const auto& head = parser_->get();
    request_.method = std::string(head.method_string());
    request_.target = std::string(head.target());
    request_.authorization = std::string(head[http::field::authorization]);
    request_.body.clear();
    if (request_.target.size() > limits().max_line_bytes)
      return Refuse(414, "bad_request", fmt::format("request target above {}", Kib(limits().max_line_bytes)));
    std::size_t lines = 0;
    for (const auto& field : head) {
      if (++lines > limits().max_headers)
        return Refuse(431, "bad_request", fmt::format("more than {} header lines", limits().max_headers));
      if (field.name_string().size() + field.value().size() + 2 > limits().max_line_bytes)
        return Refuse(431, "bad_request", fmt::format("a header line above {}", Kib(limits().max_line_bytes)));
    }
    keep_alive_ = head.keep_alive();
    auto routed = server_.handlers.route(request_);
    const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    if (auto* answer = std::get_if<HttpAnswer>(&routed)) {
      if (has_body) keep_alive_ = false, unread_ = true;  // its body is not read
      return Write(std::move(*answer));
    }
    const std::size_t limit = std::get<std::size_t>(routed);
    route_limit_ = limit;
    if (parser_->content_length() && *parser_->content_length() > limit)
      return Refuse(413, "too_large", fmt::format("request body above {} bytes", limit));
    // Small routes (bind: 64 KiB) stay out of the budget: the connection caps bound them (1,024
    // connections x 64 KiB), and a few chunked filters holding the budget must not stop binds.
    const std::size_t reserve =
        limit <= kUnbudgetedRouteBytes
            ? 0
            : (parser_->chunked() ? limit : static_cast<std::size_t>(parser_->content_length().value_or(0)));
    if (reserve > 0 && !server_.Reserve(reserve))
      return Refuse(503, "busy",
                    fmt::format("{} of request bodies are being read already; try again",
                                Size(limits().body_budget_bytes)));
    reserved_ = reserve;
    if (!has_body || parser_->is_done()) return Handle();
    parser_->body_limit(limit);
    Arm(After(Clock::now(), limits().body_s), "body");
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code e, std::size_t) { self->OnBody(e); });
  }

  void OnBody(beast::error_code ec) {
    if (ec && expired_ == "body")
      return Refuse(408, "timeout", fmt::format("request body not read within {} s", limits().body_s));
    if (ec == http::error::body_limit)
      return Refuse(413, "too_large", fmt::format("request body above {} bytes", route_limit_));
    if (ec == asio::error::eof || ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted)
      return Close();
    if (ec) return Refuse(400, "bad_request", "request body could not be read: " + ec.message());
    Handle();
  }

  void Handle() {
    Disarm();
    request_.body = std::move(parser_->get().body());
    parser_.reset();
    // A large body goes to the one thread for large bodies: the parsers' per-thread buffers
    // (extender_wire's simdjson parser keeps its capacity) grow there only, and two large
    // requests are not parsed at once.
    asio::thread_pool& pool = request_.body.size() > kTrimAboveBytes ? server_.large : server_.work;
    asio::post(pool, [self = this->shared_from_this()] {
      const bool large = self->request_.body.size() > kTrimAboveBytes;
      HttpAnswer answer = self->server_.handlers.handle(self->request_);
      std::string().swap(self->request_.body);
      if (self->reserved_ > 0) {
        self->server_.body_bytes -= self->reserved_;
        self->reserved_ = 0;
      }
      if (large) ::malloc_trim(0);
      asio::post(self->stream_.get_executor(),
                 [self, answer = std::move(answer)]() mutable { self->Write(std::move(answer)); });
    });
  }

  // Answers a request the bounds refused, then closes (what follows in the stream is unknown).
  void Refuse(int status, const std::string& outcome, const std::string& error) {
    keep_alive_ = false;
    unread_ = true;
    Write(server_.handlers.refused(request_, status, outcome, error));
  }

  void Write(HttpAnswer answer) {
    if (server_.stopping) keep_alive_ = false;
    response_ = {};
    response_.result(static_cast<unsigned>(answer.status));
    response_.version(11);
    response_.set(http::field::content_type, answer.content_type);
    for (const auto& [name, value] : answer.headers) response_.set(name, value);
    response_.body() = std::move(answer.body);
    response_.keep_alive(keep_alive_);
    response_.prepare_payload();
    Arm(After(Clock::now(), limits().write_s), "write_timeout");
    http::async_write(stream_, response_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      self->OnWritten(ec);
    });
  }

  void OnWritten(beast::error_code ec) {
    busy_ = false;
    ++answers_;
    const bool large = response_.body().size() > kTrimAboveBytes;
    std::string().swap(response_.body());
    if (large) asio::post(server_.large, [] { ::malloc_trim(0); });
    if (expired_ == "write_timeout") ClosedBy("write_timeout", fmt::format("answer not taken within {} s", limits().write_s));
    if (ec) return Close();
    if (!keep_alive_) return unread_ ? Linger() : Close();
    NextRequest();
  }

  // After an answer to a request whose body was not read: stop sending and read what the client
  // still sends, up to a second and 256 KiB (as Go's net/http), so that the answer is not lost
  // to a reset.
  void Linger() {
    beast::error_code ignored;
    Socket().shutdown(tcp::socket::shutdown_send, ignored);
    Arm(Clock::now() + std::chrono::seconds(1), "linger");
    Drain();
  }
  void Drain() {
    buffer_.clear();
    Socket().async_read_some(buffer_.prepare(4096), [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > (std::size_t{256} << 10)) return self->Close();
      self->Drain();
    });
  }

  HttpListener::Impl& server_;
  Stream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::string ip_;
  HttpRequest request_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  Clock::time_point connection_start_{}, request_start_{};
  std::uint64_t generation_ = 0;
  std::string expired_;
  std::atomic<bool> busy_{false};
  bool keep_alive_ = true, unread_ = false;
  std::size_t answers_ = 0, route_limit_ = 0, drained_ = 0;
  std::atomic<std::size_t> reserved_{0};
};

}  // namespace

void HttpListener::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      Admit(std::move(socket));
    } else {  // e.g. out of file descriptors: try again shortly, without spinning
      auto wait = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(50));
      wait->async_wait([this, wait](beast::error_code) { Accept(); });
      return;
    }
    Accept();
  });
}

void HttpListener::Impl::Admit(tcp::socket socket) {
  beast::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return;
  const std::string ip = remote.address().to_string();
  const std::string peer = remote.address().is_v6() ? fmt::format("[{}]:{}", ip, remote.port())
                                                     : fmt::format("{}:{}", ip, remote.port());
  std::shared_ptr<Connection> c, evicted;
  std::string refused;
  {
    const std::lock_guard lock(mu);
    if (stopping) return;
    // A quarter of the slots are kept for connections that have sent a request head.
    const std::size_t unproven_cap = std::max<std::size_t>(1, limits.max_connections - limits.max_connections / 4);
    if (per_peer[ip] >= limits.max_connections_per_peer) {
      refused = "too_many_from_peer";
    } else if (unproven.size() >= unproven_cap) {
      // The oldest connection that has said nothing yet makes room (header: eviction).
      Connection* oldest = unproven.front();
      ForgetUnproven(oldest);
      if (auto it = connections.find(oldest); it != connections.end()) evicted = it->second.lock();
    } else if (connections.size() >= limits.max_connections) {
      refused = "too_many_connections";
    }
    if (refused.empty()) {
      socket.set_option(tcp::no_delay(true), ec);
      if (tls)
        c = std::make_shared<Session<asio::ssl::stream<tcp::socket>>>(*this, std::move(socket), ip, peer);
      else
        c = std::make_shared<Session<tcp::socket>>(*this, std::move(socket), ip, peer);
      connections[c.get()] = c;
      unproven_at[c.get()] = unproven.insert(unproven.end(), c.get());
      ++per_peer[ip];
    } else {
      if (per_peer[ip] == 0) per_peer.erase(ip);
      if (!LogNow(ip)) refused = "!" + refused;  // counted, not logged
    }
  }
  if (evicted) {
    if (handlers.closed)
      handlers.closed("evicted", "", "the oldest of the connections that sent no request head yet, for a newcomer");
    evicted->StopIfIdle(true);
  }
  if (c) return c->Start();
  const bool log = refused.front() != '!';
  const std::string reason = log ? refused : refused.substr(1);
  const std::string why = reason == "too_many_connections"
                              ? fmt::format("more than {} connections open", limits.max_connections)
                              : fmt::format("more than {} connections open from {}", limits.max_connections_per_peer, ip);
  // Counted before the close: whoever sees the connection closed then sees it counted.
  if (handlers.closed) handlers.closed(reason, log ? peer : "", why);
  socket.close(ec);
}

HttpListener::HttpListener(HttpLimits limits, HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(limits, std::move(handlers))) {}

HttpListener::~HttpListener() {
  Stop(true);
  impl_->work.join();
  impl_->large.join();
}

Result<void> HttpListener::Bind(const std::string& host, int port, const TlsFiles& tls, const std::string& what) {
  if (!tls.cert_file.empty()) {
    impl_->tls.emplace(asio::ssl::context::tls_server);
    asio::ssl::context& ctx = *impl_->tls;
    beast::error_code ec;
    ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1,
                    ec);
    ctx.use_certificate_chain_file(tls.cert_file, ec);
    if (!ec) ctx.use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
    if (!ec && SSL_CTX_check_private_key(ctx.native_handle()) != 1) ec = asio::error::invalid_argument;
    if (!ec && !tls.client_ca_file.empty()) {
      ctx.load_verify_file(tls.client_ca_file, ec);
      if (!ec) {
        // Asked for, not required: a probe without a certificate still completes the handshake;
        // the routes that need one check it (HttpRequest::client_verified).
        ctx.set_verify_mode(asio::ssl::verify_peer, ec);
        SSL_CTX_set_client_CA_list(ctx.native_handle(), SSL_load_client_CA_file(tls.client_ca_file.c_str()));
        static const unsigned char kContext[] = "gpufit-serve";
        SSL_CTX_set_session_id_context(ctx.native_handle(), kContext, sizeof kContext - 1);
        impl_->client_ca = true;
      }
    }
    if (ec) return InvalidArgument("{}", what);
  }
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) return Unavailable("serve: cannot bind {}:{} (not an IP address)", host, port);
  const tcp::endpoint endpoint(address, static_cast<std::uint16_t>(port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);  // SOMAXCONN
  if (ec) {
    a.close(ec);
    if (port == 0) return Unavailable("serve: cannot bind {} on any port", host);
    return Unavailable("serve: cannot bind {}:{} (in use, or not an address of this machine)", host, port);
  }
  impl_->port = a.local_endpoint().port();
  return {};
}

int HttpListener::port() const { return impl_->port; }

void HttpListener::Run() {
  if (impl_->stopping) return;
  asio::post(impl_->io, [this] { impl_->Accept(); });
  std::vector<std::thread> more;
  for (int i = 1; i < impl_->limits.io_threads; ++i) more.emplace_back([this] { impl_->io.run(); });
  impl_->io.run();
  for (std::thread& t : more) t.join();
}

void HttpListener::Stop(bool cut_all) {
  Impl& s = *impl_;
  s.stopping = true;
  asio::post(s.io, [&s, cut_all] {
    beast::error_code ec;
    s.acceptor.close(ec);
    std::vector<std::shared_ptr<Connection>> open;
    {
      const std::lock_guard lock(s.mu);
      for (auto& [raw, weak] : s.connections)
        if (auto c = weak.lock()) open.push_back(std::move(c));
      s.FinishIfDone();
    }
    for (auto& c : open) c->StopIfIdle(cut_all);
  });
}

}  // namespace gpufit::serve::internal

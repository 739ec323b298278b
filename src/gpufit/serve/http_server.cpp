#include "gpufit/serve/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpufit/serve/bind_verb.h"
#include "gpufit/serve/header_deadline.h"

namespace gpufit::serve {

struct ExtenderServer::Impl {
  explicit Impl(const ServerOptions& o)
      : server(o.tls_cert_file.empty() ? std::make_unique<httplib::Server>()
                                       : std::make_unique<httplib::SSLServer>(
                                             o.tls_cert_file.c_str(), o.tls_key_file.c_str(),
                                             o.client_ca_file.empty() ? nullptr : o.client_ca_file.c_str())),
        http(*server) {}
  std::unique_ptr<httplib::Server> server;  // an SSLServer with TLS files
  httplib::Server& http;
  std::unique_ptr<HeaderDeadline> deadline;  // made once the port is bound
};

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The body, read within the bounds; `status` 0 when read, else 408 or 413 and `error` why.
struct Body {
  std::string text;
  int status = 0;
  std::string error;
};

Body ReadBody(const httplib::Request& req, const httplib::ContentReader& reader, const ServerOptions& o,
              Clock::time_point t0) {
  Body b;
  const std::string declared = req.get_header_value("Content-Length");
  std::uint64_t announced = 0;
  const auto [end, ec] = std::from_chars(declared.data(), declared.data() + declared.size(), announced);
  const bool whole = ec == std::errc() && end == declared.data() + declared.size();
  if (req.has_header("Content-Length") && !whole) {  // negative, not a number, or past 2^64
    b.status = 400;
    b.error = fmt::format("Content-Length is not a byte count: '{}'", declared.substr(0, 40));
    return b;
  }
  if (whole && announced > o.max_body_bytes) {
    b.status = 413;
    b.error = fmt::format("request body above {} bytes", o.max_body_bytes);
    return b;
  }
  const bool read = reader([&](const char* data, std::size_t length) {
    if (b.text.size() + length > o.max_body_bytes) {
      b.status = 413;
      b.error = fmt::format("request body above {} bytes", o.max_body_bytes);
      return false;
    }
    if (SecondsSince(t0) > o.body_timeout_s) {
      b.status = 408;
      b.error = fmt::format("request body not read within {} s", o.body_timeout_s);
      return false;
    }
    b.text.append(data, length);
    return true;
  });
  if (!read && b.status == 0) {
    b.status = 400;
    b.error = "request body could not be read (the connection closed or stalled)";
  }
  return b;
}

// `text` as a regular expression that matches it literally: cpp-httplib's routes are
// std::regex patterns (ECMAScript), and a URL prefix may hold '.', '+' or '('.
std::string RegexLiteral(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// SO_REUSEADDR (a restart binds at once past TIME_WAIT) without cpp-httplib's default
// SO_REUSEPORT, which would let a second server bind the same port and take half its
// connections instead of failing.
void ReuseAddressOnly(httplib::Server& s) {
  s.set_socket_options([](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
}

// Worker threads: cpp-httplib holds one per connection while it reads a request, so its
// default pool (8 here) is what slow clients exhaust before the head deadline cuts them.
// kube-scheduler keeps a few connections, probes and Prometheus one each.
constexpr std::size_t kWorkerThreads = 32;
void Workers(httplib::Server& s) {
  s.new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
}

}  // namespace

ExtenderServer::ExtenderServer(std::unique_ptr<Extender> extender, ServerOptions options)
    : extender_(std::move(extender)), options_(std::move(options)), impl_(std::make_unique<Impl>(options_)) {
  httplib::Server& s = impl_->http;
  ReuseAddressOnly(s);
  Workers(s);
  s.set_payload_max_length(options_.max_body_bytes);
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm holds the
  // body until the peer's delayed ACK, about 40 ms an answer on Linux (Go's net/http, which
  // kube-scheduler uses, sets TCP_NODELAY on its side by default).
  s.set_tcp_nodelay(true);
  const auto read_s = static_cast<time_t>(options_.read_timeout_s);
  s.set_read_timeout(read_s, static_cast<time_t>((options_.read_timeout_s - static_cast<double>(read_s)) * 1e6));
  // An idle keep-alive connection closes after a read timeout, before the head deadline
  // (serve/header_deadline.h) could take it for a slow client.
  s.set_keep_alive_timeout(std::max<time_t>(1, read_s));
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
    if (impl_->deadline) impl_->deadline->RequestBegan(req.remote_addr, req.remote_port);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response&) {
    if (impl_->deadline) impl_->deadline->RequestEnded(req.remote_addr, req.remote_port);
  });

  auto log = [this](const std::string& verb, int status, const std::string& pod, std::size_t nodes, double seconds,
                    const std::string& error, const std::string& request = {}) {
    if (!options_.log) return;
    nlohmann::json line{{"verb", verb}, {"status", status}, {"pod", pod}, {"nodes", nodes}, {"duration_s", seconds}};
    if (!request.empty()) line["request"] = request;
    if (!error.empty()) line["error"] = error;
    options_.log(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };

  // One verb: read the body within bounds, parse ExtenderArgs, answer with `answer`.
  // `answer` may set its last argument to how the pod's request was taken, for the log line.
  auto verb = [this, log](const std::string& name,
                          std::function<Result<std::string>(const ExtenderArgs&, std::string&)> answer,
                          std::function<std::string(const std::string&)> error_body) {
    return [this, log, name, answer, error_body](const httplib::Request& req, httplib::Response& res,
                                                 const httplib::ContentReader& reader) {
      const Clock::time_point t0 = Clock::now();
      const Body body = ReadBody(req, reader, options_, t0);
      auto fail = [&](int status, const std::string& outcome, const std::string& error) {
        res.status = status;
        if (body.status != 0) res.set_header("Connection", "close");  // the body was not (all) read
        res.set_content(error_body(error), "application/json");
        metrics_.Observe(name, outcome, SecondsSince(t0));
        log(name, status, "", 0, SecondsSince(t0), error);
      };
      if (body.status != 0)
        return fail(body.status,
                    body.status == 413   ? "too_large"
                    : body.status == 408 ? "timeout"
                                         : "bad_request",
                    body.error);
      const Result<ExtenderArgs> args = ParseExtenderArgs(body.text, name + " request");
      if (!args) return fail(400, "bad_request", args.error().message);
      std::string request;
      const Result<std::string> out = answer(*args, request);
      if (!out) return fail(400, "bad_request", out.error().message);
      res.status = 200;
      res.set_content(*out, "application/json");
      metrics_.Observe(name, "ok", SecondsSince(t0));
      log(name, 200, args->pod.Key(), args->node_names.size(), SecondsSince(t0), "", request);
    };
  };

  const std::string prefix = RegexLiteral(options_.url_prefix);
  s.Post(prefix + "/filter", verb(
                                 "filter",
                                 [this](const ExtenderArgs& args, std::string& request) -> Result<std::string> {
                                   const Result<FilterResult> r = extender_->Filter(args);
                                   if (!r) return r.error();
                                   request = r->request_from;
                                   metrics_.CountPodRequest(r->request_from.starts_with("telemetry profile")
                                                                ? "telemetry_profile"
                                                                : "declared");
                                   metrics_.CountNodes("kept", static_cast<std::int64_t>(r->kept.size()));
                                   metrics_.CountNodes("failed", static_cast<std::int64_t>(r->failed.size()));
                                   metrics_.CountNodes("unresolvable",
                                                       static_cast<std::int64_t>(r->failed_and_unresolvable.size()));
                                   return WriteFilterResult(args, *r);
                                 },
                                 [](const std::string& e) { return WriteFilterError(e); }));
  s.Post(prefix + "/prioritize",
         verb(
             "prioritize",
             [this](const ExtenderArgs& args, std::string&) -> Result<std::string> {
               const Result<std::vector<HostPriority>> r = extender_->Prioritize(args);
               if (!r) return r.error();
               return WriteHostPriorityList(*r);
             },
             [](const std::string& e) {
               return nlohmann::json{{"Error", e}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
             }));
  // Bind: reserve in the state (exactly one of concurrent binds for the last room wins), then
  // create the Binding; a refused Binding gives the room back. Every failure is a 200 answer
  // whose Error says why (kube-scheduler then schedules the pod again); a malformed body is 400.
  s.Post(prefix + "/bind",
         [this, log](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
           const Clock::time_point t0 = Clock::now();
           const Body body = ReadBody(req, reader, options_, t0);
           auto answer = [&](int status, const std::string& outcome, const std::string& pod, const std::string& error) {
             res.status = status;
             if (body.status != 0) res.set_header("Connection", "close");
             res.set_content(WriteBindingResult(error), "application/json");
             metrics_.Observe("bind", outcome, SecondsSince(t0));
             log("bind", status, pod, status == 200 ? 1 : 0, SecondsSince(t0), error);
           };
           if (body.status != 0)
             return answer(body.status,
                           body.status == 413   ? "too_large"
                           : body.status == 408 ? "timeout"
                                                : "bad_request",
                           "", body.error);
           const Result<BindingArgs> args = ParseBindingArgs(body.text, "bind request");
           if (!args) return answer(400, "bad_request", "", args.error().message);
           const std::string pod = args->pod_namespace + "/" + args->pod_name;
           const BindAnswer decided = DecideBind(*extender_, options_.bind, *args);
           answer(200, decided.outcome, pod, decided.error);
         });
  // A handler that throws (our bug, or out of memory) answers 500 with the reason, and is counted.
  s.set_exception_handler([this, log](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    const std::string name = req.path.ends_with("/prioritize") ? "prioritize"
                             : req.path.ends_with("/bind")     ? "bind"
                                                               : "filter";
    res.status = 500;
    res.set_content(WriteFilterError("internal error: " + what), "application/json");
    metrics_.Observe(name, "internal", 0);
    log(name, 500, "", 0, 0, what);
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (stopping_) {
      res.status = 503;
      res.set_content("shutting down\n", "text/plain");
    } else {
      res.set_content("ready\n", "text/plain");
    }
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    ExtenderMetrics::Gauges g;
    g.gpu_allocation_ratio = extender_->GpuAllocationRatio();
    const Extender::Fragmentation frag = extender_->GpuFragmentation();
    g.gpu_fragmentation_milli = frag.milli;
    g.gpu_fragmentation_ratio = frag.ratio;
    g.gpu_memory_overcommit_ratio = extender_->GpuMemoryOvercommitRatio();
    const SnapshotStats snapshot = extender_->snapshot();
    g.nodes = snapshot.nodes;
    g.snapshot_pods = snapshot.pods_placed;
    g.snapshot_pods_not_fitting = snapshot.pods_not_fitting;
    g.snapshots = snapshot.snapshots;
    g.reservations_kept = snapshot.reservations_kept;
    res.set_content(metrics_.Text(g), "text/plain; version=0.0.4");
  });
}

ExtenderServer::~ExtenderServer() { Stop(); }

Result<void> ExtenderServer::Bind() {
  if (!impl_->http.is_valid())  // SSLServer: a file unreadable, or a key that is not the certificate's
    return InvalidArgument("serve: TLS: cannot load --tls-cert-file {} with --tls-key-file {}{}{}",
                           options_.tls_cert_file, options_.tls_key_file,
                           options_.client_ca_file.empty() ? "" : " and --client-ca-file ", options_.client_ca_file);
  if (options_.port == 0) {
    port_ = impl_->http.bind_to_any_port(options_.host);
    if (port_ < 0) return Unavailable("serve: cannot bind {} on any port", options_.host);
  } else {
    if (!impl_->http.bind_to_port(options_.host, options_.port))
      return Unavailable("serve: cannot bind {}:{} (in use, or not an address of this machine)", options_.host,
                         options_.port);
    port_ = options_.port;
  }
  return {};
}

bool ExtenderServer::Serve() {
  serving_ = true;
  if (stopped_) {  // Stop came and went first
    serving_ = false;
    return true;
  }
  // A request's head must be read within a read timeout (the keep-alive wait) plus the body's
  // deadline of the connection's start or its previous answer.
  impl_->deadline = std::make_unique<HeaderDeadline>(
      port_, options_.read_timeout_s + options_.body_timeout_s, [this](const std::string& peer) {
        metrics_.CountClosed("head_timeout");
        if (!options_.log) return;
        options_.log(nlohmann::json{{"event", "connection closed"},
                                    {"peer", peer},
                                    {"reason", fmt::format("request head not read within {} s",
                                                           options_.read_timeout_s + options_.body_timeout_s)}}
                         .dump());
      });
  impl_->deadline->Start();
  const bool ok = impl_->http.listen_after_bind();
  impl_->deadline->Stop();
  serving_ = false;
  return ok;
}

void ExtenderServer::Stop(double drain_s) {
  stopping_ = true;  // /readyz answers 503 from now on
  if (drain_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(drain_s));
  stopped_ = true;  // a Serve that has not begun will not
  // httplib's stop() does nothing before its listen loop runs: wait for it, unless Serve ended.
  while (serving_ && !impl_->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
}

struct WaitingServer::Impl {
  httplib::Server http;
  std::thread thread;
  std::unique_ptr<HeaderDeadline> deadline;
};

WaitingServer::WaitingServer() : impl_(std::make_unique<Impl>()) {}

WaitingServer::~WaitingServer() { Stop(); }

Result<void> WaitingServer::Start(const std::string& host, int port, const std::string& why) {
  httplib::Server& s = impl_->http;
  ReuseAddressOnly(s);
  Workers(s);
  s.set_read_timeout(5, 0);
  s.set_keep_alive_timeout(5);
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
    impl_->deadline->RequestBegan(req.remote_addr, req.remote_port);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response&) {
    impl_->deadline->RequestEnded(req.remote_addr, req.remote_port);
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  auto unavailable = [why](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(why + "\n", "text/plain");
  };
  s.Get("/readyz", unavailable);
  s.Get(".*", unavailable);
  s.Post(".*", unavailable);
  if (!s.bind_to_port(host, port))
    return Unavailable("serve: cannot bind {}:{} (in use, or not an address of this machine)", host, port);
  // The same head deadline as the extender's with its default bounds (5 s read, 10 s body).
  impl_->deadline = std::make_unique<HeaderDeadline>(port, 15.0, nullptr);
  impl_->deadline->Start();
  impl_->thread = std::thread([this] { impl_->http.listen_after_bind(); });
  return {};
}

void WaitingServer::Stop() {
  if (!impl_->thread.joinable()) return;
  while (!impl_->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->http.stop();
  // Its workers may be reading slow clients: cut them, so the extender can take the port now.
  impl_->deadline->CloseAll();
  impl_->thread.join();
  impl_->deadline->Stop();
}

}  // namespace gpufit::serve

#include "gpufit/controller/metrics_endpoint.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "gpufit/serve/loopback.h"
#include "gpufit/serve/bearer_token.h"
#include "gpufit/serve/internal/http_listener.h"

namespace gpufit::controller {
namespace {

using serve::internal::HttpAnswer;
using serve::internal::HttpRequest;
using serve::IsLoopbackHost;

HttpAnswer Json(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  return {.status = status, .content_type = "application/json", .body = std::move(body), .headers = std::move(headers)};
}

std::string PathOf(const std::string& target) { return target.substr(0, target.find('?')); }

}  // namespace

Result<void> CheckMetricsAuthentication(const MetricsEndpointOptions& o) {
  const bool tls = !o.tls_cert_file.empty() || !o.tls_key_file.empty();
  if (o.insecure_http) {
    if (tls || !o.auth_token_file.empty())
      return InvalidArgument(
          "--metrics-insecure-http serves plain HTTP without authentication: not with --metrics-tls-cert-file, "
          "--metrics-tls-key-file or --metrics-auth-token-file");
    if (!IsLoopbackHost(o.host))
      return InvalidArgument(
          "--metrics-insecure-http only on a loopback address (127.0.0.1, ::1, localhost), got {}: anything that "
          "listens on a network authenticates its callers; give --metrics-tls-cert-file, --metrics-tls-key-file and "
          "--metrics-auth-token-file",
          o.host);
    return {};
  }
  if (!o.auth_token_file.empty() && !tls)
    return InvalidArgument(
        "--metrics-auth-token-file needs --metrics-tls-cert-file and --metrics-tls-key-file: a bearer token is "
        "accepted only over TLS");
  if (o.tls_cert_file.empty() || o.tls_key_file.empty() || o.auth_token_file.empty())
    return InvalidArgument(
        "/metrics needs authentication: --metrics-tls-cert-file and --metrics-tls-key-file with "
        "--metrics-auth-token-file (a bearer token, as Prometheus' authorization.credentials_file sends it); or "
        "--metrics-insecure-http for plain HTTP on a loopback address");
  return {};
}

struct MetricsEndpoint::Impl {
  MetricsEndpointOptions options;
  std::function<std::string()> metrics, unhealthy;
  std::optional<serve::BearerToken> token;
  std::optional<serve::internal::HttpListener> listener;
  std::thread thread;

  HttpAnswer Answer(const HttpRequest& r) {
    const std::string path = PathOf(r.target);
    if (path != "/metrics" && path != "/healthz") return Json(404, R"({"error":"not found"})");
    if (r.method != "GET") return Json(405, R"({"error":"GET only"})", {{"Allow", "GET"}});
    if (path == "/healthz") {
      const std::string why = unhealthy ? unhealthy() : "";
      return {.status = why.empty() ? 200 : 503,
              .content_type = "text/plain",
              .body = why.empty() ? "ok" : why,
              .headers = {}};
    }
    if (token && !token->Matches(r.authorization))
      return Json(401, R"({"error":"a bearer token is required"})", {{"WWW-Authenticate", "Bearer"}});
    return {
        .status = 200, .content_type = "text/plain; version=0.0.4; charset=utf-8", .body = metrics(), .headers = {}};
  }
};

MetricsEndpoint::MetricsEndpoint(MetricsEndpointOptions options, std::function<std::string()> metrics,
                                 std::function<std::string()> unhealthy)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->metrics = std::move(metrics);
  impl_->unhealthy = std::move(unhealthy);
}

MetricsEndpoint::~MetricsEndpoint() { Stop(); }

Result<void> MetricsEndpoint::Start() {
  Impl& impl = *impl_;
  if (Result<void> ok = CheckMetricsAuthentication(impl.options); !ok) return ok;
  if (!impl.options.auth_token_file.empty()) {
    Result<serve::BearerToken> token = serve::BearerToken::Load(impl.options.auth_token_file);
    if (!token) return Error{token.error().code, "--metrics-auth-token-file: " + token.error().message};
    impl.token.emplace(std::move(*token));
  }
  serve::internal::HttpHandlers handlers;
  handlers.route = [&impl](const HttpRequest& r) -> std::variant<std::size_t, HttpAnswer> {
    if (r.method == "GET") return std::size_t{0};  // no body
    return impl.Answer(r);
  };
  handlers.handle = [&impl](HttpRequest& r) { return impl.Answer(r); };
  handlers.refused = [](const HttpRequest&, int status, const std::string&, const std::string& error) {
    return Json(status, nlohmann::json{{"error", error}}.dump());
  };
  serve::internal::HttpLimits limits;
  limits.work_threads = 2;
  limits.io_threads = 1;
  impl.listener.emplace(limits, std::move(handlers));
  if (Result<void> ok = impl.listener->Bind(
          impl.options.host, impl.options.port,
          {.cert_file = impl.options.tls_cert_file, .key_file = impl.options.tls_key_file, .client_ca_file = ""},
          "controller: TLS: cannot load --metrics-tls-cert-file " + impl.options.tls_cert_file +
              " with --metrics-tls-key-file " + impl.options.tls_key_file);
      !ok)
    return ok;
  impl.thread = std::thread([&impl] { impl.listener->Run(); });
  return {};
}

int MetricsEndpoint::port() const { return impl_->listener ? impl_->listener->port() : 0; }

void MetricsEndpoint::Stop() {
  if (!impl_->listener) return;
  impl_->listener->Stop(/*cut_all=*/true);
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace gpufit::controller

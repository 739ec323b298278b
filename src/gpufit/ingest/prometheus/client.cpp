#include "gpufit/ingest/prometheus/client.h"

#include <fast_float/fast_float.h>
#include <fmt/format.h>
#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "gpufit/core/json_input.h"

namespace gpufit {
namespace {

constexpr const char* kQueryRangePath = "/api/v1/query_range";

struct BaseUrl {
  std::string scheme_host_port;  // "http://127.0.0.1:9090"
  std::string path_prefix;       // "" or "/prometheus"
};

Result<BaseUrl> SplitUrl(const std::string& url) {
  const std::size_t colon = url.find("://");
  const std::string scheme = colon == std::string::npos ? "" : url.substr(0, colon);
  if (scheme != "http" && scheme != "https")
    return InvalidArgument("--prometheus '{}': expected an http:// or https:// URL", url);
  const std::size_t host_start = colon + 3;
  if (url.find_first_of("?#") != std::string::npos)
    return InvalidArgument("--prometheus '{}': a base URL takes no query or fragment", url);
  const std::size_t slash = url.find('/', host_start);
  BaseUrl out{.scheme_host_port = url.substr(0, slash), .path_prefix = ""};
  if (out.scheme_host_port.size() <= host_start) return InvalidArgument("--prometheus '{}': no host", url);
  if (out.scheme_host_port.find('@') != std::string::npos)
    return InvalidArgument("--prometheus: credentials in the URL are not supported (use --bearer-token-file)");
  if (slash != std::string::npos) out.path_prefix = url.substr(slash);
  while (!out.path_prefix.empty() && out.path_prefix.back() == '/') out.path_prefix.pop_back();
  return out;
}

std::string Seconds(double s) { return fmt::format("{:.3f}", s); }

constexpr const char* kSeriesPath = "/api/v1/series";
// The words of the too-big error (AnswerTooBig looks for them).
constexpr const char* kTooBigWords = "the answer exceeds";
// The longest wait between retries.
constexpr double kMaxBackoffS = 30;

// What one HTTP attempt came to.
struct Attempt {
  bool retryable = false;
  Error error;
  std::string body;                     // the answer when error.message is empty
  std::optional<double> retry_after_s;  // a 429 or 503's Retry-After, seconds from now
};

// The reason phrase of the statuses a Prometheus (or a proxy before it) answers with.
std::string_view StatusText(int status) {
  static constexpr std::pair<int, std::string_view> kReasons[] = {{400, "Bad Request"},
                                                                  {401, "Unauthorized"},
                                                                  {403, "Forbidden"},
                                                                  {404, "Not Found"},
                                                                  {405, "Method Not Allowed"},
                                                                  {413, "Payload Too Large"},
                                                                  {422, "Unprocessable Entity"},
                                                                  {429, "Too Many Requests"},
                                                                  {500, "Internal Server Error"},
                                                                  {502, "Bad Gateway"},
                                                                  {503, "Service Unavailable"},
                                                                  {504, "Gateway Timeout"}};
  for (const auto& [code, reason] : kReasons)
    if (code == status) return reason;
  return "";
}

// The body of a refusal in words: Prometheus's "errorType: error" when its JSON envelope
// has them, else an excerpt of the text.
std::string RefusalDetail(const std::string& body) {
  if (const Result<nlohmann::json> j = ParseJson(body, "answer"); j && j->is_object()) {
    const auto text = [&](const char* key) {
      const auto it = j->find(key);
      return it != j->end() && it->is_string() ? Excerpt(it->get<std::string>(), 300) : std::string();
    };
    const std::string type = text("errorType"), error = text("error");
    if (!type.empty() || !error.empty()) return type.empty() ? error : error.empty() ? type : type + ": " + error;
  }
  std::string_view text = body;
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  return text.empty() ? "(no body)" : Excerpt(text, 300);
}

}  // namespace

std::optional<double> ParseRetryAfter(std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 9) return std::nullopt;  // over 30 years: not a wait anyone means
    return std::stod(std::string(value));
  }
  // An HTTP-date: IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 section 5.6.7).
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const auto at = std::chrono::system_clock::from_time_t(timegm(&tm));
  return std::max(0.0, std::chrono::duration<double>(at - now).count());
}

namespace {

// One GET, bounded as a whole: connect, headers and body within `timeout_s` (cpp-httplib's
// timeouts are per read, so a server trickling a byte at a time would never trip them: a
// watchdog thread shuts the socket down at the deadline) and within max_bytes.
Attempt GetOnce(httplib::Client& client, const std::string& path, const httplib::Params& params, double timeout_s,
                std::uint64_t max_bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool too_big = false;
  std::string body;
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::atomic<bool> expired{false};
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (cv.wait_until(lock, deadline, [&] { return finished; })) return;
    expired = true;
    // Again until the request returns: a stop() while it is still connecting finds no socket
    // to shut down.
    while (!cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return finished; })) client.stop();
  });
  // Stopped here too: stop() is only noticed when the client next reads or writes.
  const auto past_deadline = [&] {
    if (std::chrono::steady_clock::now() < deadline) return false;
    expired = true;
    return true;
  };
  const httplib::Result res = client.Get(path, params, httplib::Headers{}, [&](const char* data, std::size_t length) {
    too_big = body.size() + length > max_bytes;
    if (too_big || past_deadline()) return false;
    body.append(data, length);
    return true;
  });
  {
    std::lock_guard lock(mu);
    finished = true;
  }
  cv.notify_one();
  watchdog.join();
  if (!res) {
    const httplib::Error e = res.error();
    const bool tls = e == httplib::Error::SSLConnection || e == httplib::Error::SSLServerVerification ||
                     e == httplib::Error::SSLLoadingCerts;
    if (too_big)
      return {.retryable = false,
              .error = InvalidArgument("{} {} bytes ({:.1f} MiB): narrow --since/--until, --namespace or "
                                       "--selector, or widen --step",
                                       kTooBigWords, max_bytes, static_cast<double>(max_bytes) / (1 << 20)),
              .body = "",
              .retry_after_s = std::nullopt};
    std::string why =
        expired                     ? fmt::format("no complete answer within {} s", timeout_s)
        : e == httplib::Error::Read ? fmt::format("the connection broke, or no answer came within {} s", timeout_s)
        : e == httplib::Error::ConnectionTimeout ? fmt::format("no connection within {} s", timeout_s)
        : tls ? "TLS failed (" + httplib::to_string(e) + "; check --ca-file or the URL's scheme)"
        : e == httplib::Error::Connection ? "cannot connect (server down, unreachable, or its name does not resolve)"
                                          : "request failed (" + httplib::to_string(e) + ")";
    return {.retryable = !tls, .error = Unavailable("{}", why), .body = "", .retry_after_s = std::nullopt};
  }
  if (res->status == 200) {
    // Room after the text lets the parser read the answer in place (simdjson reads up to
    // SIMDJSON_PADDING = 64 bytes past what it parses); usually within the capacity already.
    body.reserve(body.size() + 64);
    return {.retryable = false, .error = {}, .body = std::move(body), .retry_after_s = std::nullopt};
  }
  // "HTTP 429 Too Many Requests: <Prometheus's error or the body>[, Retry-After N s]"
  const std::string_view reason = StatusText(res->status);
  std::string detail =
      fmt::format("HTTP {}{}{}: {}", res->status, reason.empty() ? "" : " ", reason, RefusalDetail(body));
  if (res->status == 401 || res->status == 403) detail += " (check --bearer-token-file)";
  std::optional<double> retry_after;
  if ((res->status == 429 || res->status == 503) && res->has_header("Retry-After")) {
    const std::string header = res->get_header_value("Retry-After");
    retry_after = ParseRetryAfter(header, std::chrono::system_clock::now());
    detail += retry_after
                  ? fmt::format(", Retry-After {:g} s", std::ceil(*retry_after))
                  : fmt::format(", Retry-After '{}' (not a number of seconds or an HTTP date)", Excerpt(header));
  }
  const bool server_side = res->status == 429 || res->status >= 500;
  Error error = server_side ? Unavailable("{}", detail) : InvalidArgument("{}", detail);
  return {.retryable = server_side, .error = std::move(error), .body = "", .retry_after_s = retry_after};
}

// One GET with retries; `parse` reads the answer. `where` names the request in errors.
// A 429 or 503 with Retry-After is retried after the wait the server asks for, not the
// back-off, whatever --prometheus-retries says, as long as the retry can finish within the
// request's deadline: `timeout_s` for each try the retries allow (timeout_s x (retries + 1))
// from the first; a wait past it fails at once, saying so.
template <class Parse>
auto GetWithRetries(httplib::Client& client, const PrometheusOptions& o, const std::string& path,
                    const httplib::Params& params, const std::string& where, PrometheusQueryStats& stats, Parse&& parse)
    -> decltype(parse(std::string(), where)) {
  double backoff = o.backoff_s;
  const auto started = std::chrono::steady_clock::now();
  const auto request_deadline = started + std::chrono::duration<double>(o.timeout_s * (o.retries + 1));
  const auto report = [&](std::uint64_t bytes, const std::string& error) {
    if (o.on_request)
      o.on_request(where, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), bytes,
                   error);
  };
  int counted = 0;          // retries spent of o.retries (Retry-After waits are not)
  bool after_wait = false;  // this attempt follows a Retry-After: it ends by request_deadline
  for (int attempt = 0;; ++attempt) {
    const double left_s = std::chrono::duration<double>(request_deadline - std::chrono::steady_clock::now()).count();
    Attempt a = GetOnce(client, path, params, after_wait ? std::clamp(left_s, 0.001, o.timeout_s) : o.timeout_s,
                        o.max_answer_bytes);
    after_wait = false;
    if (a.error.message.empty()) {
      ++stats.requests;
      stats.answer_bytes += a.body.size();
      report(a.body.size(), "");
      return parse(a.body, where);
    }
    const auto give_up = [&](const std::string& why) -> decltype(parse(std::string(), where)) {
      const std::string tries = attempt > 0 ? fmt::format(" (after {} attempts)", attempt + 1) : "";
      report(0, a.error.message + why + tries);
      return Error{a.error.code, fmt::format("prometheus {}: {}{}{}", where, a.error.message, why, tries)};
    };
    if (a.retry_after_s) {
      const auto retry_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(*a.retry_after_s);
      if (retry_at >= request_deadline)
        return give_up(fmt::format(" (past the request's deadline of {} s: --prometheus-timeout x (retries + 1))",
                                   o.timeout_s * (o.retries + 1)));
      std::this_thread::sleep_until(retry_at);
      after_wait = true;
      continue;
    }
    if (!a.retryable || counted >= o.retries) return give_up("");
    ++counted;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(2 * backoff, kMaxBackoffS);
  }
}

// The warnings and infos of an answer to `query`, each (query, kind, text) once.
void AddNotices(const std::string& query, const PromAnswerNotes& notes, PrometheusQueryStats& stats) {
  const auto note = [&](const char* kind, const std::string& text) {
    PrometheusNotice n{.query = query, .kind = kind, .text = text};
    if (std::none_of(stats.notices.begin(), stats.notices.end(), [&](const PrometheusNotice& m) {
          return m.query == n.query && m.kind == n.kind && m.text == n.text;
        }))
      stats.notices.push_back(std::move(n));
  };
  for (const std::string& w : notes.warnings) note("warning", w);
  for (const std::string& i : notes.infos) note("info", i);
}

Result<std::vector<PromSeries>> QueryChunk(httplib::Client& client, const PrometheusOptions& o, const std::string& path,
                                           const RangeQuery& q, PrometheusQueryStats& stats) {
  // Parameters beyond the Prometheus API's, each ignored by the servers that do not know it
  // (docs/integrations.md, "Servers"):
  //  * nocache=1: VictoriaMetrics otherwise rounds start down and end up to multiples of step
  //    when a query has 50 points or more (promql.AdjustStartEnd, for its response cache;
  //    app/vmselect/prometheus/prometheus.go), which moves every evaluation time off the grid.
  //  * deny_partial_response=1 (VictoriaMetrics cluster; app/vmselect/searchutils) and
  //    partial_response=false (Thanos Query; pkg/api/query/v1.go): an answer missing the
  //    series of an unreachable storage node becomes an error, not a plan without those pods.
  const httplib::Params params = {
      {"query", q.query}, {"start", Seconds(q.start_s)},  {"end", Seconds(q.end_s)},    {"step", Seconds(q.step_s)},
      {"nocache", "1"},   {"deny_partial_response", "1"}, {"partial_response", "false"}};
  const std::string where = fmt::format("{}{} (query '{}', {} to {} step {} s)", o.url, kQueryRangePath, q.query,
                                        Seconds(q.start_s), Seconds(q.end_s), q.step_s);
  PromAnswerNotes notes;
  Result<std::vector<PromSeries>> out = GetWithRetries(
      client, o, path, params, where, stats,
      [&notes](const std::string& body, const std::string& w) { return ParseQueryRangeAnswer(body, w, notes); });
  if (out) AddNotices(q.query, notes, stats);
  return out;
}

// o.ca_pem, o.client_cert_pem and o.client_key_pem on `client`'s TLS context.
Result<void> UsePemCredentials(httplib::Client& client, const PrometheusOptions& o, bool https) {
  if (o.ca_pem.empty() && o.client_cert_pem.empty() && o.client_key_pem.empty()) return {};
  if (!https) return InvalidArgument("{}: a CA or a client certificate needs an https:// URL", o.url);
  if (o.client_cert_pem.empty() != o.client_key_pem.empty())
    return InvalidArgument("{}: a client certificate needs its key, and a key its certificate", o.url);
  SSL_CTX* ctx = client.ssl_context();
  if (ctx == nullptr) return Internal("{}: cannot set up TLS (OpenSSL)", o.url);
  const auto bio_of = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                     &BIO_free);
  };
  if (!o.ca_pem.empty()) {
    X509_STORE* store = X509_STORE_new();
    const auto bio = bio_of(o.ca_pem);
    int cas = 0;
    while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, ca);
      X509_free(ca);
      ++cas;
    }
    ERR_clear_error();
    if (cas == 0) {
      X509_STORE_free(store);
      return InvalidArgument("{}: the CA is not a PEM certificate", o.url);
    }
    client.set_ca_cert_store(store);  // the client's TLS context owns it
  }
  if (!o.client_cert_pem.empty()) {
    const auto cert_bio = bio_of(o.client_cert_pem);
    const auto key_bio = bio_of(o.client_key_pem);
    std::unique_ptr<X509, decltype(&X509_free)> cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr),
                                                     &X509_free);
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
        PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
    if (!cert || !key || SSL_CTX_use_certificate(ctx, cert.get()) != 1 || SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      ERR_clear_error();
      return InvalidArgument("{}: the client certificate or key is not PEM, or they do not match", o.url);
    }
  }
  return {};
}

// A client for the server of `o`, or the error in its options.
struct Connection {
  std::unique_ptr<httplib::Client> client;
  std::string path_prefix;
};
Result<Connection> Connect(const PrometheusOptions& o) {
  const Result<BaseUrl> base = SplitUrl(o.url);
  if (!base) return base.error();
  auto client = std::make_unique<httplib::Client>(base->scheme_host_port);
  if (!client->is_valid()) return InvalidArgument("--prometheus '{}': not a usable URL", o.url);
  const auto whole = static_cast<time_t>(o.timeout_s);
  const auto micro = static_cast<time_t>((o.timeout_s - static_cast<double>(whole)) * 1e6);
  client->set_connection_timeout(whole, micro);
  client->set_read_timeout(whole, micro);
  client->set_write_timeout(whole, micro);
  if (!o.bearer_token.empty()) client->set_bearer_token_auth(o.bearer_token);
  if (!o.ca_file.empty()) {
    if (base->scheme_host_port.rfind("https://", 0) != 0)
      return InvalidArgument("--ca-file {}: the URL {} is not https", o.ca_file, o.url);
    if (!std::ifstream(o.ca_file)) return NotFound("--ca-file {}: cannot read it", o.ca_file);
    client->set_ca_cert_path(o.ca_file);
  }
  if (Result<void> ok = UsePemCredentials(*client, o, base->scheme_host_port.rfind("https://", 0) == 0); !ok)
    return ok.error();
  client->enable_server_certificate_verification(!o.insecure_skip_verify);
  return Connection{std::move(client), base->path_prefix};
}

}  // namespace

Result<double> ParsePrometheusDuration(std::string_view text) {
  const auto bad = [&] {
    return InvalidArgument("'{}' is not a duration (e.g. 30s, 5m, 1h30m, 7d) or a number of seconds", text);
  };
  if (text.empty()) return bad();
  double plain = 0;
  if (const auto r = fast_float::from_chars(text.data(), text.data() + text.size(), plain);
      r.ec == std::errc() && r.ptr == text.data() + text.size()) {
    if (!std::isfinite(plain) || plain < 0) return bad();
    return plain;
  }
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400.0}, {"y", 365 * 86400.0}};
  double total = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = pos;
    long long n = 0;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9' && n < 1'000'000'000'000LL)
      n = n * 10 + (text[end++] - '0');
    if (end == pos) return bad();
    const std::string_view rest = text.substr(end);
    const auto unit = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) {
      // "m" must not take the "m" of "ms".
      return rest.substr(0, u.first.size()) == u.first && !(u.first == "m" && rest.substr(0, 2) == "ms");
    });
    if (unit == std::end(kUnits)) return bad();
    total += static_cast<double>(n) * unit->second;
    pos = end + unit->first.size();
  }
  return total;
}

std::vector<LabelMatcher> PrometheusOptions::ScopeMatchers() const {
  std::vector<LabelMatcher> out = selector;
  for (LabelMatcher& m : NamespaceMatchers(namespaces)) out.push_back(std::move(m));
  return out;
}

bool AnswerTooBig(const Error& error) {
  return error.code == Code::kInvalidArgument && error.message.find(kTooBigWords) != std::string::npos;
}

Result<std::vector<std::map<std::string, std::string>>> QuerySeries(const PrometheusOptions& o,
                                                                    const std::string& selector, double start_s,
                                                                    double end_s, PrometheusQueryStats& stats) {
  Result<Connection> c = Connect(o);
  if (!c) return c.error();
  const httplib::Params params = {{"match[]", selector}, {"start", Seconds(start_s)}, {"end", Seconds(end_s)}};
  const std::string where =
      fmt::format("{}{} (match[] '{}', {} to {})", o.url, kSeriesPath, selector, Seconds(start_s), Seconds(end_s));
  ++stats.series_lookups;
  PromAnswerNotes notes;
  Result<std::vector<std::map<std::string, std::string>>> out = GetWithRetries(
      *c->client, o, c->path_prefix + kSeriesPath, params, where, stats,
      [&notes](const std::string& body, const std::string& w) { return ParseSeriesAnswer(body, w, notes); });
  if (out) AddNotices(selector, notes, stats);
  return out;
}

Result<std::vector<PromSeries>> QueryRange(const PrometheusOptions& o, const RangeQuery& q) {
  PrometheusQueryStats ignored;
  return QueryRange(o, q, ignored);
}

Result<std::vector<PromSeries>> QueryRange(const PrometheusOptions& o, const RangeQuery& q,
                                           PrometheusQueryStats& stats) {
  if (!(q.step_s > 0) || !std::isfinite(q.step_s)) return InvalidArgument("--step must be > 0 s, got {}", q.step_s);
  if (!std::isfinite(q.start_s) || !std::isfinite(q.end_s) || q.end_s < q.start_s)
    return InvalidArgument("--since must not be after --until ({} > {})", Seconds(q.start_s), Seconds(q.end_s));
  if (o.max_points < 1) return InvalidArgument("max_points must be >= 1, got {}", o.max_points);
  Result<Connection> c = Connect(o);
  if (!c) return c.error();
  httplib::Client& client = *c->client;

  // Evaluation times start + k step, k = 0..points-1, in chunks of max_points.
  const double span_steps = std::floor((q.end_s - q.start_s) / q.step_s + 1e-9);
  if (span_steps > 1e9) return InvalidArgument("the range holds {} steps of {} s: widen --step", span_steps, q.step_s);
  const auto points = static_cast<long long>(span_steps) + 1;
  std::map<std::map<std::string, std::string>, PromSeries> joined;
  for (long long k0 = 0; k0 < points; k0 += o.max_points) {
    const long long k1 = std::min(points - 1, k0 + o.max_points - 1);
    RangeQuery chunk = q;
    chunk.start_s = q.start_s + static_cast<double>(k0) * q.step_s;
    chunk.end_s = q.start_s + static_cast<double>(k1) * q.step_s;
    Result<std::vector<PromSeries>> part = QueryChunk(client, o, c->path_prefix + kQueryRangePath, chunk, stats);
    if (!part) return part.error();
    for (PromSeries& s : *part) {
      PromSeries& into = joined[s.labels];
      if (into.labels.empty()) into.labels = s.labels;
      into.time_s.insert(into.time_s.end(), s.time_s.begin(), s.time_s.end());
      into.value.insert(into.value.end(), s.value.begin(), s.value.end());
    }
  }
  std::vector<PromSeries> out;
  out.reserve(joined.size());
  for (auto& [labels, s] : joined) out.push_back(std::move(s));
  return out;
}

}  // namespace gpufit

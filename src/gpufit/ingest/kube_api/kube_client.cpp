#include "gpufit/ingest/kube_api/kube_client.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace gpufit::kube_api {

using Json = nlohmann::json;

// The PEM material, parsed once and shared by every request's connection (OpenSSL counts the
// references each SSL_CTX takes).
struct KubeClient::Tls {
  std::vector<X509*> cas;
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  std::string sni_ip;  // with tls_server_name: the server host's address, connected to under that name
  ~Tls() {
    for (X509* c : cas) X509_free(c);
    if (cert != nullptr) X509_free(cert);
    if (key != nullptr) EVP_PKEY_free(key);
  }
};

namespace {

// Why OpenSSL refused the server's certificate during this thread's last handshake.
thread_local std::string last_verify_error;

int VerifyCallback(int ok, X509_STORE_CTX* ctx) {
  if (ok == 0) {
    const int err = X509_STORE_CTX_get_error(ctx);
    last_verify_error =
        fmt::format("{} (at depth {})", X509_verify_cert_error_string(err), X509_STORE_CTX_get_error_depth(ctx));
  }
  return ok;
}

bool IsIp(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

void SetTimeout(httplib::ClientImpl& c, double s, bool connect) {
  const auto sec = static_cast<time_t>(s);
  const auto usec = static_cast<time_t>(std::lround((s - static_cast<double>(sec)) * 1e6));
  if (connect) {
    c.set_connection_timeout(sec, usec);
  } else {
    c.set_read_timeout(sec, usec);
    c.set_write_timeout(sec, usec);
  }
}

}  // namespace

Result<KubeClient> KubeClient::Make(const KubeConnection& connection, const KubeClientOptions& options) {
  KubeClient c;
  c.connection_ = connection;
  c.options_ = options;
  const std::string& url = connection.server;
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    return InvalidArgument("{}: server: expected https://host[:port]", connection.source);
  c.scheme_ = url.substr(0, scheme_end);
  if (c.scheme_ != "https" && c.scheme_ != "http")
    return InvalidArgument("{}: server '{}': expected https:// or http://", connection.source, url);
  std::string rest = url.substr(scheme_end + 3);
  const std::size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    c.base_path_ = rest.substr(slash);
    while (!c.base_path_.empty() && c.base_path_.back() == '/') c.base_path_.pop_back();
    rest.resize(slash);
  }
  std::string port;
  if (rest.starts_with("[")) {  // [IPv6]:port
    const std::size_t close = rest.find(']');
    if (close == std::string::npos) return InvalidArgument("{}: server '{}': unclosed '['", connection.source, url);
    c.host_ = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (const std::size_t colon = rest.rfind(':'); colon != std::string::npos) {
    c.host_ = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  } else {
    c.host_ = rest;
  }
  if (c.host_.empty()) return InvalidArgument("{}: server '{}': no host", connection.source, url);
  c.port_ = c.scheme_ == "https" ? 443 : 80;
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535)
      return InvalidArgument("{}: server '{}': bad port '{}'", connection.source, url, port);
    c.port_ = static_cast<int>(p);
  }
  auto tls = std::make_shared<Tls>();
  if (!connection.ca_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(connection.ca_pem.data(), static_cast<int>(connection.ca_pem.size()));
    while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) tls->cas.push_back(ca);
    BIO_free(bio);
    ERR_clear_error();
    if (tls->cas.empty())
      return InvalidArgument("{}: the certificate authority of {} holds no PEM certificate", connection.source, url);
  }
  if (!connection.client_cert_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(connection.client_cert_pem.data(), static_cast<int>(connection.client_cert_pem.size()));
    tls->cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    bio = BIO_new_mem_buf(connection.client_key_pem.data(), static_cast<int>(connection.client_key_pem.size()));
    tls->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    ERR_clear_error();
    if (tls->cert == nullptr)
      return InvalidArgument("{}: the client certificate is not a PEM certificate", connection.source);
    if (tls->key == nullptr) return InvalidArgument("{}: the client key is not a PEM private key", connection.source);
    if (X509_check_private_key(tls->cert, tls->key) != 1) {
      ERR_clear_error();
      return InvalidArgument("{}: the client key is not the client certificate's", connection.source);
    }
  }
  if (!connection.tls_server_name.empty() && !IsIp(c.host_)) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(c.host_.c_str(), nullptr, &hints, &found) != 0 || found == nullptr)
      return Unavailable("{}: cannot resolve the host '{}'", url, c.host_);
    char ip[INET6_ADDRSTRLEN] = {};
    const void* addr = found->ai_family == AF_INET6
                           ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr)
                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr);
    inet_ntop(found->ai_family, addr, ip, sizeof ip);
    freeaddrinfo(found);
    tls->sni_ip = ip;
  } else if (!connection.tls_server_name.empty()) {
    tls->sni_ip = c.host_;
  }
  c.tls_ = std::move(tls);
  return c;
}

std::string PercentEncode(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~')
      out.push_back(static_cast<char>(c));
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

Result<Json> KubeClient::Get(const std::string& path) const { return Send("GET", path, "", ""); }

Result<Json> KubeClient::Patch(const std::string& path, PatchType type, const Json& patch) const {
  const char* content_type = type == PatchType::kStrategicMerge ? "application/strategic-merge-patch+json"
                             : type == PatchType::kMerge        ? "application/merge-patch+json"
                                                                : "application/apply-patch+yaml";
  return Send("PATCH", path, content_type, patch.dump());
}

Result<Json> KubeClient::Create(const std::string& path, const Json& object) const {
  return Send("POST", path, "application/json", object.dump());
}

Result<Json> KubeClient::Replace(const std::string& path, const Json& object) const {
  return Send("PUT", path, "application/json", object.dump());
}

Result<Json> KubeClient::Delete(const std::string& path) const { return Send("DELETE", path, "", ""); }

Result<Json> KubeClient::Send(const std::string& method, const std::string& path, const std::string& content_type,
                              const std::string& payload) const {
  const std::string where = method == "GET" ? connection_.server + path : method + " " + connection_.server + path;
  std::unique_ptr<httplib::ClientImpl> client;
  if (scheme_ == "https") {
    // With tls_server_name the connection is made to the host's address under that name, so
    // that SNI and the name checked are both tls_server_name (client-go's TLSClientConfig.ServerName).
    const std::string& name = connection_.tls_server_name.empty() ? host_ : connection_.tls_server_name;
    auto ssl = tls_->cert != nullptr ? std::make_unique<httplib::SSLClient>(name, port_, tls_->cert, tls_->key)
                                     : std::make_unique<httplib::SSLClient>(name, port_);
    if (!ssl->is_valid()) return Internal("{}: cannot set up TLS (OpenSSL)", where);
    if (!connection_.tls_server_name.empty()) ssl->set_hostname_addr_map({{name, tls_->sni_ip}});
    // cpp-httplib's own check would add the system's CAs to ours: it is off, and OpenSSL checks
    // the chain against exactly our CAs and the host name during the handshake.
    ssl->enable_server_certificate_verification(false);
    SSL_CTX* ctx = ssl->ssl_context();
    if (!connection_.insecure_skip_tls_verify) {
      if (!tls_->cas.empty()) {
        X509_STORE* store = X509_STORE_new();
        for (X509* ca : tls_->cas) X509_STORE_add_cert(store, ca);
        SSL_CTX_set_cert_store(ctx, store);  // the context owns it
      } else {
        SSL_CTX_set_default_verify_paths(ctx);
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, VerifyCallback);
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      if (IsIp(name))
        X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
      else
        X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    }
    client = std::move(ssl);
  } else {
    client = std::make_unique<httplib::ClientImpl>(host_, port_);
  }
  SetTimeout(*client, options_.connect_timeout_s, true);
  SetTimeout(*client, options_.read_timeout_s, false);
  if (!connection_.token.empty()) client->set_bearer_token_auth(connection_.token.c_str());
  last_verify_error.clear();
  // Bounds beyond the per-read timeout: the whole request within total_timeout_s (a server
  // that trickles its headers or body a byte at a time never trips a read timeout; a watchdog
  // closes the connection), and a body of at most max_body_bytes (kept as it arrives, so an
  // endless answer stops there instead of filling memory).
  std::string body;
  bool too_big = false;
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false, expired = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::duration<double>(options_.total_timeout_s), [&] { return finished; })) {
      expired = true;
      client->stop();
    }
  });
  httplib::Request req;
  req.method = method;
  req.path = base_path_ + path;
  req.headers = {{"Accept", "application/json"}, {"User-Agent", "gpufit"}};
  if (!content_type.empty()) {
    req.headers.emplace("Content-Type", content_type);
    req.body = payload;
  }
  req.response_handler = [](const httplib::Response&) { return true; };
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    if (body.size() + n > options_.max_body_bytes) {
      too_big = true;
      return false;
    }
    body.append(data, n);
    return true;
  };
  const httplib::Result res = client->send(req);
  {
    std::lock_guard lock(mu);
    finished = true;
  }
  cv.notify_one();
  watchdog.join();
  if (too_big)
    return Unavailable("{}: the answer is larger than {} MiB (a page of at most {} items should be far smaller)", where,
                       options_.max_body_bytes >> 20, options_.page_limit);
  if (expired)
    return Unavailable("{}: no whole answer within {} s (a server that answers too slowly)", where,
                       options_.total_timeout_s);
  if (!res) {
    const httplib::Error e = res.error();
    if (e == httplib::Error::SSLConnection || e == httplib::Error::SSLServerVerification) {
      return Unavailable(
          "{}: TLS handshake failed{} (CA: {}; name checked: {})", where,
          last_verify_error.empty() ? std::string() : ": the server's certificate: " + last_verify_error,
          tls_->cas.empty() ? std::string("the system's") : "certificate-authority of " + connection_.source,
          connection_.tls_server_name.empty() ? host_ : connection_.tls_server_name);
    }
    if (e == httplib::Error::Connection || e == httplib::Error::ConnectionTimeout)
      return Unavailable("{}: cannot connect (within {} s; cpp-httplib: {})", where, options_.connect_timeout_s,
                         httplib::to_string(e));
    return Unavailable("{}: no answer (read timeout {} s; cpp-httplib: {})", where, options_.read_timeout_s,
                       httplib::to_string(e));
  }
  if (res->status != 200 && res->status != 201 && !(method == "DELETE" && res->status == 202)) {
    std::string why = body.substr(0, 300);
    try {  // a v1 Status: its message says why
      const Json status = Json::parse(body);
      if (status.is_object() && status.contains("message") && status["message"].is_string())
        why = status["message"].get<std::string>();
    } catch (const Json::exception&) {
    }
    const std::string message = fmt::format("{}: the API server answered {}: {}", where, res->status, why);
    if (res->status == 404) return NotFound("{}", message);
    if (res->status >= 500 || res->status == 429) return Unavailable("{}", message);
    return FailedPrecondition("{}", message);
  }
  try {
    return Json::parse(body);
  } catch (const Json::exception& e) {
    return Unavailable("{}: the answer is not JSON: {}", where, e.what());
  }
}

namespace {

// `j[key]` when it is a string, else "".
std::string StringAt(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Result<Json> KubeClient::List(const std::string& path) const {
  Json out{{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}}, {"items", Json::array()}};
  std::string cont;
  std::set<std::string> tokens;  // a server that hands out a token twice would page forever
  bool first = true;
  const char sep = path.find('?') == std::string::npos ? '?' : '&';
  do {
    std::string page_path = fmt::format("{}{}limit={}", path, sep, options_.page_limit);
    if (!cont.empty()) page_path += "&continue=" + PercentEncode(cont);
    Result<Json> page = Get(page_path);
    if (!page) return page.error();
    const std::string where = connection_.server + page_path;
    if (!page->is_object() || !page->contains("items") || !(*page)["items"].is_array())
      return Unavailable("{}: the answer is not a list (no .items)", where);
    const std::string list_kind = StringAt(*page, "kind");
    if (!list_kind.ends_with("List") || list_kind.size() == 4)
      return Unavailable("{}: the answer's .kind '{}' is not a <Kind>List", where, list_kind);
    const std::string kind = list_kind.substr(0, list_kind.size() - 4);
    std::string api_version = StringAt(*page, "apiVersion");
    if (api_version.empty()) api_version = "v1";
    const Json meta =
        page->contains("metadata") && (*page)["metadata"].is_object() ? (*page)["metadata"] : Json::object();
    if (first) out["metadata"]["resourceVersion"] = StringAt(meta, "resourceVersion");
    first = false;
    Json& items = (*page)["items"];
    for (std::size_t i = 0; i < items.size(); ++i) {
      Json& item = items[i];
      if (!item.is_object()) return Unavailable("{}: items[{}] is not an object ({})", where, i, item.type_name());
      if (!item.contains("metadata") || !item["metadata"].is_object() || StringAt(item["metadata"], "name").empty())
        return Unavailable("{}: items[{}] has no metadata.name", where, i);
      if (!item.contains("kind")) item["kind"] = kind;
      if (!item.contains("apiVersion")) item["apiVersion"] = api_version;
      out["items"].push_back(std::move(item));
    }
    if (out["items"].size() > options_.max_items)
      return Unavailable("{}: more than {} items (paging never ended?)", where, options_.max_items);
    cont = StringAt(meta, "continue");
    if (!cont.empty() && !tokens.insert(cont).second)
      return Unavailable("{}: the server gave the same continue token twice; the list would never end", where);
  } while (!cont.empty());
  return out;
}

}  // namespace gpufit::kube_api

#include "gpufit/apply/history_seal.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <cctype>
#include <stdexcept>

#include "gpufit/apply/internal/json_path.h"
#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/kube_api/kubeconfig.h"

namespace gpufit::apply {

using Json = nlohmann::json;

namespace {

std::string Hex(const unsigned char* bytes, std::size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// `n` random bytes from OpenSSL's CSPRNG; throws when it has no entropy (a broken machine).
std::string RandomBytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1)
    throw std::runtime_error("OpenSSL RAND_bytes failed: no random bytes for the history's key or run id");
  return out;
}

bool IsHexKey(const std::string& k) {
  if (k.size() != 64) return false;
  for (char c : k)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

Result<std::string> KeyOf(const Json& secret, const std::string& where) {
  const std::string data = internal::Str(secret, {"data", "key"});
  std::optional<std::string> key = kube_api::DecodeBase64(data);
  if (!key || !IsHexKey(*key))
    return InvalidArgument("{}: data.key is not 64 hex digits: not a key of gpufit apply's history", where);
  return *key;
}

}  // namespace

Result<std::string> HistoryKey(const kube_api::KubeClient& kube, const std::string& ns, bool create) {
  const std::string path = fmt::format("/api/v1/namespaces/{}/secrets/{}", ns, kKeySecret);
  const std::string where = fmt::format("Secret {}/{}", ns, kKeySecret);
  Result<Json> live = kube.Get(path);
  if (live) return KeyOf(*live, where);
  if (live.error().code != Code::kNotFound) return Error{live.error().code, where + ": " + live.error().message};
  if (!create)
    return NotFound("{} is absent: no run of gpufit apply was sealed in namespace {} (its key is made on the first run)",
                    where, ns);
  const std::string bytes = RandomBytes(32);
  const std::string key = Hex(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  const Json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"type", "Opaque"},
                       {"metadata",
                        {{"name", kKeySecret},
                         {"namespace", ns},
                         {"labels", {{"app.kubernetes.io/managed-by", "gpufit"}}}}},
                       {"stringData", {{"key", key}}}};
  Result<Json> made = kube.Create(fmt::format("/api/v1/namespaces/{}/secrets", ns), secret);
  if (made) return key;
  // Another run created it first: its key is the key.
  Result<Json> again = kube.Get(path);
  if (!again) return Error{made.error().code, where + ": " + made.error().message};
  return KeyOf(*again, where);
}

std::string Seal(const std::string& key, const std::string& name, const std::string& text) {
  const std::string message = name + "\n" + text;
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac.data(), &size);
  return Hex(mac.data(), size);
}

bool SealMatches(const std::string& key, const std::string& name, const std::string& text, const std::string& seal) {
  const std::string expected = Seal(key, name, text);
  return seal.size() == expected.size() && CRYPTO_memcmp(seal.data(), expected.data(), expected.size()) == 0;
}

std::string NewRunId(double now_s) {
  std::string id;
  for (char c : FormatRfc3339(now_s))  // 2026-12-06T08:15:00Z -> 20261206t081500z
    if (std::isalnum(static_cast<unsigned char>(c)))
      id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  id += '-';
  for (unsigned char b : RandomBytes(6)) id += kAlphabet[b % 36];  // 36 divides 252: a bias under 2%, no matter here
  return id;
}

}  // namespace gpufit::apply

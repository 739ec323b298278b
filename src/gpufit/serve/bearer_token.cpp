#include "gpufit/serve/bearer_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace gpufit::serve {

Result<BearerToken> BearerToken::Load(const std::string& path) {
  BearerToken t;
  t.path_ = path;
  if (Result<void> ok = t.Read(); !ok) return ok.error();
  return t;
}

BearerToken::Digest BearerToken::Sha256(std::string_view text) {
  Digest d{};
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), d.data(), &n, EVP_sha256(), nullptr);
  return d;
}

Result<void> BearerToken::Read() {
  valid_ = false;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return InvalidArgument("--auth-token-file {}: cannot be read", path_);
  stamp_ = {.inode = st.st_ino,
            .size = static_cast<std::uint64_t>(st.st_size),
            .mtime_ns = st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec};
  std::ifstream in(path_, std::ios::binary);
  if (!in) return InvalidArgument("--auth-token-file {}: cannot be read", path_);
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return InvalidArgument("--auth-token-file {}: holds no token", path_);
  for (const char c : token)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return InvalidArgument("--auth-token-file {}: the token holds a space or control character", path_);
  digest_ = Sha256(token);
  valid_ = true;
  return {};
}

bool BearerToken::Matches(std::string_view authorization) {
  constexpr std::string_view kScheme = "Bearer ";
  if (!authorization.starts_with(kScheme)) return false;
  const Digest given = Sha256(authorization.substr(kScheme.size()));
  const std::lock_guard lock(mu_);
  struct stat st {};
  const bool there = ::stat(path_.c_str(), &st) == 0;
  const Stamp now{.inode = there ? st.st_ino : 0,
                  .size = there ? static_cast<std::uint64_t>(st.st_size) : 0,
                  .mtime_ns = there ? st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec : 0};
  if (!there) valid_ = false;
  else if (!(now == stamp_) || !valid_) (void)Read();
  return valid_ && CRYPTO_memcmp(given.data(), digest_.data(), given.size()) == 0;
}

}  // namespace gpufit::serve

// The bearer token `gpufit serve --auth-token-file` accepts: a file holding one token (its
// trailing newline and spaces are not part of it). The file is looked at (stat(2)) on each
// check and read again when its inode, size or modification time changed, so a rotated token
// (a Secret volume swaps a symlink; `mv new token`) takes effect at the next request with no
// restart. A file that cannot be read, or holds no token, matches no request (fail closed).
// Comparison is in constant time over SHA-256 digests (the token's length does not leak
// either). Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "gpufit/core/result.h"

namespace gpufit::serve {

class BearerToken {
 public:
  // Errors: kInvalidArgument when the file cannot be read, is empty, or holds a control
  // character or space inside the token.
  static Result<BearerToken> Load(const std::string& path);
  BearerToken(BearerToken&& o) noexcept : path_(std::move(o.path_)), digest_(o.digest_), valid_(o.valid_), stamp_(o.stamp_) {}

  // Whether `authorization` (an Authorization header's value) is "Bearer <the token>".
  bool Matches(std::string_view authorization);

 private:
  BearerToken() = default;
  using Digest = std::array<unsigned char, 32>;
  struct Stamp {
    std::uint64_t inode = 0, size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Digest Sha256(std::string_view text);
  Result<void> Read();  // under mu_

  std::string path_;
  std::mutex mu_;
  Digest digest_{};
  bool valid_ = false;
  Stamp stamp_{};
};

}  // namespace gpufit::serve

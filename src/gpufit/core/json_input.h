// Reading JSON that gpufit did not write (kubectl output, plan.json, Prometheus answers):
// the one entry point every JSON reader goes through.
//
// Untrusted JSON is bounded before nlohmann/json builds a document from it:
// - nesting: at most kMaxJsonDepth arrays/objects deep. nlohmann parses iteratively, but
//   copying, comparing and dumping a document recurse once per level, so a 300,000-deep
//   array overflows the stack in the first copy (or in an error message that dumps it).
//   Real inputs nest far less (a kubectl Pod about 12 levels, plan.json 4, a Prometheus
//   range answer 5).
// - size: a file of at most kMaxJsonFileBytes. A parsed document takes several times its
//   text in memory (a short JSON string becomes a 16-byte value plus a 32-byte std::string,
//   an object member a map node besides), so a 1 GiB file cannot be parsed in 4 GiB.
// - memory: should the parse still run out of memory, a reserve is released so that the
//   library can free its partial document, and the reader gets an error, not an abort.
// - numbers: one too large for a double ("number overflow") is an error naming the source.
// Messages quote input only through Excerpt: short, control characters escaped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gpufit/core/result.h"

namespace gpufit {

inline constexpr int kMaxJsonDepth = 100;
inline constexpr std::uint64_t kMaxJsonFileBytes = 256ull << 20;  // 256 MiB

// `text` for an error message: at most `max_bytes` bytes of it (then "... (N bytes)"), with
// control characters, DEL, U+2028 and U+2029 written as \n, \r, \t or \xNN / \u2028.
std::string Excerpt(std::string_view text, std::size_t max_bytes = 80);

// kInvalidArgument when `text` nests arrays and objects deeper than `max_depth` (the byte
// offset of the first bracket past the limit is in the message); strings are skipped with
// their escapes. Says nothing about the rest of the syntax.
Result<void> CheckJsonDepth(std::string_view text, int max_depth = kMaxJsonDepth);

// The bytes of the file at `path`: kNotFound when it is missing or not a regular file (a
// directory, say), kInvalidArgument when it is larger than `max_bytes` (the message gives
// both sizes and why), kInternal when reading fails.
Result<std::string> ReadJsonText(const std::string& path, std::uint64_t max_bytes = kMaxJsonFileBytes);

namespace internal {
// While alive, holds a reserve of memory and a new-handler that frees it and throws
// std::bad_alloc: the partial document is then freed (nlohmann's destructor allocates its
// own work stack) with the reserve's room. For one parse on one thread at a time.
class OutOfMemoryReserve {
 public:
  OutOfMemoryReserve();
  ~OutOfMemoryReserve();
  OutOfMemoryReserve(const OutOfMemoryReserve&) = delete;
  OutOfMemoryReserve& operator=(const OutOfMemoryReserve&) = delete;

 private:
  std::new_handler previous_;
};
}  // namespace internal

// `text` parsed as JSON (Json: nlohmann::json, or a basic_json built with JSON_DIAGNOSTICS).
// Errors start with `source` (a file name, or "prometheus URL (query ...)"):
//   kInvalidArgument: too deep, malformed ("malformed JSON at byte N: ..."), a number out of range;
//   kInternal: out of memory.
// `any_thread`: parse without the out-of-memory reserve, which is process-wide (one parse at a
// time); for callers that parse on many threads at once, text already bounded in size (the
// scheduler extender's request bodies, serve/http_server.h).
template <class Json = nlohmann::json>
Result<Json> ParseJson(std::string_view text, std::string_view source, bool any_thread = false) {
  if (Result<void> ok = CheckJsonDepth(text); !ok) return InvalidArgument("{}: {}", source, ok.error().message);
  try {
    if (any_thread) return Json::parse(text.begin(), text.end());
    const internal::OutOfMemoryReserve reserve;
    return Json::parse(text.begin(), text.end());
  } catch (const typename Json::parse_error& e) {
    return InvalidArgument("{}: malformed JSON at byte {}: {}", source, e.byte, Excerpt(e.what(), 200));
  } catch (const typename Json::exception& e) {  // out_of_range 406: a number too large for a double
    return InvalidArgument("{}: {}", source, Excerpt(e.what(), 200));
  } catch (const std::bad_alloc&) {
    return Internal("{}: out of memory parsing {} MiB of JSON", source, text.size() >> 20);
  }
}

// ReadJsonText, then ParseJson with the path as the source.
template <class Json = nlohmann::json>
Result<Json> ReadJsonFile(const std::string& path) {
  const Result<std::string> text = ReadJsonText(path);
  if (!text) return text.error();
  return ParseJson<Json>(*text, path);
}

}  // namespace gpufit

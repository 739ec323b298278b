#include "gpufit/core/json_input.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace gpufit {

std::string Excerpt(std::string_view text, std::size_t max_bytes) {
  const std::string_view shown = text.substr(0, max_bytes);
  std::string out;
  out.reserve(shown.size() + 16);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto c = static_cast<unsigned char>(shown[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xe2 && i + 2 < shown.size() && shown[i + 1] == '\x80' &&
               (shown[i + 2] == '\xa8' || shown[i + 2] == '\xa9')) {  // U+2028, U+2029: line breaks to some viewers
      out += shown[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown.size() < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

Result<void> CheckJsonDepth(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return InvalidArgument("JSON nested deeper than {} levels at byte {}", max_depth, i);
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced brackets are the parser's to report
    }
  }
  return {};
}

Result<std::string> ReadJsonText(const std::string& path, std::uint64_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return NotFound("{}: no such file", path);
  if (!fs::is_regular_file(st))
    return NotFound("{}: not a regular file ({}), expected a JSON file", path,
                    fs::is_directory(st) ? "a directory" : "a device, socket or pipe");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return Internal("{}: cannot read its size: {}", path, ec.message());
  if (size > max_bytes)
    return InvalidArgument(
        "{}: {} bytes of JSON, more than the {} MiB gpufit reads (a parsed document takes several times its text in "
        "memory); split the input (e.g. kubectl get pods per namespace) or filter it first",
        path, size, max_bytes >> 20);
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("{}: cannot open", path);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.bad()) return Internal("{}: read failed", path);
  text.resize(static_cast<std::size_t>(in.gcount()));  // the file may have shrunk meanwhile
  return text;
}

namespace internal {
namespace {
// Room for nlohmann to free a partial document: its destructor moves the children of each
// array or object into a work stack (16 bytes each): a million fit.
constexpr std::size_t kReserveBytes = 16u << 20;
void* reserve_block = nullptr;

void ReleaseReserveAndThrow() {
  std::free(reserve_block);
  reserve_block = nullptr;
  std::set_new_handler(nullptr);
  throw std::bad_alloc();
}
}  // namespace

OutOfMemoryReserve::OutOfMemoryReserve() : previous_(nullptr) {
  reserve_block = std::malloc(kReserveBytes);
  previous_ = std::set_new_handler(reserve_block != nullptr ? ReleaseReserveAndThrow : std::get_new_handler());
}

OutOfMemoryReserve::~OutOfMemoryReserve() {
  std::free(reserve_block);
  reserve_block = nullptr;
  std::set_new_handler(previous_);
}
}  // namespace internal

}  // namespace gpufit

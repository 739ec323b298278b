// Helpers of the libFuzzer targets in this folder (see fuzz/README.md): the input as text,
// and as a file for the readers that take a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gpufit::fuzz {

inline std::string_view Text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// This process's scratch directory under $TMPDIR, removed at exit.
inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("gpufit-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return d;
  }();
  return dir;
}

// Writes `text` to the scratch file `name` (replacing it) and returns its path.
inline std::string WriteInput(std::string_view text, const std::string& name) {
  const std::filesystem::path p = ScratchDir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(text.data(), static_cast<std::streamsize>(text.size()));
  return p.string();
}

}  // namespace gpufit::fuzz

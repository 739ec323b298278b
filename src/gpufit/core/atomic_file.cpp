#include "gpufit/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace gpufit {

Result<void> WriteFileAtomically(const std::filesystem::path& path, std::string_view contents) {
  std::string tmp = path.string() + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return Internal("{}: cannot create a temporary file: {}", path.string(), std::strerror(errno));
  auto fail = [&](const char* what) -> Result<void> {
    const int err = errno;
    close(fd);
    std::remove(tmp.c_str());
    return Internal("{}: {}: {}", path.string(), what, std::strerror(err));
  };
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed");
    }
    done += static_cast<std::size_t>(n);
  }
  if (fchmod(fd, 0644) != 0) return fail("chmod failed");
  if (fsync(fd) != 0) return fail("fsync failed");
  if (close(fd) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Internal("{}: close failed: {}", path.string(), std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Internal("{}: rename failed: {}", path.string(), std::strerror(err));
  }
  return {};
}

}  // namespace gpufit

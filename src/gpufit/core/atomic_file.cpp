#include "gpufit/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace gpufit {
namespace {

// Writes `contents` into a new temporary file beside `path`; returns its name.
Result<std::string> WriteTemporary(const std::filesystem::path& path, std::string_view contents) {
  std::string tmp = path.string() + ".tmp.XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) {
    const int err = errno;
    const bool user_side = err == EACCES || err == EROFS || err == ENOENT || err == ENOTDIR || err == EPERM;
    return Error{user_side ? Code::kInvalidArgument : Code::kInternal,
                 fmt::format("{}: cannot create a file there: {}", path.string(), std::strerror(err))};
  }
  auto fail = [&](const char* what) -> Result<std::string> {
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
  return tmp;
}

}  // namespace

Result<void> WriteFilesAtomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  std::vector<std::string> temporaries;
  for (const auto& [path, contents] : files) {
    Result<std::string> tmp = WriteTemporary(path, contents);
    if (!tmp) {
      for (const std::string& t : temporaries) std::remove(t.c_str());
      return tmp.error();
    }
    temporaries.push_back(*tmp);
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temporaries[i].c_str(), files[i].first.c_str()) != 0) {
      const int err = errno;
      for (std::size_t j = i; j < files.size(); ++j) std::remove(temporaries[j].c_str());
      return Internal("{}: rename failed: {}", files[i].first.string(), std::strerror(err));
    }
  }
  return {};
}

}  // namespace gpufit

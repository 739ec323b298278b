#include "gpufit/core/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace gpufit {
namespace {

namespace fs = std::filesystem;

// The PID the holder wrote into the lock file, or "" when it has not (yet).
std::string HolderPid(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string pid(buf, static_cast<std::size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  const bool digits = !pid.empty() && std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits ? pid : "";
}

}  // namespace

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    for (const int fd : fds_) close(fd);
    fds_ = std::move(other.fds_);
    other.fds_.clear();
  }
  return *this;
}

OutputLock::~OutputLock() {
  for (const int fd : fds_) close(fd);  // closing the last descriptor releases the flock
}

Result<OutputLock> LockOutputFolders(const std::vector<std::pair<fs::path, std::string>>& dirs, double wait_s) {
  struct Folder {
    fs::path key, given;  // absolute (for the order), as given (for messages)
    std::string flag;
  };
  std::vector<Folder> folders;
  for (const auto& [d, flag] : dirs) {
    std::error_code ec;
    const fs::path given = d.empty() ? fs::path(".") : d;
    fs::path key = fs::weakly_canonical(given, ec);
    if (ec) key = fs::absolute(given, ec);
    if (std::none_of(folders.begin(), folders.end(), [&](const Folder& f) { return f.key == key; }))
      folders.push_back({key, given, flag});
  }
  std::sort(folders.begin(), folders.end(), [](const Folder& a, const Folder& b) { return a.key < b.key; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, wait_s));
  OutputLock lock;
  for (const Folder& f : folders) {
    const fs::path& given = f.given;
    const std::string& flag = f.flag;
    const fs::path file = given / kOutputLockName;
    const int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return InvalidArgument("{} {}: cannot create the lock file {}: {}", flag, given.string(), file.string(),
                             std::strerror(errno));
    lock.fds_.push_back(fd);
    for (;;) {
      if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
      if (errno != EWOULDBLOCK && errno != EINTR)
        return Internal("{}: cannot lock it: {}", file.string(), std::strerror(errno));
      if (std::chrono::steady_clock::now() >= deadline) {
        const std::string pid = HolderPid(fd);
        return Unavailable("{} {}: another gpufit ({}) is writing into this folder; gave up after {} s (lock file {})",
                           flag, given.string(), pid.empty() ? "PID unknown" : "PID " + pid, wait_s, file.string());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // The PID is for messages only: a lock file that cannot take it still locks.
    }
  }
  return lock;
}

}  // namespace gpufit

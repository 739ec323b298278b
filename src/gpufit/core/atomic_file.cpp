#include "gpufit/core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace gpufit {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempTag = ".gpufit-tmp-";     // .NAME.gpufit-tmp-PID-XXXXXX
constexpr std::string_view kJournal = ".gpufit-commit-";  // .gpufit-commit-PID-XXXXXX

// Whether process `pid` still runs (EPERM: it does, as another user).
bool Alive(long pid) { return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// The PID in "...PID-XXXXXX" after `at`, or -1.
long PidAfter(const std::string& name, std::size_t at) {
  const std::size_t dash = name.find('-', at);
  if (dash == std::string::npos || dash == at || name.size() != dash + 7) return -1;
  long pid = 0;
  for (std::size_t i = at; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 100'000'000) return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

void SyncDir(const fs::path& dir) {
  const int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

// Writes `contents` into a new temporary file beside `path`; returns its name.
Result<std::string> WriteTemporary(const fs::path& path, std::string_view contents) {
  std::string tmp = (path.parent_path() / ("." + path.filename().string())).string() + std::string(kTempTag) +
                    std::to_string(getpid()) + "-XXXXXX";
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
    // EFBIG: past RLIMIT_FSIZE (main ignores SIGXFSZ, so the write fails instead of killing us).
    if (err == EFBIG)
      return Error{Code::kFailedPrecondition,
                   fmt::format("{}: file too large (the file-size limit, ulimit -f): {} bytes not written",
                               path.string(), contents.size())};
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

// A journal entry: "W <len>:<temporary> <len>:<target>" or "D <len>:<target>", one a line.
std::string Field(const std::string& s) { return std::to_string(s.size()) + ":" + s; }
bool ReadField(std::istream& in, std::string& s) {
  std::size_t n = 0;
  char colon = 0;
  if (!(in >> n) || !in.get(colon) || colon != ':' || n > 1 << 16) return false;
  s.assign(n, '\0');
  return static_cast<bool>(in.read(s.data(), static_cast<std::streamsize>(n)));
}

// Completes the commit of an interrupted run: renames the temporaries its journal lists that
// are still there and removes what it removed, then the journal.
void RollForward(const fs::path& journal) {
  std::ifstream in(journal);
  char op = 0;
  std::set<fs::path> dirs;
  while (in >> op) {
    std::string a, b;
    if (op == 'W' && ReadField(in, a) && ReadField(in, b)) {
      if (std::rename(a.c_str(), b.c_str()) == 0) dirs.insert(fs::path(b).parent_path());
    } else if (op == 'D' && ReadField(in, a)) {
      std::remove(a.c_str());
      dirs.insert(fs::path(a).parent_path());
    } else {
      break;
    }
  }
  for (const fs::path& d : dirs) SyncDir(d);
  std::remove(journal.c_str());
}

// What an interrupted run left in `dir`: journals rolled forward, stray temporaries removed
// (of processes that are gone; `targets`' old-style TARGET.tmp.XXXXXX whatever their age).
void Recover(const fs::path& dir, const std::set<std::string>& targets) {
  std::error_code ec;
  std::vector<fs::path> journals, strays;
  for (const fs::directory_entry& e : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(kJournal)) {
      if (!Alive(PidAfter(name, kJournal.size()))) journals.push_back(e.path());
    } else if (const std::size_t at = name.rfind(kTempTag); at != std::string::npos && name.starts_with('.')) {
      if (!Alive(PidAfter(name, at + kTempTag.size()))) strays.push_back(e.path());
    } else if (name.size() > 11 && name.compare(name.size() - 11, 5, ".tmp.") == 0 &&
               targets.count(name.substr(0, name.size() - 11)) > 0) {
      strays.push_back(e.path());
    }
  }
  for (const fs::path& j : journals) RollForward(j);  // before the strays: it renames some
  for (const fs::path& s : strays) fs::remove(s, ec);
}

}  // namespace

Result<void> CheckOutputDir(const fs::path& dir, std::string_view flag) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st) && fs::is_symlink(fs::symlink_status(dir, ec)))
    return InvalidArgument("{} {}: is a symbolic link to {}, which does not exist", flag, dir.string(),
                           fs::read_symlink(dir, ec).string());
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) return InvalidArgument("{} {}: is a file, not a directory", flag, dir.string());
    if (access(dir.c_str(), W_OK | X_OK) != 0)
      return InvalidArgument("{} {}: the directory is not writable", flag, dir.string());
    return {};
  }
  // Missing: the nearest existing ancestor must be a writable directory.
  fs::path up = fs::absolute(dir, ec);
  while (up.has_relative_path() && !fs::exists(up, ec)) up = up.parent_path();
  if (!fs::is_directory(up, ec))
    return InvalidArgument("{} {}: cannot create it: {} is not a directory", flag, dir.string(), up.string());
  if (access(up.c_str(), W_OK | X_OK) != 0)
    return InvalidArgument("{} {}: cannot create it: {} is not writable", flag, dir.string(), up.string());
  return {};
}

Result<void> WriteFilesAtomically(const std::vector<std::pair<fs::path, std::string>>& files,
                                  const std::vector<fs::path>& removals,
                                  const std::function<void(std::string_view)>& step) {
  const auto at = [&](std::string_view s) {
    if (step) step(s);
  };
  std::map<fs::path, std::set<std::string>> folders;  // folder -> names of this run's targets
  for (const auto& [path, contents] : files) folders[path.parent_path()].insert(path.filename().string());
  for (const fs::path& path : removals) folders[path.parent_path()];
  for (const auto& [dir, targets] : folders) Recover(dir, targets);

  std::vector<std::string> temporaries;
  const auto discard = [&] {
    for (const std::string& t : temporaries) std::remove(t.c_str());
  };
  for (const auto& [path, contents] : files) {
    Result<std::string> tmp = WriteTemporary(path, contents);
    if (!tmp) {
      discard();
      return tmp.error();
    }
    temporaries.push_back(*tmp);
  }
  at("temporaries written");
  std::string journal;
  if (files.size() + removals.size() > 1) {
    std::error_code ec;
    std::string entries;
    for (std::size_t i = 0; i < files.size(); ++i)
      entries += "W " + Field(fs::absolute(temporaries[i], ec).string()) + " " +
                 Field(fs::absolute(files[i].first, ec).string()) + "\n";
    for (const fs::path& r : removals) entries += "D " + Field(fs::absolute(r, ec).string()) + "\n";
    const fs::path home = files.empty() ? removals.front().parent_path() : files.front().first.parent_path();
    Result<std::string> tmp = WriteTemporary(home / "gpufit-commit", entries);
    if (!tmp) {
      discard();
      return tmp.error();
    }
    journal =
        (home / (std::string(kJournal) + tmp->substr(tmp->size() - 6 - std::to_string(getpid()).size() - 1))).string();
    if (std::rename(tmp->c_str(), journal.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp->c_str());
      discard();
      return Internal("{}: rename failed: {}", journal, std::strerror(err));
    }
    SyncDir(home);
  }
  at("committed");
  std::set<fs::path> dirs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temporaries[i].c_str(), files[i].first.c_str()) != 0) {
      const int err = errno;
      for (std::size_t j = i; j < files.size(); ++j) std::remove(temporaries[j].c_str());
      if (!journal.empty()) std::remove(journal.c_str());
      return Internal("{}: rename failed: {}", files[i].first.string(), std::strerror(err));
    }
    dirs.insert(files[i].first.parent_path());
    at("renamed " + std::to_string(i + 1));
  }
  for (const fs::path& r : removals) {
    std::remove(r.c_str());
    dirs.insert(r.parent_path());
  }
  for (const fs::path& d : dirs) SyncDir(d);
  if (!journal.empty()) std::remove(journal.c_str());
  return {};
}

}  // namespace gpufit

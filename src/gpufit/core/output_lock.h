// One writer at a time per output folder: two runs into the same --out (or manifests
// folder) must not interleave their commits, or the folder ends up with plan.json of one run
// and plan.md or the manifests of the other (WriteFilesAtomically's renames are atomic per
// file, not per set).
//
// How: flock(2) on `.gpufit-lock` in each folder (created, 0644, and left in place: removing it
// would let a third run lock a new file while the second still holds the old one). The holder
// writes its PID into the file, so a run that gives up can name the process it waited for.
// The kernel drops the lock when the holder exits or is killed, so no stale lock survives a
// crash. Folders are locked in sorted order of their absolute paths (two runs writing into the
// same two folders cannot deadlock).
//
// NFS: Linux (since 2.6.12) turns flock(2) on an NFS file into a whole-file POSIX lock held
// through the server's lock manager (NLM for NFSv3, the protocol itself for NFSv4), so the
// lock holds between clients of one server; on a mount with `nolock` (or `local_lock=flock`)
// it is local to one client and two machines writing into one folder are not kept apart.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit {

// How long a run waits for another run's lock on an output folder, seconds, by default.
// A plan of a large cluster takes minutes to compute but only milliseconds to commit; the
// lock is held from the listing of the previous run's files to the end of the commit, so a
// wait past this means the other process is stuck (or stopped), not busy.
inline constexpr double kOutputLockWaitS = 60;

// The lock file's name in each locked folder.
inline constexpr const char* kOutputLockName = ".gpufit-lock";

// Held locks on output folders; released (the file descriptors closed) on destruction.
// Move-only. Not thread-safe; one per run.
class OutputLock {
 public:
  OutputLock() = default;
  OutputLock(OutputLock&& other) noexcept : fds_(std::move(other.fds_)) { other.fds_.clear(); }
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  std::size_t folders() const { return fds_.size(); }

 private:
  friend Result<OutputLock> LockOutputFolders(const std::vector<std::pair<std::filesystem::path, std::string>>&,
                                              double);
  std::vector<int> fds_;
};

// Locks each folder of `dirs`, given as (folder, the option that named it, e.g. "--out"):
// existing directories, duplicates and "" (the working directory) allowed. Waits up to
// `wait_s` seconds in all for other holders. Errors: kUnavailable "FLAG DIR: another gpufit (PID N) is
// writing into this folder; gave up after W s (lock file DIR/.gpufit-lock)" (PID unknown when
// the holder has not written it yet); kInvalidArgument when the lock file cannot be created
// (a read-only folder), naming it.
Result<OutputLock> LockOutputFolders(const std::vector<std::pair<std::filesystem::path, std::string>>& dirs,
                                     double wait_s);

}  // namespace gpufit

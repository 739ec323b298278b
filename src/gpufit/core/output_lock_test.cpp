#include "gpufit/core/output_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace gpufit {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path Fresh(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gpufit-lock-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(LockOutputFolders, ASecondHolderGivesUpNamingTheFirstsPid) {
  const fs::path dir = Fresh("second");
  Result<OutputLock> first = LockOutputFolders({{dir, "--out"}}, 1);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  const auto started = std::chrono::steady_clock::now();
  // flock(2) locks belong to the open file, so a second open in this process waits as another
  // process would.
  const Result<OutputLock> second = LockOutputFolders({{dir, "--out"}}, 0.2);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, Code::kUnavailable);
  EXPECT_EQ(second.error().message,
            fmt::format("--out {}: another gpufit (PID {}) is writing into this folder; gave up after 0.2 s (lock "
                        "file {}/.gpufit-lock)",
                        dir.string(), ::getpid(), dir.string()));
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 2.0);
  fs::remove_all(dir);
}

TEST(LockOutputFolders, TheLockIsFreeOnceTheHolderIsGone) {
  const fs::path dir = Fresh("released");
  { ASSERT_TRUE(LockOutputFolders({{dir, "--out"}}, 1).has_value()); }
  EXPECT_TRUE(LockOutputFolders({{dir, "--out"}}, 0).has_value());
  // A killed holder: the kernel drops its lock.
  const pid_t child = fork();
  if (child == 0) {
    Result<OutputLock> held = LockOutputFolders({{dir, "--out"}}, 1);
    _exit(held.has_value() ? (::kill(::getpid(), SIGKILL), 0) : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(LockOutputFolders({{dir, "--out"}}, 0).has_value());
  fs::remove_all(dir);
}

TEST(LockOutputFolders, WaitsForTheHolderWithinTheBound) {
  const fs::path dir = Fresh("wait");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    Result<OutputLock> held = LockOutputFolders({{dir, "--out"}}, 1);
    (void)!write(ready[1], "x", 1);
    usleep(300'000);
    _exit(held.has_value() ? 0 : 1);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const Result<OutputLock> after = LockOutputFolders({{dir, "--out"}}, 5);
  EXPECT_TRUE(after.has_value()) << after.error().message;
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  fs::remove_all(dir);
}

TEST(LockOutputFolders, ARepeatedFolderIsLockedOnce) {
  const fs::path dir = Fresh("repeat");
  const Result<OutputLock> lock = LockOutputFolders({{dir, "--out"}, {dir / ".", "--out"}, {dir, "--report"}}, 0);
  ASSERT_TRUE(lock.has_value()) << lock.error().message;
  EXPECT_EQ(lock->folders(), 1u);
  fs::remove_all(dir);
}

TEST(LockOutputFolders, AFolderThatTakesNoFileIsNamed) {
  const Result<OutputLock> lock = LockOutputFolders({{"/proc", "--out"}}, 0);
  ASSERT_FALSE(lock.has_value());
  EXPECT_EQ(lock.error().code, Code::kInvalidArgument);
  EXPECT_THAT(lock.error().message, HasSubstr("--out /proc: cannot create the lock file /proc/.gpufit-lock"));
}

}  // namespace
}  // namespace gpufit

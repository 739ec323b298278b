#include "gpufit/core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string_view>

namespace gpufit {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::stringstream ss;
  ss << std::ifstream(p).rdbuf();
  return ss.str();
}

TEST(WriteFilesAtomically, ReplacesTheWholeFileAndLeavesNoTemporary) {
  const fs::path dir = fs::temp_directory_path() / ("gpufit-atomic-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path f = dir / "plan.json";
  ASSERT_TRUE(WriteFilesAtomically({{f, "old"}}).has_value());
  ASSERT_TRUE(WriteFilesAtomically({{f, "new contents"}}).has_value());
  EXPECT_EQ(Read(f), "new contents");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(WriteFilesAtomically, WhenOneFileCannotBeWrittenNoneIsTouched) {
  const fs::path dir = fs::temp_directory_path() / ("gpufit-atomic-pair-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Result<void> r = WriteFilesAtomically({{dir / "plan.json", "{}"}, {dir / "missing" / "plan.md", "x"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("missing/plan.md"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir)) << "no plan.json and no temporary left behind";
  fs::remove_all(dir);
}

TEST(WriteFilesAtomically, MissingDirectoryIsAnErrorNamingThePath) {
  const Result<void> r = WriteFilesAtomically({{"/nonexistent-gpufit-dir/plan.json", "x"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_NE(r.error().message.find("/nonexistent-gpufit-dir/plan.json"), std::string::npos);
}

// The names in `dir`, sorted.
std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gpufit-atomic-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs the write of plan.json and plan.md ("new") in a child process that is killed (exits
// at once, as on SIGKILL: no cleanup) right after `kill_after`.
void WriteNewPairKilledAfter(const fs::path& dir, std::string_view kill_after) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    (void)WriteFilesAtomically({{dir / "plan.json", "new json"}, {dir / "plan.md", "new md"}}, {},
                               [&](std::string_view s) {
                                 if (s == kill_after) _exit(9);
                               });
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 9) << "the child was to be interrupted after " << kill_after;
}

// Killed between the two renames (the defect: a new plan.json beside an old plan.md, for
// good): the next run into the folder completes the interrupted commit first.
TEST(WriteFilesAtomically, AKillBetweenRenamesIsRolledForwardByTheNextRun) {
  const fs::path dir = FreshDir("kill-renames");
  ASSERT_TRUE(WriteFilesAtomically({{dir / "plan.json", "old json"}, {dir / "plan.md", "old md"}}).has_value());
  WriteNewPairKilledAfter(dir, "renamed 1");
  EXPECT_EQ(Read(dir / "plan.json"), "new json");
  EXPECT_EQ(Read(dir / "plan.md"), "old md") << "the interruption this test simulates";
  ASSERT_TRUE(WriteFilesAtomically({{dir / "other.txt", "x"}}).has_value());
  EXPECT_EQ(Read(dir / "plan.md"), "new md");
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"other.txt", "plan.json", "plan.md"}))
      << "journal and temporaries gone";
  fs::remove_all(dir);
}

// Killed before the commit point: the old pair stays; the full-size temporaries it left are
// removed by the next run.
TEST(WriteFilesAtomically, AKillBeforeTheCommitKeepsTheOldFilesAndTheNextRunRemovesItsTemporaries) {
  const fs::path dir = FreshDir("kill-before");
  ASSERT_TRUE(WriteFilesAtomically({{dir / "plan.json", "old json"}, {dir / "plan.md", "old md"}}).has_value());
  WriteNewPairKilledAfter(dir, "temporaries written");
  EXPECT_EQ(Read(dir / "plan.json"), "old json");
  EXPECT_EQ(Read(dir / "plan.md"), "old md");
  EXPECT_EQ(Names(dir).size(), 4u) << "two temporaries left by the kill";
  ASSERT_TRUE(WriteFilesAtomically({{dir / "plan.json", "3"}, {dir / "plan.md", "3"}}).has_value());
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"plan.json", "plan.md"}));
  fs::remove_all(dir);
}

// Killed after the commit, before any rename: both new files appear on the next run.
TEST(WriteFilesAtomically, AKillRightAfterTheCommitIsRolledForward) {
  const fs::path dir = FreshDir("kill-commit");
  WriteNewPairKilledAfter(dir, "committed");
  EXPECT_FALSE(fs::exists(dir / "plan.json"));
  ASSERT_TRUE(WriteFilesAtomically({}, {dir / "absent"}).has_value());
  EXPECT_EQ(Read(dir / "plan.json"), "new json");
  EXPECT_EQ(Read(dir / "plan.md"), "new md");
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"plan.json", "plan.md"}));
  fs::remove_all(dir);
}

// Temporaries named as earlier versions named them (TARGET.tmp.XXXXXX), which no run ever
// removed, go when a run writes TARGET again; other files stay, and so do the temporaries
// of a process that still runs (this one).
TEST(WriteFilesAtomically, RemovesStaleTemporariesItOwnsOnly) {
  const fs::path dir = FreshDir("stale");
  const std::string live = ".plan.json.gpufit-tmp-" + std::to_string(::getpid()) + "-abcdef";
  for (const std::string name : {"plan.json.tmp.a1B2c3", "notes.tmp.a1B2c3", "plan.json.tmp.toolong1", live.c_str()})
    std::ofstream(dir / name) << "x";
  ASSERT_TRUE(WriteFilesAtomically({{dir / "plan.json", "{}"}}).has_value());
  EXPECT_EQ(Names(dir), (std::vector<std::string>{live, "notes.tmp.a1B2c3", "plan.json", "plan.json.tmp.toolong1"}));
  fs::remove_all(dir);
}

TEST(WriteFilesAtomically, RemovalsArePartOfTheCommit) {
  const fs::path dir = FreshDir("removals");
  ASSERT_TRUE(WriteFilesAtomically({{dir / "hpa.yaml", "hpa"}}).has_value());
  ASSERT_TRUE(WriteFilesAtomically({{dir / "keda.yaml", "keda"}}, {dir / "hpa.yaml"}).has_value());
  EXPECT_EQ(Names(dir), (std::vector<std::string>{"keda.yaml"}));
  fs::remove_all(dir);
}

TEST(CheckOutputDir, NamesTheFlagAndWhatIsWrong) {
  const fs::path dir = FreshDir("check");
  std::ofstream(dir / "file") << "x";
  EXPECT_TRUE(CheckOutputDir(dir, "--out").has_value());
  EXPECT_TRUE(CheckOutputDir(dir / "new" / "deeper", "--out").has_value()) << "creatable";
  const Result<void> file = CheckOutputDir(dir / "file", "--out");
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().message, "--out " + (dir / "file").string() + ": is a file, not a directory");
  const Result<void> under = CheckOutputDir(dir / "file" / "sub", "--emit-manifests");
  ASSERT_FALSE(under.has_value());
  EXPECT_EQ(under.error().message, "--emit-manifests " + (dir / "file" / "sub").string() +
                                       ": cannot create it: " + (dir / "file").string() + " is not a directory");
  fs::remove_all(dir);
}

// Issue 40: a dangling --out link said "File exists" when the run came to create it.
TEST(CheckOutputDir, ADanglingSymbolicLinkIsNamedWithItsTarget) {
  const fs::path dir = FreshDir("dangling");
  fs::create_symlink(dir / "gone", dir / "out");
  const Result<void> r = CheckOutputDir(dir / "out", "--out");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_EQ(r.error().message, "--out " + (dir / "out").string() + ": is a symbolic link to " +
                                   (dir / "gone").string() + ", which does not exist");
  fs::create_directories(dir / "gone");
  EXPECT_TRUE(CheckOutputDir(dir / "out", "--out").has_value()) << "a link to a folder is a folder";
  fs::remove_all(dir);
}

TEST(WriteFilesAtomically, PastTheFileSizeLimitIsAnErrorNamingTheFileAndNothingIsLeft) {
  const fs::path dir = fs::temp_directory_path() / ("gpufit-atomic-fsize-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // In a child: the limit and the ignored SIGXFSZ (as main sets it) stay out of this process.
  const pid_t child = fork();
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{.rlim_cur = 1000, .rlim_max = RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &limit);
    const Result<void> r =
        WriteFilesAtomically({{dir / "plan.md", "small"}, {dir / "plan.json", std::string(5000, 'x')}});
    const std::string want =
        (dir / "plan.json").string() + ": file too large (the file-size limit, ulimit -f): 5000 bytes not written";
    _exit(!r.has_value() && r.error().code == Code::kFailedPrecondition && r.error().message == want ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the error was not the file-size message";
  EXPECT_TRUE(fs::is_empty(dir)) << "no temporary left behind, nothing committed";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpufit

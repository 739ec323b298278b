#include "gpufit/core/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

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

}  // namespace
}  // namespace gpufit

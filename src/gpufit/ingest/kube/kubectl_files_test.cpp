// The kubectl-files ClusterSource: what it reads, when it says nothing changed, and its errors.
#include "gpufit/ingest/kube/kubectl_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kube_fixture.h"

namespace gpufit {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
namespace t = gpufit::testing;

class KubectlFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpufit-kubectl-files-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    cluster_ = t::MakeCluster();
    Write("nodes.json", t::List(cluster_.nodes));
    Write("pods.json", t::List(cluster_.pods));
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Written to a temporary name and renamed over the old one, as a snapshot writer does.
  void Write(const std::string& name, const t::Json& j) {
    std::ofstream(dir_ / (name + ".tmp")) << j.dump();
    fs::rename(dir_ / (name + ".tmp"), dir_ / name);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
  t::TestCluster cluster_;
};

TEST_F(KubectlFilesTest, ReadsBothFilesAndTheSameFilesAgainAreNoChange) {
  auto source = KubectlFiles({.nodes = Path("nodes.json"), .pods = Path("pods.json")});
  EXPECT_EQ(source->Name(), "--nodes " + Path("nodes.json"));
  Result<ClusterObjects> read = source->Read();
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->nodes && read->pods);
  EXPECT_EQ(read->nodes->size(), cluster_.nodes.size());  // 24, as the fixture says
  EXPECT_EQ(read->pods->size(), cluster_.pods.size());
  EXPECT_EQ(read->summary, "24 nodes and " + std::to_string(cluster_.pods.size()) + " pods");
  Result<std::optional<ClusterObjects>> again = source->ReadIfChanged();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->has_value());
  // One pod fewer, written again: read again.
  t::Json fewer = cluster_.pods;
  fewer.erase(fewer.begin());
  Write("pods.json", t::List(fewer));
  again = source->ReadIfChanged();
  ASSERT_TRUE(again && again->has_value());
  EXPECT_EQ((*again)->pods->size(), cluster_.pods.size() - 1);
}

TEST_F(KubectlFilesTest, PodsAloneGiveNoNodes) {
  auto source = KubectlFiles({.nodes = "", .pods = Path("pods.json")});
  Result<ClusterObjects> read = source->Read();
  ASSERT_TRUE(read);
  EXPECT_FALSE(read->nodes.has_value());
  EXPECT_TRUE(read->pods.has_value());
}

TEST_F(KubectlFilesTest, ErrorsNameTheFlagAndTheFile) {
  std::ofstream(dir_ / "pods.json") << "{\"kind\": \"List\", \"items\": [";
  auto source = KubectlFiles({.nodes = Path("nodes.json"), .pods = Path("pods.json")});
  Result<ClusterObjects> read = source->Read();
  ASSERT_FALSE(read);
  EXPECT_THAT(read.error().message, HasSubstr("--pods " + Path("pods.json")));
  auto bare = KubectlFiles({.nodes = Path("nodes.json"), .pods = Path("pods.json"), .flag_in_errors = false});
  read = bare->Read();
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message.rfind(Path("pods.json"), 0), 0u) << read.error().message;
}

// serve --watch-dir: no pods file yet is no pods; a pods file that was there and is gone is an
// error (every GPU would look free), and a failed read is tried again at the next look.
TEST_F(KubectlFilesTest, WatchDirPodsFileMayBeAbsentUntilSeen) {
  fs::remove(dir_ / "pods.json");
  auto source = KubectlFiles(
      {.nodes = Path("nodes.json"), .pods = Path("pods.json"), .pods_may_be_absent = true, .flag_in_errors = false});
  EXPECT_EQ(source->Name(), dir_.string());
  Result<ClusterObjects> read = source->Read();
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_TRUE(read->pods && read->pods->empty());
  Write("pods.json", t::List(cluster_.pods));
  Result<std::optional<ClusterObjects>> next = source->ReadIfChanged();
  ASSERT_TRUE(next && next->has_value());
  EXPECT_EQ((*next)->pods->size(), cluster_.pods.size());
  fs::remove(dir_ / "pods.json");
  next = source->ReadIfChanged();
  ASSERT_FALSE(next);
  EXPECT_THAT(next.error().message, HasSubstr("is gone (it was there before)"));
  next = source->ReadIfChanged();  // still gone: the same error again, not "no change"
  EXPECT_FALSE(next);
}

}  // namespace
}  // namespace gpufit

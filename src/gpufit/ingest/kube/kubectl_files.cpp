#include "gpufit/ingest/kube/kubectl_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "gpufit/ingest/kube/kube_reader.h"

namespace gpufit {
namespace {

// A file as stat(2) sees it: written again (even to the same size) means changed.
struct FileId {
  std::uint64_t inode = 0, size = 0;
  std::int64_t mtime_s = 0, mtime_ns = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> IdOf(const std::string& path) {
  if (path.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_size),
                static_cast<std::int64_t>(st.st_mtim.tv_sec), static_cast<std::int64_t>(st.st_mtim.tv_nsec)};
}

class KubectlFilesSource final : public ClusterSource {
 public:
  explicit KubectlFilesSource(KubectlFilesOptions o) : o_(std::move(o)) {}

  std::string Name() const override {
    if (o_.pods_may_be_absent) return o_.nodes.substr(0, o_.nodes.rfind('/'));  // the --watch-dir
    if (!o_.nodes.empty()) return (o_.flag_in_errors ? "--nodes " : "") + o_.nodes;
    return (o_.flag_in_errors ? "--pods " : "") + o_.pods;
  }

  Result<ClusterObjects> Read() override {
    const Ids now = Stat();
    Result<ClusterObjects> read = ReadAt(now);
    if (read) seen_ = now;
    return read;
  }

  Result<std::optional<ClusterObjects>> ReadIfChanged() override {
    const Ids now = Stat();
    if (seen_ && now == *seen_) return std::optional<ClusterObjects>{};
    Result<ClusterObjects> read = ReadAt(now);
    if (!read) return read.error();
    seen_ = now;
    return std::optional<ClusterObjects>{std::move(*read)};
  }

 private:
  struct Ids {
    std::optional<FileId> nodes, pods;
    bool operator==(const Ids&) const = default;
  };
  Ids Stat() const { return {IdOf(o_.nodes), IdOf(o_.pods)}; }

  Error Prefixed(const char* flag, const Error& e) const {
    return o_.flag_in_errors ? Error{e.code, std::string(flag) + " " + e.message} : e;
  }

  Result<ClusterObjects> ReadAt(const Ids& now) const {
    ClusterObjects out;
    if (!o_.nodes.empty()) {
      Result<std::vector<KubeNode>> n = ReadKubeNodes(o_.nodes);
      if (!n) return Prefixed("--nodes", n.error());
      out.nodes = std::move(*n);
    }
    if (!o_.pods.empty()) {
      if (o_.pods_may_be_absent && !now.pods) {
        if (seen_ && seen_->pods) return FailedPrecondition("{} is gone (it was there before)", o_.pods);
        out.pods.emplace();
      } else {
        Result<std::vector<KubePod>> p = ReadKubePods(o_.pods);
        if (!p) return Prefixed("--pods", p.error());
        out.pods = std::move(*p);
      }
    }
    out.summary =
        fmt::format("{} nodes and {} pods", out.nodes ? out.nodes->size() : 0, out.pods ? out.pods->size() : 0);
    return out;
  }

  KubectlFilesOptions o_;
  std::optional<Ids> seen_;
};

}  // namespace

std::unique_ptr<ClusterSource> KubectlFiles(KubectlFilesOptions options) {
  return std::make_unique<KubectlFilesSource>(std::move(options));
}

}  // namespace gpufit

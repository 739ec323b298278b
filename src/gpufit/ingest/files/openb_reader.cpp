#include "gpufit/ingest/files/openb_reader.h"

#include <cmath>
#include <cstdint>
#include <unordered_set>

#include "gpufit/core/text.h"
#include "gpufit/ingest/internal/csv_table.h"

namespace gpufit {
namespace {

using internal::CsvRow;
using internal::ForEachCsvRow;

// The cell as a whole number in [0, 10^12] (trace quantities are integers; 10^12
// millicores or MiB is far beyond any node, and keeps cluster totals from overflowing).
template <std::size_t N>
Result<std::int64_t> WholeNumber(const CsvRow<N>& row, std::size_t column) {
  const Result<double> v = row.NonNegative(column);
  if (!v) return v.error();
  if (*v != std::floor(*v))
    return InvalidArgument("{}:{}: column '{}': expected a whole number, got {}", *row.file, row.line,
                           (*row.names)[column], QuoteForMessage(row.cells[column]));
  if (*v > 1e12)
    return InvalidArgument("{}:{}: column '{}': {} is out of range (at most 10^12)", *row.file, row.line,
                           (*row.names)[column], QuoteForMessage(row.cells[column]));
  return static_cast<std::int64_t>(*v);
}

// Columns [first, first + K) as whole numbers; the first error found.
template <std::size_t K, std::size_t N>
Result<std::array<std::int64_t, K>> WholeNumbers(const CsvRow<N>& row, std::size_t first) {
  std::array<std::int64_t, K> out{};
  for (std::size_t k = 0; k < K; ++k) {
    const Result<std::int64_t> v = WholeNumber(row, first + k);
    if (!v) return v.error();
    out[k] = *v;
  }
  return out;
}

}  // namespace

Result<std::vector<NodeSpec>> ReadOpenbNodes(const std::string& path) {
  static constexpr std::array<const char*, 5> kColumns = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
  std::vector<NodeSpec> nodes;
  std::unordered_set<std::string> names;
  Result<void> ok = ForEachCsvRow<5>(path, kColumns, [&](const CsvRow<5>& row) -> Result<void> {
    const Result<std::string_view> name = row.Text(0);
    if (!name) return name.error();
    const Result<std::array<std::int64_t, 3>> numbers = WholeNumbers<3>(row, 1);
    if (!numbers) return numbers.error();
    const auto [cpu, mem, gpus] = *numbers;
    if (gpus > kMaxGpusPerNode)
      return InvalidArgument("{}:{}: column 'gpu': at most {} GPUs per node, got {}", path, row.line, kMaxGpusPerNode,
                             gpus);
    const std::string model = row.cells[4] ? row.cells[4] : "";
    if (gpus > 0 && model.empty())
      return InvalidArgument("{}:{}: column 'model': a node with {} GPUs needs its GPU type", path, row.line, gpus);
    if (!names.emplace(*name).second)
      return InvalidArgument("{}:{}: column 'sn': node {} appears twice", path, row.line, QuoteForMessage(*name));
    nodes.push_back({.name = std::string(*name),
                     .cpu = MilliCpu{cpu},
                     .memory = MiB{mem},
                     .gpu_count = static_cast<int>(gpus),
                     .gpu_model = gpus > 0 ? model : std::string()});
    return {};
  });
  if (!ok) return ok.error();
  if (nodes.empty()) return InvalidArgument("{}: no nodes (the file has a header only)", path);
  return nodes;
}

Result<std::vector<PodSpec>> ReadOpenbPods(const std::string& path, OpenbPodColumns* present) {
  // The first five are required; the trace's own converter (pod_csv_to_yaml.py of the FGD
  // simulator) uses gpu_spec and the times only `if` the row has them.
  static constexpr std::array<const char*, 8> kColumns = {"name",      "cpu_milli", "memory_mib",    "num_gpu",
                                                          "gpu_milli", "gpu_spec",  "creation_time", "deletion_time"};
  static constexpr std::size_t kRequired = 5;
  std::vector<PodSpec> pods;
  std::unordered_set<std::string> names;
  OpenbPodColumns seen;
  const auto parse_row = [&](const CsvRow<8>& row) -> Result<void> {
    seen = {.gpu_spec = row.cells[5] != nullptr,
            .creation_time = row.cells[6] != nullptr,
            .deletion_time = row.cells[7] != nullptr};
    const Result<std::string_view> name = row.Text(0);
    if (!name) return name.error();
    const Result<std::array<std::int64_t, 4>> numbers = WholeNumbers<4>(row, 1);
    if (!numbers) return numbers.error();
    const auto [cpu, mem, num_gpu, milli] = *numbers;
    if (num_gpu > kMaxGpusPerNode)
      return InvalidArgument("{}:{}: column 'num_gpu': at most {} GPUs per pod, got {}", path, row.line,
                             kMaxGpusPerNode, num_gpu);
    if (num_gpu == 0 && milli != 0)
      return InvalidArgument("{}:{}: column 'gpu_milli': a pod with num_gpu 0 must ask for 0 milli-GPU, got {}", path,
                             row.line, milli);
    if (num_gpu >= 1 && (milli < 1 || milli > 1000))
      return InvalidArgument("{}:{}: column 'gpu_milli': must be 1..1000 milli-GPU per GPU, got {}", path, row.line,
                             milli);
    if (num_gpu > 1 && milli != 1000)
      return InvalidArgument("{}:{}: column 'gpu_milli': a pod with {} GPUs takes whole GPUs (1000), got {}", path,
                             row.line, num_gpu, milli);
    std::int64_t created = 0;  // no creation_time column: every pod arrives at 0
    if (row.cells[6]) {
      const Result<std::int64_t> c = WholeNumber(row, 6);
      if (!c) return c.error();
      created = *c;
    }
    std::optional<Seconds> deletion;
    if (row.cells[7] && *row.cells[7]) {
      const Result<std::int64_t> deleted = WholeNumber(row, 7);
      if (!deleted) return deleted.error();
      if (*deleted < created)
        return InvalidArgument("{}:{}: column 'deletion_time': {} is before creation_time {}", path, row.line, *deleted,
                               created);
      deletion = Seconds(static_cast<double>(*deleted));
    }
    if (!names.emplace(*name).second)
      return InvalidArgument("{}:{}: column 'name': pod {} appears twice", path, row.line, QuoteForMessage(*name));
    pods.push_back({.name = std::string(*name),
                    .cpu = MilliCpu{cpu},
                    .memory = MiB{mem},
                    .gpu_count = static_cast<int>(num_gpu),
                    .gpu_per_gpu = GpuMilli{milli},
                    .gpu_models = SplitList(row.cells[5] ? row.cells[5] : "", '|'),
                    .creation = Seconds(static_cast<double>(created)),
                    .deletion = deletion});
    return {};
  };
  Result<void> ok = ForEachCsvRow<8>(path, kColumns, parse_row, kRequired);
  if (!ok) return ok.error();
  if (pods.empty()) return InvalidArgument("{}: no pods (the file has a header only)", path);
  if (present) *present = seen;
  return pods;
}

}  // namespace gpufit

#include "gpufit/ingest/telemetry_readers.h"

#include <fmt/format.h>

#include <filesystem>

#include "gpufit/ingest/align.h"
#include "gpufit/ingest/internal/csv_table.h"

namespace gpufit {
namespace {

using internal::CsvRow;
using internal::ForEachCsvRow;

void Append(RawSeries& s, double t, float v) {
  s.time_s.push_back(t);
  s.value.push_back(v);
}

// No GPU has 1 TiB of memory (the largest in the catalog has 141 GB): a larger value is a
// unit mistake or corruption, and would overflow the MiB arithmetic downstream.
constexpr double kMaxPlausibleMiB = 1024.0 * 1024.0;

Result<void> CheckMemory(double mib, const std::string& file, unsigned line, const char* column) {
  if (mib > kMaxPlausibleMiB)
    return InvalidArgument("{}:{}: column '{}': {} MiB of GPU memory is implausible (more than 1 TiB)", file, line,
                           column, mib);
  return {};
}

Result<void> CheckDuty(double v, const std::string& file, unsigned line, const char* column) {
  if (v > 100.0)
    return InvalidArgument("{}:{}: column '{}': duty cycle must be <= 100 %, got {}", file, line, column, v);
  return {};
}

// One GenTD26 file: value per (timestamp_anon, container_ip); `scale` converts the value.
Result<void> ReadGenTd26File(const std::string& path, double scale, bool is_duty,
                             std::unordered_map<std::string, RawSeries>& out) {
  static constexpr std::array<const char*, 3> kColumns = {"timestamp_anon", "value", "container_ip"};
  return ForEachCsvRow<3>(path, kColumns, [&](const CsvRow<3>& row) -> Result<void> {
    const Result<double> t = row.NonNegative(0);
    if (!t) return t.error();
    const Result<double> v = row.NonNegative(1);
    if (!v) return v.error();
    const Result<std::string_view> pod = row.Text(2);
    if (!pod) return pod.error();
    if (Result<void> ok =
            is_duty ? CheckDuty(*v, path, row.line, "value") : CheckMemory(*v * scale, path, row.line, "value");
        !ok) {
      return ok;
    }
    Append(out[std::string(*pod)], *t, static_cast<float>(*v * scale));
    return {};
  });
}

// Drops the samples after the pods' ends, aligns, and lists the pods that lost samples.
Result<Telemetry> AlignWithEnds(RawTelemetry& raw, const std::string& source, const PodEnds& ends) {
  std::vector<PodEnd> ended = DropSamplesAfterEnd(raw, ends);
  Result<Telemetry> t = AlignToGrid(raw, source);
  if (t) t->ended = std::move(ended);
  return t;
}

}  // namespace

Result<Telemetry> ReadGenTd26(const std::string& dir, const PodEnds& ends) {
  namespace fs = std::filesystem;
  RawTelemetry raw;
  const std::string mem = (fs::path(dir) / kGenTd26MemoryFile).string();
  const std::string duty = (fs::path(dir) / kGenTd26DutyFile).string();
  for (const std::string& f : {mem, duty}) {
    std::error_code ec;
    if (!fs::exists(f, ec))
      return NotFound(
          "{} is not a GenTD26 directory: {} is missing (a directory is read as GenTD26, a file as long CSV)", dir,
          fs::path(f).filename().string());
  }
  if (Result<void> r = ReadGenTd26File(mem, 1.0 / static_cast<double>(kBytesPerMiB), false, raw.fb_used_mib); !r)
    return r.error();
  if (Result<void> r = ReadGenTd26File(duty, 1.0, true, raw.gpu_util_pct); !r) return r.error();
  return AlignWithEnds(raw, dir, ends);
}

Result<Telemetry> ReadLongCsv(const std::string& path, const PodEnds& ends) {
  static constexpr std::array<const char*, 4> kColumns = {"timestamp_s", "pod", "metric", "value"};
  RawTelemetry raw;
  PodEnds file_ends;
  std::size_t rows = 0;
  Result<void> r = ForEachCsvRow<4>(path, kColumns, [&](const CsvRow<4>& row) -> Result<void> {
    ++rows;
    const Result<std::string_view> metric = row.Text(2);
    if (!metric) return metric.error();
    const bool is_mem = *metric == kDcgmFbUsed;
    const bool is_util = *metric == kDcgmGpuUtil;
    if (*metric == kKubePodCompletionTime) {
      const Result<std::string_view> pod = row.Text(1);
      if (!pod) return pod.error();
      const Result<double> end = row.NonNegative(3);
      if (!end) return end.error();
      file_ends[std::string(*pod)].push_back({*end, fmt::format("{} row, line {}", kKubePodCompletionTime, row.line)});
      return {};
    }
    if (!is_mem && !is_util) return {};
    const Result<double> t = row.NonNegative(0);
    if (!t) return t.error();
    const Result<std::string_view> pod = row.Text(1);
    if (!pod) return pod.error();
    const Result<double> v = row.NonNegative(3);
    if (!v) return v.error();
    if (Result<void> ok = is_util ? CheckDuty(*v, path, row.line, "value") : CheckMemory(*v, path, row.line, "value");
        !ok) {
      return ok;
    }
    Append((is_mem ? raw.fb_used_mib : raw.gpu_util_pct)[std::string(*pod)], *t, static_cast<float>(*v));
    return {};
  });
  if (!r) return r.error();
  if (rows == 0) return InvalidArgument("{}: no data rows after the header", path);
  MergePodEnds(file_ends, ends);
  return AlignWithEnds(raw, path, file_ends);
}

Result<Telemetry> ReadTelemetry(const std::string& path, const PodEnds& ends) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return ReadGenTd26(path, ends);
  if (!std::filesystem::exists(path, ec)) return NotFound("{}: no such file or directory", path);
  return ReadLongCsv(path, ends);
}

}  // namespace gpufit

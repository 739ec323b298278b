#include "gpufit/ingest/files/telemetry_readers.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpufit/ingest/align.h"
#include "gpufit/ingest/dcgm_devices.h"
#include "gpufit/ingest/internal/csv_table.h"
#include "gpufit/ingest/internal/long_csv.h"

namespace gpufit {
namespace {

using internal::CsvRow;
using internal::ForEachCsvRow;

struct TransparentHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

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

// DCGM sends its profiling fields as ratios 0-1.
Result<void> CheckRatio(double v, const std::string& file, unsigned line, const char* column, std::string_view field) {
  if (v > 1.0)
    return InvalidArgument("{}:{}: column '{}': {} is a ratio 0-1 (as DCGM sends it), got {}", file, line, column,
                           field, v);
  return {};
}

// The column names of the CSV header (trimmed of spaces and double quotes); empty when the
// file cannot be read (ForEachCsvRow then says why).
std::set<std::string> HeaderNames(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::set<std::string> names;
  if (!std::getline(in, line)) return names;
  std::size_t from = 0;
  while (from <= line.size()) {
    const std::size_t comma = std::min(line.find(',', from), line.size());
    std::string name = line.substr(from, comma - from);
    const auto trim = [](char c) { return c == ' ' || c == '"' || c == '\r' || c == '\t'; };
    while (!name.empty() && trim(name.back())) name.pop_back();
    while (!name.empty() && trim(name.front())) name.erase(0, 1);
    names.insert(name);
    from = comma + 1;
  }
  return names;
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

// What a reader of one part of a long CSV gathered.
struct LongCsvPart {
  PodDevices pods;
  // (pod, device) -> its samples in `pods` (map nodes do not move): a row finds its series by
  // one hash of reused buffers, without building a string or walking the ordered map.
  std::unordered_map<std::string, DeviceSamples*, TransparentHash, std::equal_to<>> index;
  std::string key, device;  // reused per row
  std::string last_key;     // the previous row's series, and its samples
  DeviceSamples* last = nullptr;
  PodEnds file_ends;
  std::size_t rows = 0;
  std::map<std::string, std::string> profiles;  // MIG device -> its GPU_I_PROFILE
};

void AppendAll(RawSeries& into, RawSeries& from) {
  into.time_s.insert(into.time_s.end(), from.time_s.begin(), from.time_s.end());
  into.value.insert(into.value.end(), from.value.begin(), from.value.end());
  from = RawSeries{};  // freed as soon as copied: the join adds one series at a time to the peak
}

// Gives back what push_back's doubling reserved (on average about a third more than held).
void Shrink(DeviceSamples& s) {
  for (RawSeries DeviceSamples::*m : {&DeviceSamples::fb_used_mib, &DeviceSamples::gpu_util_pct,
                                      &DeviceSamples::engine_active_pct, &DeviceSamples::sm_active_pct}) {
    (s.*m).time_s.shrink_to_fit();
    (s.*m).value.shrink_to_fit();
  }
}

// Parts in file order joined into one, each series' samples in file order.
LongCsvPart JoinParts(std::vector<LongCsvPart>& parts) {
  LongCsvPart all = std::move(parts.front());
  all.index.clear();
  for (std::size_t k = 1; k < parts.size(); ++k) {
    for (auto& [pod, devices] : parts[k].pods) {
      for (auto& [device, s] : devices) {
        DeviceSamples& into = all.pods[pod][device];
        for (RawSeries DeviceSamples::*m : {&DeviceSamples::fb_used_mib, &DeviceSamples::gpu_util_pct,
                                            &DeviceSamples::engine_active_pct, &DeviceSamples::sm_active_pct})
          AppendAll(into.*m, s.*m);
      }
    }
    for (auto& [pod, list] : parts[k].file_ends) {
      auto& to = all.file_ends[pod];
      to.insert(to.end(), list.begin(), list.end());
    }
    all.rows += parts[k].rows;
    all.profiles.merge(parts[k].profiles);
    parts[k] = LongCsvPart{};
  }
  for (auto& [pod, devices] : all.pods)
    for (auto& [device, s] : devices) Shrink(s);
  return all;
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
  Result<Telemetry> tel = AlignWithEnds(raw, dir, ends);
  if (tel)
    for (PodSeries& p : tel->pods) p.util_field = kGenTd26DutyField;
  return tel;
}

Result<Telemetry> ReadLongCsv(const std::string& path, const PodEnds& ends) {
  return internal::ReadLongCsvInParts(path, ends, std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8),
                                      internal::kMinBytesToSplit);
}

Result<Telemetry> internal::ReadLongCsvInParts(const std::string& path, const PodEnds& ends, std::size_t parts_wanted,
                                               std::uintmax_t min_bytes_to_split) {
  // The optional device columns, when the header names them.
  const std::set<std::string> header = HeaderNames(path);
  const bool with_device = header.count(kLongCsvDevice) > 0, with_instance = header.count(kLongCsvInstance) > 0,
             with_profile = header.count(kLongCsvProfile) > 0;
  std::vector<const char*> names = {"timestamp_s", "pod", "metric", "value"};
  const auto optional_column = [&](bool given, const char* name) -> std::size_t {
    if (!given) return 0;  // 0: absent (a required column's index)
    names.push_back(name);
    return names.size() - 1;
  };
  const std::size_t device_col = optional_column(with_device, kLongCsvDevice),
                    instance_col = optional_column(with_instance, kLongCsvInstance),
                    profile_col = optional_column(with_profile, kLongCsvProfile);
  // The file is read in parts on parallel threads (one per core, at most 8, by ReadLongCsv),
  // each into its own LongCsvPart; the parts are then joined in file order.
  std::vector<LongCsvPart> parts(std::max<std::size_t>(1, parts_wanted));
  auto on_row = [&](std::size_t part, const auto& row) -> Result<void> {
    auto& [pods, index, key, device, last_key, last, file_ends, rows, profiles] = parts[part];
    ++rows;
    const Result<std::string_view> metric = row.Text(2);
    if (!metric) return metric.error();
    if (*metric == kKubePodCompletionTime) {
      const Result<std::string_view> pod = row.Text(1);
      if (!pod) return pod.error();
      const Result<double> end = row.NonNegative(3);
      if (!end) return end.error();
      file_ends[std::string(*pod)].push_back({*end, fmt::format("{} row, line {}", kKubePodCompletionTime, row.line)});
      return {};
    }
    RawSeries DeviceSamples::*into = nullptr;
    double scale = 1;
    if (*metric == kDcgmFbUsed) {
      into = &DeviceSamples::fb_used_mib;
    } else if (*metric == kDcgmGpuUtil) {
      into = &DeviceSamples::gpu_util_pct;
    } else if (*metric == kDcgmGrEngineActive) {
      into = &DeviceSamples::engine_active_pct;
      scale = 100;
    } else if (*metric == kDcgmSmActive) {
      into = &DeviceSamples::sm_active_pct;
      scale = 100;
    } else {
      return {};
    }
    const Result<double> t = row.NonNegative(0);
    if (!t) return t.error();
    const Result<std::string_view> pod = row.Text(1);
    if (!pod) return pod.error();
    const Result<double> v = row.NonNegative(3);
    if (!v) return v.error();
    if (Result<void> ok = scale != 1                            ? CheckRatio(*v, path, row.line, "value", *metric)
                          : into == &DeviceSamples::fb_used_mib ? CheckMemory(*v, path, row.line, "value")
                                                                : CheckDuty(*v, path, row.line, "value");
        !ok) {
      return ok;
    }
    // Device id: the device column, "/gi<GPU_I_ID>" for a MIG instance (as the Prometheus reader names it).
    device.clear();
    constexpr std::size_t kColumns = std::tuple_size_v<std::decay_t<decltype(row.cells)>>;
    if constexpr (kColumns > 4) {
      const auto cell = [&](std::size_t col) -> const char* {
        return col == 0 || col >= kColumns || row.cells[col] == nullptr ? "" : row.cells[col];
      };
      const char* instance = cell(instance_col);
      const char* profile = cell(profile_col);
      device.assign(cell(device_col));
      if (*instance != '\0') {
        if (device.empty())
          return InvalidArgument("{}:{}: column '{}': a MIG instance id needs its GPU in column '{}'", path, row.line,
                                 kLongCsvInstance, kLongCsvDevice);
        device += "/gi";
        device += instance;
      }
      if (*profile != '\0') {
        if (*instance == '\0')
          return InvalidArgument("{}:{}: column '{}': a MIG profile needs its instance id in column '{}'", path,
                                 row.line, kLongCsvProfile, kLongCsvInstance);
        if (const auto it = profiles.find(device); it == profiles.end()) profiles.emplace(device, profile);
      }
    }
    key.assign(*pod);
    key.push_back('\0');  // not allowed in a pod name or a device id
    key += device;
    if (key != last_key) {  // a pod's metrics often come one after the other: no hash then
      auto at = index.find(key);
      if (at == index.end()) at = index.emplace(key, &pods[std::string(*pod)][device]).first;
      last = at->second;
      last_key = key;
    }
    Append(last->*into, *t, static_cast<float>(*v * scale));
    return {};
  };
  using internal::ForEachCsvRowInParts;
  const auto read = [&]<std::size_t N>() {
    std::array<const char*, N> columns{};
    std::copy_n(names.begin(), N, columns.begin());
    return ForEachCsvRowInParts<N>(path, columns, parts.size(), on_row, N, min_bytes_to_split);
  };
  Result<void> r = names.size() == 7   ? read.template operator()<7>()
                   : names.size() == 6 ? read.template operator()<6>()
                   : names.size() == 5 ? read.template operator()<5>()
                                       : read.template operator()<4>();
  if (!r) return r.error();
  LongCsvPart all = JoinParts(parts);
  if (all.rows == 0) return InvalidArgument("{}: no data rows after the header", path);
  PodEnds& file_ends = all.file_ends;
  MergePodEnds(file_ends, ends);
  DeviceSeries series = SeriesByDevice(std::move(all.pods));
  std::vector<PodEnd> ended = DropSamplesAfterEnd(series.raw, file_ends);
  Result<Telemetry> tel = AlignToGrid(series.raw, path);
  if (!tel) {
    if (series.skipped.empty()) return tel.error();
    return InvalidArgument("{}; left out: {}", tel.error().message, series.skipped.front());
  }
  tel->ended = std::move(ended);
  tel->skipped.insert(tel->skipped.end(), series.skipped.begin(), series.skipped.end());
  AttachDeviceFacts(series, *tel);
  for (PodSeries& p : tel->pods)
    if (const auto it = all.profiles.find(p.device); it != all.profiles.end()) p.mig_profile = it->second;
  return tel;
}

Result<Telemetry> ReadTelemetry(const std::string& path, const PodEnds& ends) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return ReadGenTd26(path, ends);
  if (!std::filesystem::exists(path, ec)) return NotFound("{}: no such file or directory", path);
  return ReadLongCsv(path, ends);
}

}  // namespace gpufit

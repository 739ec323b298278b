#include "gpufit/ingest/files/request_trace_reader.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "gpufit/core/text.h"
#include "gpufit/ingest/internal/csv_table.h"

namespace gpufit {
namespace {

using internal::CsvRow;
using internal::ForEachCsvRow;

// Digits [pos, pos + n) of `s` as a number, or -1.
int Digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + pos + n, v);
  return ec == std::errc() && end == s.data() + pos + n ? v : -1;
}

template <std::size_t N>
Result<int> Tokens(const CsvRow<N>& row, std::size_t column) {
  const Result<double> v = row.NonNegative(column);
  if (!v) return v.error();
  if (*v != std::floor(*v) || *v > 1e9) {
    return InvalidArgument("{}:{}: column '{}': expected a whole token count, got {}", *row.file, row.line,
                           (*row.names)[column], QuoteForMessage(row.cells[column]));
  }
  return static_cast<int>(*v);
}

Result<RequestTrace> Finish(RequestTrace t, const std::string& path) {
  if (t.requests.empty()) return InvalidArgument("{}: no requests", path);
  std::stable_sort(t.requests.begin(), t.requests.end(),
                   [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  const double first = t.requests.front().arrival_s;
  for (Request& r : t.requests) r.arrival_s -= first;
  t.origin_s = first;
  return t;
}

}  // namespace

Result<double> ParseUtcTimestamp(std::string_view s) {
  const auto bad = [&] {
    return InvalidArgument("expected YYYY-MM-DD HH:MM:SS[.fraction], got {}", QuoteForMessage(s));
  };
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') {
    return bad();
  }
  const int y = Digits(s, 0, 4), mo = Digits(s, 5, 2), d = Digits(s, 8, 2);
  const int h = Digits(s, 11, 2), mi = Digits(s, 14, 2), sec = Digits(s, 17, 2);
  if (y < 0 || mo < 1 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60) return bad();
  const std::chrono::year_month_day date{std::chrono::year{y}, std::chrono::month{static_cast<unsigned>(mo)},
                                         std::chrono::day{static_cast<unsigned>(d)}};
  if (!date.ok()) return bad();
  double fraction = 0;
  if (s.size() > 19) {
    if (s[19] != '.' || s.size() == 20) return bad();
    double scale = 0.1;
    for (std::size_t i = 20; i < s.size(); ++i, scale /= 10) {
      if (s[i] < '0' || s[i] > '9') return bad();
      fraction += (s[i] - '0') * scale;
    }
  }
  const auto days = std::chrono::sys_days{date}.time_since_epoch().count();
  return static_cast<double>(days) * 86400 + h * 3600 + mi * 60 + sec + fraction;
}

Result<RequestTrace> ReadAzureLlmTrace(const std::string& path) {
  static constexpr std::array<const char*, 3> kColumns = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
  RequestTrace t{.source = path, .requests = {}, .has_tokens = true};
  Result<void> ok = ForEachCsvRow<3>(path, kColumns, [&](const CsvRow<3>& row) -> Result<void> {
    const Result<std::string_view> text = row.Text(0);
    if (!text) return text.error();
    const Result<double> at = ParseUtcTimestamp(*text);
    if (!at) return InvalidArgument("{}:{}: column 'TIMESTAMP': {}", path, row.line, at.error().message);
    const Result<int> in = Tokens(row, 1), out = Tokens(row, 2);
    if (!in) return in.error();
    if (!out) return out.error();
    t.requests.push_back({.arrival_s = *at, .input_tokens = *in, .output_tokens = *out});
    return {};
  });
  if (!ok) return ok.error();
  return Finish(std::move(t), path);
}

Result<RequestTrace> ReadGenericRequestTrace(const std::string& path) {
  static constexpr std::array<const char*, 3> kWithTokens = {"timestamp_s", "input_tokens", "output_tokens"};
  RequestTrace t{.source = path, .requests = {}, .has_tokens = true};
  Result<void> ok = ForEachCsvRow<3>(path, kWithTokens, [&](const CsvRow<3>& row) -> Result<void> {
    const Result<double> at = row.NonNegative(0);
    if (!at) return at.error();
    const Result<int> in = Tokens(row, 1), out = Tokens(row, 2);
    if (!in) return in.error();
    if (!out) return out.error();
    t.requests.push_back({.arrival_s = *at, .input_tokens = *in, .output_tokens = *out});
    return {};
  });
  if (!ok && ok.error().message.find("issing column") != std::string::npos) {  // no token columns
    static constexpr std::array<const char*, 1> kTimesOnly = {"timestamp_s"};
    t = RequestTrace{.source = path, .requests = {}, .has_tokens = false};
    ok = ForEachCsvRow<1>(path, kTimesOnly, [&](const CsvRow<1>& row) -> Result<void> {
      const Result<double> at = row.NonNegative(0);
      if (!at) return at.error();
      t.requests.push_back({.arrival_s = *at, .input_tokens = 0, .output_tokens = 0});
      return {};
    });
  }
  if (!ok) return ok.error();
  return Finish(std::move(t), path);
}

}  // namespace gpufit

#include "gpufit/core/rfc3339.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace gpufit {

Result<double> ParseRfc3339(std::string_view s) {
  const auto bad = [&] {
    return InvalidArgument("expected an RFC 3339 time YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM), got '{}'", s);
  };
  // Digits [pos, pos + n) as a number, or -1.
  const auto digits = [&](std::size_t pos, std::size_t n) -> int {
    if (pos + n > s.size()) return -1;
    int v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':') {
    return bad();
  }
  const int y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2);
  const int h = digits(11, 2), mi = digits(14, 2), sec = digits(17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60) {
    return bad();
  }
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  static constexpr int kDaysIn[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d > kDaysIn[mo - 1] + (mo == 2 && leap ? 1 : 0)) return bad();

  std::size_t pos = 19;
  double fraction = 0;
  if (s[pos] == '.') {
    double scale = 0.1;
    const std::size_t start = ++pos;
    for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos, scale /= 10) fraction += (s[pos] - '0') * scale;
    if (pos == start) return bad();
  }
  if (pos >= s.size()) return bad();
  int offset_s = 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    if (pos + 1 != s.size()) return bad();
  } else if (s[pos] == '+' || s[pos] == '-') {
    const int oh = digits(pos + 1, 2), om = digits(pos + 4, 2);
    if (pos + 6 != s.size() || s[pos + 3] != ':' || oh < 0 || oh > 23 || om < 0 || om > 59) return bad();
    offset_s = (s[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  } else {
    return bad();
  }

  // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
  const std::int64_t yy = y - (mo <= 2 ? 1 : 0);
  const std::int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
  const std::int64_t yoe = yy - era * 400;                                      // [0, 399]
  const std::int64_t doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1;  // [0, 365]
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;               // [0, 146096]
  const std::int64_t days = era * 146097 + doe - 719468;
  const std::int64_t whole = days * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  return static_cast<double>(whole) + fraction;
}

std::string FormatRfc3339(double unix_s) {
  const auto whole = static_cast<std::int64_t>(std::floor(unix_s));
  const std::int64_t days = (whole >= 0 ? whole : whole - 86399) / 86400;
  const std::int64_t secs = whole - days * 86400;
  // Civil date of a day count since 1970-01-01 (H. Hinnant's civil_from_days).
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", y, m, d, secs / 3600, secs % 3600 / 60, secs % 60);
}

}  // namespace gpufit

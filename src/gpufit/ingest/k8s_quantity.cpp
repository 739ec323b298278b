#include "gpufit/ingest/k8s_quantity.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <utility>

namespace gpufit {
namespace {

Error Bad(std::string_view text, std::string_view why) {
  return Error{.code = Code::kInvalidArgument, .message = fmt::format("quantity '{}': {}", text, why)};
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<double> ParseQuantity(std::string_view text) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  double sign = 1;
  if (i < n && (text[i] == '+' || text[i] == '-')) sign = text[i++] == '-' ? -1 : 1;
  // The number: digits, optionally a point and more digits (at least one digit in all).
  double number = 0;
  std::size_t digits = 0;
  for (; i < n && IsDigit(text[i]); ++i, ++digits) number = number * 10 + (text[i] - '0');
  if (i < n && text[i] == '.') {
    double scale = 0.1;
    for (++i; i < n && IsDigit(text[i]); ++i, ++digits, scale /= 10) number += (text[i] - '0') * scale;
  }
  if (digits == 0) return Unexpected{Bad(text, "expected a number")};
  const std::string_view suffix = text.substr(i);
  double factor = 1;
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E') &&
      (IsDigit(suffix[1]) || suffix[1] == '+' || suffix[1] == '-')) {
    // A decimal exponent: e or E, an optional sign, digits.
    std::size_t j = 1;
    int exp_sign = 1;
    if (suffix[j] == '+' || suffix[j] == '-') exp_sign = suffix[j++] == '-' ? -1 : 1;
    if (j >= suffix.size()) return Unexpected{Bad(text, "exponent without digits")};
    int exponent = 0;
    for (; j < suffix.size(); ++j) {
      if (!IsDigit(suffix[j]) || exponent > 1000) return Unexpected{Bad(text, "malformed exponent")};
      exponent = exponent * 10 + (suffix[j] - '0');
    }
    factor = std::pow(10.0, exp_sign * exponent);
  } else if (!suffix.empty()) {
    static constexpr std::array<std::pair<std::string_view, double>, 15> kSuffixes = {{
        {"n", 1e-9},
        {"u", 1e-6},
        {"m", 1e-3},
        {"k", 1e3},
        {"M", 1e6},
        {"G", 1e9},
        {"T", 1e12},
        {"P", 1e15},
        {"E", 1e18},
        {"Ki", 1024.0},
        {"Mi", 1048576.0},
        {"Gi", 1073741824.0},
        {"Ti", 1099511627776.0},
        {"Pi", 1125899906842624.0},
        {"Ei", 1152921504606846976.0},
    }};
    bool known = false;
    for (const auto& [name, value] : kSuffixes) {
      if (suffix == name) {
        factor = value;
        known = true;
      }
    }
    if (!known) return Unexpected{Bad(text, fmt::format("unknown suffix '{}'", suffix))};
  }
  const double value = sign * number * factor;
  if (!std::isfinite(value)) return Unexpected{Bad(text, "not a finite number")};
  return value;
}

Result<MilliCpu> CpuQuantity(std::string_view text) {
  const Result<double> cores = ParseQuantity(text);
  if (!cores) return cores.error();
  if (*cores < 0) return Unexpected{Bad(text, "CPU must be >= 0")};
  return MilliCpu{static_cast<std::int64_t>(std::ceil(*cores * 1000 - 1e-9))};
}

Result<MiB> MemoryQuantity(std::string_view text) {
  const Result<double> bytes = ParseQuantity(text);
  if (!bytes) return bytes.error();
  if (*bytes < 0) return Unexpected{Bad(text, "memory must be >= 0")};
  return MiB{static_cast<std::int64_t>(std::ceil(*bytes / 1048576.0 - 1e-9))};
}

Result<int> DeviceQuantity(std::string_view text) {
  const Result<double> count = ParseQuantity(text);
  if (!count) return count.error();
  if (*count < 0 || *count != std::floor(*count) || *count > 1e6) {
    return Unexpected{Bad(text, "a device count must be a whole number >= 0")};
  }
  return static_cast<int>(*count);
}

}  // namespace gpufit

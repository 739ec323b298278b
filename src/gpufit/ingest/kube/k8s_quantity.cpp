#include "gpufit/ingest/kube/k8s_quantity.h"

#include <fast_float/fast_float.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <system_error>
#include <utility>

namespace gpufit {
namespace {

Error Bad(std::string_view text, std::string_view why) {
  return Error{.code = Code::kInvalidArgument, .message = fmt::format("quantity '{}': {}", text, why)};
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// 2^63: Kubernetes keeps a quantity's value (bytes, millicores) in an int64, so no larger
// one exists; nor does it fit gpufit's int64 MilliCpu and MiB.
constexpr double kInt64Bound = 9223372036854775808.0;

}  // namespace

Result<double> ParseQuantity(std::string_view text) {
  // A sign, then the number (fast_float: digits, a point, and a decimal exponent "e3" or
  // "E-2" when digits follow the e; "1E" stops before the E, which is then exa).
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  double sign = 1;
  if (p != end && (*p == '+' || *p == '-')) sign = *p++ == '-' ? -1 : 1;
  if (p == end || !(IsDigit(*p) || *p == '.')) return Unexpected{Bad(text, "expected a number")};
  double number = 0;
  const auto parsed = fast_float::from_chars(p, end, number);
  if (parsed.ec != std::errc()) return Unexpected{Bad(text, "expected a number")};
  const std::string_view suffix(parsed.ptr, static_cast<std::size_t>(end - parsed.ptr));
  double factor = 1;
  if (!suffix.empty()) {
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
    const auto* it = std::find_if(kSuffixes.begin(), kSuffixes.end(), [&](const auto& e) { return e.first == suffix; });
    if (it == kSuffixes.end()) return Unexpected{Bad(text, fmt::format("unknown suffix '{}'", suffix))};
    factor = it->second;
  }
  const double value = sign * number * factor;
  if (!std::isfinite(value)) return Unexpected{Bad(text, "not a finite number")};
  return value;
}

Result<MilliCpu> CpuQuantity(std::string_view text) {
  const Result<double> cores = ParseQuantity(text);
  if (!cores) return cores.error();
  if (*cores < 0) return Unexpected{Bad(text, "CPU must be >= 0")};
  if (*cores * 1000 >= kInt64Bound) return Unexpected{Bad(text, "above 2^63 millicores, more than Kubernetes holds")};
  return MilliCpu{static_cast<std::int64_t>(std::ceil(*cores * 1000 - 1e-9))};
}

Result<MiB> MemoryQuantity(std::string_view text, MemoryRounding rounding) {
  const Result<double> bytes = ParseQuantity(text);
  if (!bytes) return bytes.error();
  if (*bytes < 0) return Unexpected{Bad(text, "memory must be >= 0")};
  if (*bytes >= kInt64Bound) return Unexpected{Bad(text, "above 2^63 bytes (8 EiB), more than Kubernetes holds")};
  const double mib = *bytes / 1048576.0;
  return MiB{
      static_cast<std::int64_t>(rounding == MemoryRounding::kUp ? std::ceil(mib - 1e-9) : std::floor(mib + 1e-9))};
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

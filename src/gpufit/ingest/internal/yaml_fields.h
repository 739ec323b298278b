// Reading fields of a YAML mapping with errors that name the file, the entry and the field;
// unknown and repeated keys are errors (a misspelt optional field would otherwise fall back
// to its default in silence). Shared by the YAML input files (training workloads,
// inference services).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/core/text.h"

namespace gpufit::internal {

class Fields {
 public:
  Fields(const YAML::Node& node, std::string where) : node_(node), where_(std::move(where)) {}

  bool Has(const char* key) const { return node_[key].IsDefined() && !node_[key].IsNull(); }

  // A misspelt optional field would silently fall back to its default: unknown keys are errors.
  Result<void> Only(std::initializer_list<std::string_view> keys) const {
    if (!node_.IsMap()) return InvalidArgument("{}: must be a mapping of fields", where_);
    std::vector<std::string> seen;
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        return InvalidArgument("{}: field '{}' appears twice", where_, key);
      }
      seen.push_back(key);
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        return InvalidArgument("{}: unknown field '{}' (known: {})", where_, key, fmt::join(keys, ", "));
      }
    }
    return {};
  }

  Result<double> Number(const char* key, std::optional<double> fallback = std::nullopt, double min = 0) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return InvalidArgument("{}: missing field '{}'", where_, key);
    }
    double v = 0;
    try {
      v = node_[key].as<double>();
    } catch (const YAML::Exception&) {
      return InvalidArgument("{}: field '{}' must be a number, got {}{}", where_, key,
                             QuoteForMessage(node_[key].Scalar()), Line(key));
    }
    if (!std::isfinite(v)) return InvalidArgument("{}: field '{}' must be finite, got {}{}", where_, key, v, Line(key));
    if (v < min) return InvalidArgument("{}: field '{}' must be >= {}, got {}{}", where_, key, min, v, Line(key));
    return v;
  }
  // A number in [lo, hi]; `why` gives the reason for the range (physical plausibility, a
  // format's limit), said in the error: "F: field 'K' must be in [LO, HI] (WHY), got V (line N)".
  Result<double> NumberIn(const char* key, std::optional<double> fallback, double lo, double hi,
                          std::string_view why) const {
    const Result<double> v = Number(key, fallback, -HUGE_VAL);
    if (v && !(*v >= lo && *v <= hi))
      return InvalidArgument("{}: field '{}' must be in [{}, {}] ({}), got {}{}", where_, key, lo, hi, why, *v,
                             Line(key));
    return v;
  }
  Result<std::string> Text(const char* key, std::optional<std::string> fallback = std::nullopt) const {
    if (!Has(key)) {
      if (fallback) return *fallback;
      return InvalidArgument("{}: missing field '{}'", where_, key);
    }
    if (!node_[key].IsScalar()) return InvalidArgument("{}: field '{}' must be a string", where_, key);
    return node_[key].Scalar();
  }
  const std::string& where() const { return where_; }
  // " (line N)" of the field's value in the file, or "" when unknown.
  std::string Line(const char* key) const {
    const YAML::Mark m = node_[key].Mark();
    return m.is_null() ? std::string() : fmt::format(" (line {})", m.line + 1);
  }

 private:
  YAML::Node node_;
  std::string where_;
};

#define GPUFIT_CHECK(expr) \
  if (Result<void> check = (expr); !check) return check.error()

#define GPUFIT_TRY(var, expr)                     \
  auto var##_result = (expr);                     \
  if (!var##_result) return var##_result.error(); \
  const auto var = *var##_result

}  // namespace gpufit::internal

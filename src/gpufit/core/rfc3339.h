// RFC 3339 times (https://www.rfc-editor.org/rfc/rfc3339), as Kubernetes prints
// creationTimestamp and Prometheus accepts for start/end.
#pragma once

#include <string>
#include <string_view>

#include "gpufit/core/result.h"

namespace gpufit {

// Unix seconds of `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)` (`t` and `z` accepted
// too), e.g. "2026-01-01T00:00:00Z" -> 1767225600. kInvalidArgument quoting the text.
Result<double> ParseRfc3339(std::string_view text);

// The UTC RFC 3339 form of Unix seconds, whole seconds (rounded down): 1767225600 ->
// "2026-01-01T00:00:00Z".
std::string FormatRfc3339(double unix_s);

}  // namespace gpufit

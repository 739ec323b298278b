// Kubernetes resource quantities ("500m", "16Gi", "1.5", "129e6") as `kubectl get -o json`
// prints them in requests and limits.
//
// Grammar (k8s.io/apimachinery/pkg/api/resource, Quantity); the number is read by fast_float:
//   quantity ::= signedNumber suffix
//   suffix   ::= binarySI (Ki Mi Gi Ti Pi Ei) | decimalSI (n u m "" k M G T P E)
//              | decimalExponent ("e" or "E" followed by a signed integer)
// "1E" is exa; "1E3" is 1000.
//
// Errors (kInvalidArgument) quote the text: empty, malformed, unknown suffix, not finite.
#pragma once

#include <string_view>

#include "gpufit/core/result.h"
#include "gpufit/core/units.h"

namespace gpufit {

// The quantity in base units (cores for cpu, bytes for memory, a count for devices).
Result<double> ParseQuantity(std::string_view text);

// CPU in millicores, rounded up as Kubernetes does (1m is its smallest CPU unit).
// Errors also for negative values and for 2^63 millicores or more (Kubernetes keeps an int64).
Result<MilliCpu> CpuQuantity(std::string_view text);

// Memory in MiB: a request rounded up to whole MiB, a capacity (a node's capacity or
// allocatable) rounded down, so that neither rounding lets more onto a node than fits.
// Errors also for negative values and for 2^63 bytes (8 EiB) or more.
enum class MemoryRounding { kUp, kDown };
Result<MiB> MemoryQuantity(std::string_view text, MemoryRounding rounding = MemoryRounding::kUp);

// A device count (nvidia.com/gpu, nvidia.com/mig-1g.10gb): a whole number >= 0.
Result<int> DeviceQuantity(std::string_view text);

}  // namespace gpufit

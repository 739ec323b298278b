// Units live in the type: integers that know their unit, so MiB cannot be added to
// millicores. Raw numbers at the edges (CSV columns, JSON fields, CLI flags) carry the
// unit in their name: `_mib`, `_milli`, `_s`, `_usd`.
#pragma once

#include <chrono>
#include <cstdint>

namespace gpufit {

template <class Tag>
struct Quantity {
  std::int64_t value = 0;
  constexpr auto operator<=>(const Quantity&) const = default;
  constexpr Quantity operator+(Quantity o) const { return {value + o.value}; }
  constexpr Quantity operator-(Quantity o) const { return {value - o.value}; }
  constexpr Quantity& operator+=(Quantity o) {
    value += o.value;
    return *this;
  }
};

using MiB = Quantity<struct MiBTag>;            // host and GPU memory, 2^20 bytes
using MilliCpu = Quantity<struct MilliCpuTag>;  // 1000 = one core (Kubernetes millicores)
using GpuMilli = Quantity<struct GpuMilliTag>;  // 1000 = one whole GPU

constexpr std::int64_t kBytesPerMiB = 1024 * 1024;
constexpr MiB MiBFromBytes(std::int64_t bytes) { return {bytes / kBytesPerMiB}; }

// Seconds of (trace or simulated) time; library code never reads the wall clock.
using Seconds = std::chrono::duration<double>;

// Money. A double is fine: USD figures are estimates reported, not ledgers.
struct Usd {
  double value = 0;
  constexpr auto operator<=>(const Usd&) const = default;
};

constexpr double kHoursPerMonth = 730.0;  // 8760 h / 12, the cloud providers' billing month

}  // namespace gpufit

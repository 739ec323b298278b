// What interrupts a training job: spot reclaims (with advance notice), hardware failures,
// and per-node events known by time (explicit preemption times, maintenance windows).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpufit/core/units.h"
#include "gpufit/model/training_job.h"

namespace gpufit {

// Reclaims of spot capacity for one GPU model: a Poisson process per node.
struct SpotMarket {
  double interruptions_per_hour = 0;                               // per node, >= 0
  Seconds notice{120};                                             // advance warning: AWS 120 s, GCP and Azure 30 s
  std::string basis = "none given: spot assumed never reclaimed";  // how the rate was obtained (shown)
};

// Advance notice of each provider (../shared/reference/cloud_prices.yaml,
// spot_interruption: AWS "two minutes before", GKE 30 s graceful period, AKS 30 s).
inline constexpr Seconds kAwsSpotNotice{120};
inline constexpr Seconds kGcpSpotNotice{30};
inline constexpr Seconds kAzureSpotNotice{30};

// Default per-GPU hardware MTBF: Meta's Llama 3 report counts 419 unexpected interruptions
// in 54 days on 16,384 H100 GPUs (Dubey et al., "The Llama 3 Herd of Models", 2024,
// arXiv:2407.21783, section 3.3.4): 16,384 x 54 x 24 / 419 = 50,700 GPU-hours per
// interruption, rounded to 50,000.
inline constexpr double kDefaultGpuMtbfHours = 50000;

// The range a mean time between failures or interruptions (gpu_mtbf_h, mtbi_h) must be in,
// hours: from one hour (a GPU or instance lost more often is broken, not a rate to plan
// checkpoints for; at 1e-9 h the costs overflow to inf and NaN) to ten million hours (200
// times the 50,700 h per GPU above; more is not a measurement). kMtbfWhy says so in errors.
inline constexpr double kMinMtbfHours = 1;
inline constexpr double kMaxMtbfHours = 1e7;
inline constexpr std::string_view kMtbfWhy =
    "hours: below 1 h the hardware is broken, not failing at a rate; above 1e7 h is 200x any measured fleet";

// Per-node events known by time (the simulator's input; read from the workload file).
struct SpotReclaim {
  std::string node;
  Seconds at{0};  // the reclaim; the notice comes `notice` earlier
};

struct MaintenanceWindow {
  std::string node;
  Seconds start{0};
  Seconds duration{0};
  std::optional<Seconds> cordon_at;  // default: start - drain_grace
};

struct InterruptionModel {
  SpotMarket spot;                                      // any GPU model without its own entry
  std::map<std::string, SpotMarket> spot_by_gpu_model;  // keyed by GPU type
  double gpu_mtbf_hours = kDefaultGpuMtbfHours;         // hardware, per GPU, on any capacity; > 0
  Seconds emergency_margin{10};  // an emergency checkpoint must finish this long before the reclaim

  const SpotMarket& SpotFor(const std::string& gpu_model) const {
    const auto it = spot_by_gpu_model.find(gpu_model);
    return it == spot_by_gpu_model.end() ? spot : it->second;
  }
};

}  // namespace gpufit

#include "gpufit/optimize/memory_envelope.h"

#include <algorithm>
#include <cmath>

namespace gpufit {
namespace {

// Largest value of series[lo, hi) inside the pod's life, or -1 when the pod does not run there.
double PeakIn(const PodSeries& p, std::size_t lo, std::size_t hi) {
  const std::size_t a = std::max(lo, p.first), b = std::min(hi, p.last + 1);
  if (a >= b) return -1;
  return *std::max_element(p.fb_used_mib.begin() + static_cast<std::ptrdiff_t>(a),
                           p.fb_used_mib.begin() + static_cast<std::ptrdiff_t>(b));
}

}  // namespace

std::vector<double> PooledPeakSurprises(const Telemetry& telemetry, const std::vector<std::size_t>& pods) {
  return PooledPeakSurprises(telemetry, pods, telemetry.samples);
}

std::vector<double> PooledPeakSurprises(const Telemetry& telemetry, const std::vector<std::size_t>& pods,
                                        std::size_t end) {
  std::vector<double> out;
  end = std::min(end, telemetry.samples);
  if (end < 2) return out;
  const std::size_t mid = end / 2;
  for (std::size_t i : pods) {
    const PodSeries& p = telemetry.pods[i];
    const double earlier = PeakIn(p, 0, mid), later = PeakIn(p, mid, end);
    if (earlier < 0 || later < 0) continue;
    out.push_back(std::max(0.0, later - earlier));
    out.push_back(std::max(0.0, earlier - later));
  }
  std::sort(out.begin(), out.end());
  return out;
}

double SurpriseMargin(const std::vector<double>& surprises, double risk) {
  if (surprises.empty()) return 0;
  // Nearest rank: the smallest value with at least (1 - risk) of the values at or below it.
  const double n = static_cast<double>(surprises.size());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil((1 - risk) * n - 1e-9)));
  return surprises[std::min(rank, surprises.size()) - 1];
}

GroupMargin LearnGroupMargin(const std::vector<double>& surprises, double single, double risk, std::size_t max_size) {
  GroupMargin out;
  out.single_mib = single;
  out.per_pod_mib = kPerPodFloorMib;
  if (surprises.empty() || !(surprises.back() > 0)) return out;
  // Bins of width w, each surprise rounded up to its bin's upper edge.
  constexpr std::size_t kBins = 512;
  const double w = surprises.back() / static_cast<double>(kBins);
  std::vector<double> one(kBins + 1, 0.0);
  for (double v : surprises) one[static_cast<std::size_t>(std::ceil(v / w - 1e-9))] += 1.0;
  for (double& p : one) p /= static_cast<double>(surprises.size());
  const double level = 1 - std::max(risk, 1.0 / static_cast<double>(surprises.size()));
  std::vector<double> sum = one;
  for (std::size_t k = 2; k <= max_size; ++k) {
    std::vector<double> next(sum.size() + kBins, 0.0);
    for (std::size_t a = 0; a < sum.size(); ++a) {
      if (sum[a] == 0) continue;
      for (std::size_t b = 0; b <= kBins; ++b) next[a + b] += sum[a] * one[b];
    }
    sum = std::move(next);
    // The smallest bin edge with at least `level` of the mass at or below it.
    double cumulative = 0;
    std::size_t at = sum.size() - 1;
    for (std::size_t i = 0; i < sum.size(); ++i) {
      cumulative += sum[i];
      if (cumulative >= level - 1e-12) {
        at = i;
        break;
      }
    }
    const double margin = std::max(single, static_cast<double>(at) * w);
    out.measured_mib.push_back(margin);
    out.per_pod_mib = std::max(out.per_pod_mib, (margin - single) / static_cast<double>(k - 1));
  }
  return out;
}

ActiveDuty ActiveDutyOf(const PodSeries& pod) {
  ActiveDuty d;
  std::size_t active = 0;
  for (std::size_t t = pod.first; t <= pod.last && t < pod.gpu_util_pct.size(); ++t) {
    const float u = pod.gpu_util_pct[t];
    if (!(u > 0)) continue;
    d.p[static_cast<std::size_t>(std::clamp(std::ceil(u), 0.0f, 100.0f))] += 1;
    ++active;
  }
  if (active == 0) {
    d.p[0] = 1;
    return d;
  }
  for (double& v : d.p) v /= static_cast<double>(active);
  return d;
}

double CollisionProbabilityIfActive(const std::vector<const ActiveDuty*>& pods) {
  if (pods.size() < 2) return 0;
  // Distribution of the running sum over 0..100; mass above 100 leaves (it can only grow).
  std::array<double, 101> sum{};
  sum[0] = 1;
  double over = 0;
  for (const ActiveDuty* pod : pods) {
    std::array<double, 101> next{};
    for (std::size_t a = 0; a <= 100; ++a) {
      if (sum[a] == 0) continue;
      for (std::size_t b = 0; b <= 100; ++b) {
        if (pod->p[b] == 0) continue;
        const double m = sum[a] * pod->p[b];
        if (a + b > 100) {
          over += m;
        } else {
          next[a + b] += m;
        }
      }
    }
    sum = next;
  }
  return over;
}

}  // namespace gpufit

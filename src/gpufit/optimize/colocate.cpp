#include "gpufit/optimize/colocate.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <exception>
#include <numeric>
#include <random>
#include <thread>
#include <unordered_map>

#include "gpufit/optimize/memory_envelope.h"

namespace gpufit {
namespace {

// The packing instance: pods as time series, one GPU's capacity, the collision limit.
struct Instance {
  std::size_t samples = 0;
  double capacity_mib = 0;
  // Added to each pod's memory while it runs (ColocateOptions::per_pod_margin_mib), with
  // capacity_mib raised by the same: k live pods keep (k - 1) x per_pod_mib more free. Not in
  // `mem`, which points at the telemetry; peak_mib and min_running_mib include it.
  double per_pod_mib = 0;
  std::int64_t collision_limit = 0;
  std::vector<const float*> mem;   // per pod, `samples` values
  std::vector<const float*> util;  // per pod
  std::vector<std::size_t> first, last;
  std::vector<double> peak_mib, mean_mib;
  std::vector<double> min_running_mib;  // smallest memory inside the pod's life
  std::vector<std::size_t> peak_at;
  // Collisions if always active (memory_envelope.h): per pod, its active duty; empty when off.
  std::vector<ActiveDuty> active_duty;
  double max_collision_p = 1;
  // Per pod, its replica set (ColocateOptions::apart); empty when no pod has one.
  std::vector<int> apart;
  std::size_t max_pods = 0;  // ColocateOptions::max_pods_per_gpu; 0: no limit
};

// The sum series of the pods on one GPU and its penalty:
//   penalty = overflowing samples (each weighted 1 + overflow / capacity)
//           + max(0, collision samples - collision limit)
//           + samples x max(0, P(collision if always active) - its limit)
//           + samples x pairs of pods of one replica set (ColocateOptions::apart)
//           + samples x pods beyond max_pods_per_gpu.
// Zero penalty is exactly the co-location rule of colocate.h.
struct Gpu {
  std::vector<std::size_t> pods;
  std::vector<double> mem, util;
  double overflow = 0;
  std::int64_t collisions = 0;
  double peak_mib = 0;
  std::size_t peak_at = 0;  // a sample where mem == peak_mib
  double collision_p = 0;   // P(collision if always active), 0 when that rule is off
  std::int64_t together = 0;  // pairs of its pods of one replica set
};

// inv_cap = 1 / cap: a multiplication instead of a division in the innermost loops.
inline double OverflowAt(double m, double cap, double inv_cap) { return m > cap ? 1.0 + (m - cap) * inv_cap : 0.0; }

class Packer {
 public:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr std::int64_t kIterationOverhead = 1000;
  // The fixed cost of one Delta, SwapDelta or Rebuild, in sample evaluations, whatever the
  // pod's span: the call, and with collisions_if_active the memoized probability (a copy,
  // sort and hash of the group). Counted so that the budget bounds the time on telemetry
  // of few samples too: with 2 samples a call costs about 100 evaluations' time, not 2.
  static constexpr std::int64_t kCallOverhead = 100;
  // One pod's step of CollisionProbabilityIfActive: up to 101 x 101 multiply-adds.
  static constexpr std::int64_t kConvolutionEvaluations = 101 * 101;
  static constexpr std::size_t kMaxMemo = std::size_t{1} << 18;
  Packer(const Instance& in, std::uint64_t seed) : in_(in), rng_(seed) {}
  // A copy of `from` (its packing, counters and memo) that goes on with its own seed.
  Packer(const Packer& from, std::uint64_t seed) : Packer(from) { rng_.seed(seed); }

  double Penalty(const Gpu& g) const {
    return Penalty(g.overflow, g.collisions, g.collision_p, g.together + Beyond(g.pods.size()));
  }
  // `broken`: pairs of replicas of one set plus pods beyond the limit, each as bad as the whole
  // window colliding.
  // Pods beyond the limit on a GPU of `pods` pods, counted like pairs of replicas.
  std::int64_t Beyond(std::size_t pods) const {
    return in_.max_pods == 0 || pods <= in_.max_pods ? 0 : static_cast<std::int64_t>(pods - in_.max_pods);
  }
  double Penalty(double overflow, std::int64_t collisions, double collision_p, std::int64_t broken) const {
    return overflow + static_cast<double>(std::max<std::int64_t>(0, collisions - in_.collision_limit)) +
           static_cast<double>(in_.samples) *
               (std::max(0.0, collision_p - in_.max_collision_p) + static_cast<double>(broken));
  }

  // Pods of g other than `skip` in p's replica set.
  std::int64_t SameSet(const Gpu& g, std::size_t p, std::size_t skip = kNone) const {
    if (in_.apart.empty() || in_.apart[p] < 0) return 0;
    std::int64_t n = 0;
    for (std::size_t q : g.pods) n += q != p && q != skip && in_.apart[q] == in_.apart[p];
    return n;
  }

  // P(collision if always active) of a set of pods (any order); memoized, since the search
  // asks for the same small groups again and again.
  double CollisionP(std::vector<std::size_t> pods) {
    if (in_.active_duty.empty() || pods.size() < 2) return 0;
    std::sort(pods.begin(), pods.end());
    std::uint64_t key = 1469598103934665603ull;  // FNV-1a over the sorted ids
    for (std::size_t p : pods) key = (key ^ static_cast<std::uint64_t>(p)) * 1099511628211ull;
    // The memo is dropped when it grows past kMaxMemo groups: its memory stays bounded
    // (about 100 bytes a group) however long the search runs.
    if (collision_p_.size() >= kMaxMemo) collision_p_.clear();
    auto [it, fresh] = collision_p_.try_emplace(key);
    if (fresh || it->second.first != pods) {
      // A convolution of 101-point distributions per pod, counted in the budget.
      evaluations_ += kConvolutionEvaluations * static_cast<std::int64_t>(pods.size());
      std::vector<const ActiveDuty*> duty;
      for (std::size_t p : pods) duty.push_back(&in_.active_duty[p]);
      it->second = {pods, CollisionProbabilityIfActive(duty)};
    }
    return it->second.second;
  }
  double CollisionPWith(const Gpu& g, std::size_t p, double sign) {
    if (in_.active_duty.empty()) return 0;
    std::vector<std::size_t> pods = g.pods;
    if (sign > 0) {
      pods.push_back(p);
    } else {
      pods.erase(std::find(pods.begin(), pods.end(), p));
    }
    return CollisionP(std::move(pods));
  }
  double CollisionPSwapped(const Gpu& g, std::size_t out, std::size_t in) {
    if (in_.active_duty.empty()) return 0;
    std::vector<std::size_t> pods = g.pods;
    *std::find(pods.begin(), pods.end(), out) = in;
    return CollisionP(std::move(pods));
  }

  // Recomputes a GPU's series from its pods, summing in ascending pod order (as replay does).
  void Rebuild(Gpu& g) {
    evaluations_ += static_cast<std::int64_t>((g.pods.size() + 1) * in_.samples) + kCallOverhead;
    std::sort(g.pods.begin(), g.pods.end());
    g.mem.assign(in_.samples, 0.0);
    g.util.assign(in_.samples, 0.0);
    for (std::size_t p : g.pods) {
      for (std::size_t t = in_.first[p]; t <= in_.last[p]; ++t) {
        g.mem[t] += in_.mem[p][t] + in_.per_pod_mib;
        g.util[t] += in_.util[p][t];
      }
    }
    g.overflow = 0;
    g.collisions = 0;
    g.peak_mib = 0;
    g.peak_at = 0;
    g.collision_p = CollisionP(g.pods);
    g.together = 0;
    for (std::size_t p : g.pods) g.together += SameSet(g, p);
    g.together /= 2;
    for (std::size_t t = 0; t < in_.samples; ++t) {
      g.overflow += OverflowAt(g.mem[t], in_.capacity_mib, 1.0 / in_.capacity_mib);
      g.collisions += g.util[t] > 100.0;
      if (g.mem[t] > g.peak_mib) g.peak_mib = g.mem[t], g.peak_at = t;
    }
  }

  // Penalty change if pod p joins (sign = +1) or leaves (sign = -1) GPU g.
  // With `fits_only` (sign +1), a change already positive without the collision
  // probability is returned as is: adding a pod never lowers that probability, so the
  // true change is larger still, and its convolution is not needed to say "does not fit".
  double Delta(const Gpu& g, std::size_t p, double sign, bool fits_only = false) {
    const float* m = in_.mem[p];
    const float* u = in_.util[p];
    const double cap = in_.capacity_mib;
    const double inv_cap = 1.0 / cap;
    double d_over = 0;
    std::int64_t d_coll = 0;
    const bool memory_safe = sign > 0 && g.overflow == 0 && g.peak_mib + in_.peak_mib[p] <= cap;
    const double* gm = g.mem.data();
    const double* gu = g.util.data();
    const std::size_t lo = in_.first[p], hi = in_.last[p];
    for (std::size_t t = lo; t <= hi; ++t) {
      d_coll += static_cast<std::int64_t>(gu[t] + sign * u[t] > 100.0) - static_cast<std::int64_t>(gu[t] > 100.0);
    }
    if (!memory_safe) {
      const double add = in_.per_pod_mib;
      for (std::size_t t = lo; t <= hi; ++t)
        d_over += OverflowAt(gm[t] + sign * (m[t] + add), cap, inv_cap) - OverflowAt(gm[t], cap, inv_cap);
    }
    evaluations_ += static_cast<std::int64_t>(in_.last[p] - in_.first[p] + 1) + kCallOverhead;
    const std::int64_t broken = g.together + static_cast<std::int64_t>(sign) * SameSet(g, p) +
                                Beyond(sign > 0 ? g.pods.size() + 1 : g.pods.size() - 1);
    if (fits_only) {
      const double without_p = Penalty(g.overflow + d_over, g.collisions + d_coll, g.collision_p, broken) - Penalty(g);
      if (without_p > 0) return without_p;
    }
    return Penalty(g.overflow + d_over, g.collisions + d_coll, CollisionPWith(g, p, sign), broken) - Penalty(g);
  }

  // Penalty change of GPU g if pod `out` leaves it and pod `in` joins it.
  double SwapDelta(const Gpu& g, std::size_t out, std::size_t in) {
    const double cap = in_.capacity_mib;
    const double inv_cap = 1.0 / cap;
    double d_over = 0;
    std::int64_t d_coll = 0;
    const std::size_t lo = std::min(in_.first[out], in_.first[in]);
    const std::size_t hi = std::max(in_.last[out], in_.last[in]);
    const float* mo = in_.mem[out];
    const float* uo = in_.util[out];
    const float* mi = in_.mem[in];
    const float* ui = in_.util[in];
    const double* gm = g.mem.data();
    const double* gu = g.util.data();
    for (std::size_t t = lo; t <= hi; ++t) {
      const double u = gu[t] - uo[t] + ui[t];
      d_coll += static_cast<std::int64_t>(u > 100.0) - static_cast<std::int64_t>(gu[t] > 100.0);
    }
    // Each pod carries per_pod_mib while it runs (Instance::per_pod_mib).
    const double add = in_.per_pod_mib;
    const std::size_t fo = in_.first[out], lo_out = in_.last[out], fi = in_.first[in], li = in_.last[in];
    for (std::size_t t = lo; t <= hi; ++t) {
      const double m =
          gm[t] - (mo[t] + (t >= fo && t <= lo_out ? add : 0.0)) + (mi[t] + (t >= fi && t <= li ? add : 0.0));
      d_over += OverflowAt(m, cap, inv_cap) - OverflowAt(gm[t], cap, inv_cap);
    }
    evaluations_ += static_cast<std::int64_t>(hi - lo + 1) + kCallOverhead;
    const std::int64_t broken = g.together - SameSet(g, out) + SameSet(g, in, out) + Beyond(g.pods.size());
    return Penalty(g.overflow + d_over, g.collisions + d_coll, CollisionPSwapped(g, out, in), broken) - Penalty(g);
  }

  // Exact rule check of pod p joining a feasible GPU g, with cheap rejections first.
  bool Fits(const Gpu& g, std::size_t p) {
    if (SameSet(g, p) > 0 || Beyond(g.pods.size() + 1) > 0) return false;
    const double cap = in_.capacity_mib;
    if (g.mem[in_.peak_at[p]] + in_.peak_mib[p] > cap) return false;
    // At the GPU's own peak the pod adds at least its smallest running memory.
    if (g.peak_at >= in_.first[p] && g.peak_at <= in_.last[p] && g.peak_mib + in_.min_running_mib[p] > cap)
      return false;
    return Delta(g, p, +1, /*fits_only=*/true) <= 0;
  }

  // First-fit decreasing by peak memory, over the last kFirstFitWindow GPUs opened (all of
  // them up to that many): each pod costs at most that many rule checks, so the packing
  // takes pods x window checks, not pods x GPUs (on 100,000 pods, about 40,000 GPUs). Pods
  // come largest first, so GPUs older than the window are mostly full.
  static constexpr std::size_t kFirstFitWindow = 128;
  void FirstFitDecreasing(const std::vector<std::size_t>& pods) {
    std::vector<std::size_t> order = pods;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return in_.peak_mib[a] > in_.peak_mib[b]; });
    gpus_.clear();
    for (std::size_t p : order) {
      Gpu* home = nullptr;
      for (std::size_t k = gpus_.size() > kFirstFitWindow ? gpus_.size() - kFirstFitWindow : 0; k < gpus_.size(); ++k) {
        if (Fits(gpus_[k], p)) {
          home = &gpus_[k];
          break;
        }
      }
      if (home == nullptr) home = &gpus_.emplace_back();
      home->pods.push_back(p);
      Rebuild(*home);
    }
    first_fit_decreasing_gpus_ = gpus_.size();
  }
  std::size_t first_fit_decreasing_gpus() const { return first_fit_decreasing_gpus_; }

  // Tries to remove one GPU within `budget` evaluations; keeps the packing either way
  // (the previous one when it fails).
  bool EliminateOne(std::int64_t budget) {
    if (gpus_.size() <= 1) return false;
    std::vector<std::vector<std::size_t>> saved;  // memberships only: series are rebuilt
    for (const Gpu& g : gpus_) saved.push_back(g.pods);
    const std::int64_t stop = evaluations_ + budget;
    // The lightest GPU (by mean memory of its pods), with a random tie-break so a failed
    // attempt is followed by a different one.
    std::size_t victim = 0;
    double best = 1e300;
    std::uniform_real_distribution<double> jitter(0.0, 0.5);
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      double load = 0;
      for (std::size_t p : gpus_[g].pods) load += in_.mean_mib[p] / in_.capacity_mib;
      load += jitter(rng_);
      if (load < best) best = load, victim = g;
    }
    std::vector<std::size_t> orphans = gpus_[victim].pods;
    gpus_[victim] = std::move(gpus_.back());
    gpus_.pop_back();
    for (std::size_t p : orphans) {
      std::size_t target = 0;
      double best_delta = 1e300;
      for (std::size_t g = 0; g < gpus_.size(); ++g) {
        const double d = Delta(gpus_[g], p, +1);
        if (d < best_delta) best_delta = d, target = g;
      }
      gpus_[target].pods.push_back(p);
      Rebuild(gpus_[target]);
    }
    if (Repair(stop)) return true;
    gpus_.resize(saved.size());
    for (std::size_t g = 0; g < saved.size(); ++g) {
      std::sort(gpus_[g].pods.begin(), gpus_[g].pods.end());
      if (gpus_[g].pods != saved[g] || gpus_[g].mem.empty()) {
        gpus_[g].pods = saved[g];
        Rebuild(gpus_[g]);
      }
    }
    return false;
  }

  // Tabu min-conflicts search on pod moves until no GPU has a penalty.
  bool Repair(std::int64_t stop) {
    std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> tabu(in_.mem.size());
    std::uniform_int_distribution<int> tenure(4, 14);
    for (std::int64_t iter = 0;; ++iter) {
      std::vector<std::size_t> bad;
      double total = 0;
      for (std::size_t g = 0; g < gpus_.size(); ++g) {
        const double pen = Penalty(gpus_[g]);
        if (pen > 0) bad.push_back(g), total += pen;
      }
      if (bad.empty()) return true;
      if (evaluations_ >= stop) return false;
      evaluations_ += kIterationOverhead;  // bookkeeping, so tiny instances end in time
      const std::size_t from = bad[std::uniform_int_distribution<std::size_t>(0, bad.size() - 1)(rng_)];
      const std::vector<std::size_t> candidates = Candidates(from);
      double best_delta = 1e300;
      std::size_t best_pod = 0, best_to = 0, best_back = kNone;
      int ties = 0;
      auto consider = [&](double d, std::size_t p, std::size_t to, std::size_t back) {
        if (d < best_delta - 1e-12) {
          best_delta = d, best_pod = p, best_to = to, best_back = back, ties = 1;
        } else if (std::abs(d - best_delta) <= 1e-12 && std::uniform_int_distribution<int>(0, ties++)(rng_) == 0) {
          best_pod = p, best_to = to, best_back = back;
        }
      };
      auto is_tabu = [&](std::size_t p, std::size_t g) {
        return std::any_of(tabu[p].begin(), tabu[p].end(),
                           [&](const auto& e) { return e.first == g && e.second > iter; });
      };
      for (std::size_t p : gpus_[from].pods) {
        const double leave = Delta(gpus_[from], p, -1);
        for (std::size_t to : candidates) {
          if (is_tabu(p, to)) continue;
          consider(leave + Delta(gpus_[to], p, +1), p, to, kNone);
          // Swap: q of `to` goes back to `from`.
          for (std::size_t q : gpus_[to].pods) {
            if (is_tabu(q, from)) continue;
            // `to` cannot end below zero penalty: skip the second half when it cannot win.
            const double first_half = SwapDelta(gpus_[from], p, q);
            if (first_half - Penalty(gpus_[to]) >= best_delta) continue;
            consider(first_half + SwapDelta(gpus_[to], q, p), p, to, q);
          }
        }
      }
      if (best_delta >= 1e299) continue;
      Gpu& src = gpus_[from];
      src.pods.erase(std::find(src.pods.begin(), src.pods.end(), best_pod));
      Gpu& dst = gpus_[best_to];
      dst.pods.push_back(best_pod);
      if (best_back != kNone) {
        dst.pods.erase(std::find(dst.pods.begin(), dst.pods.end(), best_back));
        src.pods.push_back(best_back);
        std::erase_if(tabu[best_back], [&](const auto& e) { return e.second <= iter; });
        tabu[best_back].emplace_back(best_to, iter + tenure(rng_));
      }
      Rebuild(src);
      Rebuild(dst);
      auto& t = tabu[best_pod];
      std::erase_if(t, [&](const auto& e) { return e.second <= iter; });
      t.emplace_back(from, iter + tenure(rng_));
    }
  }

  // GPUs a pod of `from` may move to: all others, or a seeded sample of them when there
  // are many (keeps one iteration's cost bounded on large clusters).
  std::vector<std::size_t> Candidates(std::size_t from) {
    constexpr std::size_t kMaxCandidates = 96;
    std::vector<std::size_t> all;
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      if (g != from) all.push_back(g);
    }
    if (all.size() <= kMaxCandidates) return all;
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(kMaxCandidates);
    return all;
  }

  const std::vector<Gpu>& gpus() const { return gpus_; }
  std::size_t used_gpus() const {
    return static_cast<std::size_t>(
        std::count_if(gpus_.begin(), gpus_.end(), [](const Gpu& g) { return !g.pods.empty(); }));
  }
  std::int64_t evaluations() const { return evaluations_; }

 private:
  const Instance& in_;
  std::mt19937_64 rng_;
  std::vector<Gpu> gpus_;
  std::int64_t evaluations_ = 0;
  std::size_t first_fit_decreasing_gpus_ = 0;
  std::unordered_map<std::uint64_t, std::pair<std::vector<std::size_t>, double>> collision_p_;
};

constexpr std::int64_t kAttemptUnit = 100'000'000;

// The Luby sequence 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ... (k >= 1).
std::int64_t Luby(std::int64_t k) {
  std::int64_t size = 1, power = 1;
  while (size < k) size = 2 * size + 1, power *= 2;
  while (size != k) {
    size = (size - 1) / 2;
    power /= 2;
    if (k > size) k -= size;
  }
  return power;
}

// Bin elimination from the packer's packing until `budget` evaluations are spent or only
// `stop_at` GPUs are left.
// Restarts follow the Luby sequence (Luby, Sinclair, Zuckerman 1993): attempt k gets
// luby(k) x kAttemptUnit evaluations, which copes with the heavy-tailed time a repair takes.
void Improve(Packer& packer, std::int64_t budget, std::size_t stop_at) {
  const std::int64_t base = packer.evaluations();
  for (std::int64_t k = 1; packer.gpus().size() > stop_at; ++k) {
    const std::int64_t before = packer.evaluations();
    const std::int64_t left = budget - (before - base);
    if (left <= 0) break;
    if (packer.EliminateOne(std::min(Luby(k) * kAttemptUnit, left))) {
      k = 0;
    } else if (packer.evaluations() == before) {
      break;  // nothing left to try (a single GPU)
    }
  }
}

}  // namespace

std::int64_t CollisionLimit(std::size_t samples, double max_collision_share) {
  return static_cast<std::int64_t>(std::floor(max_collision_share * static_cast<double>(samples) + 1e-9));
}

Colocation Colocate(const Telemetry& telemetry, const ColocateOptions& options) {
  assert(options.max_collision_share >= 0 && options.max_collision_share <= 1);
  assert(options.gpu_memory > options.reserve && options.reserve.value >= 0 && options.memory_margin_mib >= 0 &&
         options.per_pod_margin_mib >= 0);
  Instance in;
  in.samples = telemetry.samples;
  // The group margin memory_margin + (k - 1) x per_pod_margin: each pod counts per_pod_margin
  // more while it runs and the line rises by one per_pod_margin, so a group of k live pods
  // keeps exactly that free (fewer live pods at a sample, less kept: they cannot all surprise).
  const double per_pod = options.per_pod_margin_mib;
  in.capacity_mib =
      static_cast<double>((options.gpu_memory - options.reserve).value) - options.memory_margin_mib + per_pod;
  in.per_pod_mib = per_pod;
  in.max_pods = options.max_pods_per_gpu;
  in.max_collision_p = options.max_collision_share;
  in.collision_limit = CollisionLimit(telemetry.samples, options.max_collision_share);
  Colocation out;
  out.collision_limit_samples = in.collision_limit;
  std::vector<std::size_t> packable;
  std::vector<bool> excluded(telemetry.pods.size(), false);
  for (std::size_t i : options.excluded)
    if (i < excluded.size()) excluded[i] = true;
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i) {
    const PodSeries& p = telemetry.pods[i];
    const std::vector<float>& fb = p.fb_used_mib;
    in.mem.push_back(fb.data());
    in.util.push_back(p.gpu_util_pct.data());
    in.first.push_back(p.first);
    in.last.push_back(p.last);
    const auto peak = std::max_element(fb.begin(), fb.end());
    in.peak_mib.push_back(*peak + per_pod);
    in.peak_at.push_back(static_cast<std::size_t>(peak - fb.begin()));
    in.min_running_mib.push_back(*std::min_element(fb.begin() + static_cast<std::ptrdiff_t>(p.first),
                                                   fb.begin() + static_cast<std::ptrdiff_t>(p.last) + 1) +
                                 per_pod);
    in.mean_mib.push_back(std::accumulate(fb.begin(), fb.end(), 0.0) /
                          static_cast<double>(std::max<std::size_t>(1, fb.size())));
    if (options.collisions_if_active) in.active_duty.push_back(ActiveDutyOf(p));
    if (!options.apart.empty()) in.apart.push_back(i < options.apart.size() ? options.apart[i] : -1);
    if (excluded[i]) continue;
    if (in.peak_mib.back() > in.capacity_mib) {
      out.too_big.push_back(i);
    } else {
      packable.push_back(i);
    }
  }
  // First-fit decreasing once (it draws nothing: every thread used to repeat the same
  // packing), then independent searches from copies of it, one per thread with its own seed;
  // the fewest GPUs wins (ties: the lower seed), so the result does not depend on thread timing.
  const unsigned threads = std::max(1u, options.threads);
  std::vector<Packer> packers;
  packers.reserve(threads);  // packers[0] is copied below: no reallocation
  packers.emplace_back(in, options.seed);
  packers[0].FirstFitDecreasing(packable);
  for (unsigned k = 1; k < threads; ++k) packers.emplace_back(packers[0], options.seed + k);
  std::vector<std::thread> workers;
  std::vector<std::exception_ptr> failures(threads);
  for (unsigned k = 1; k < threads; ++k) {
    workers.emplace_back([&, k] {
      try {
        Improve(packers[k], options.search_budget, options.stop_at_gpus);
      } catch (...) {
        failures[k] = std::current_exception();  // e.g. bad_alloc: rethrown to the caller below
      }
    });
  }
  try {
    Improve(packers[0], options.search_budget, options.stop_at_gpus);
  } catch (...) {
    failures[0] = std::current_exception();
  }
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  const Packer* best = &packers[0];
  for (const Packer& p : packers) {
    if (p.used_gpus() < best->used_gpus()) best = &p;
    out.evaluations += p.evaluations();
  }
  out.first_fit_decreasing_gpus = packers[0].first_fit_decreasing_gpus();
  for (const Gpu& g : best->gpus()) {
    if (!g.pods.empty()) out.groups.push_back(g.pods);
  }
  std::sort(out.groups.begin(), out.groups.end());
  return out;
}

}  // namespace gpufit

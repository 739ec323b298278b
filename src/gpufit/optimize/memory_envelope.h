// Envelopes that hold on data the plan did not see: how much memory to keep free on a GPU
// for its pods' future peaks, and how often pods' duty cycles would collide were they all
// busy at once.
//
// Memory surprise (MiB). A pod's peak over a later window often exceeds its peak over an
// earlier one of the same length (GenTD26 halves: later / earlier peak median 0.85, p90
// 1.17, max 1.55; issue 16). One pod's history is short, so the surprises are pooled over
// pods: split the fitted window [0, samples) at its middle sample m; for every pod running
// in both parts, surprise = |peak([m, samples)) - peak([0, m))|, in both directions of time
// (a stationary pod is as likely to peak earlier as later: the two are exchangeable). The
// margin is the nearest-rank (1 - risk) quantile of the pooled surprises, risk in [0, 1):
// with risk 0 the largest surprise any pod showed. Reason: the packer sums each pod's
// observed memory time-aligned and keeps `margin` free on each GPU, so a GPU overflows out
// of sample only when one of its pods outgrows its own past by more than any pod did in the
// fitted data (two pods surprising on one GPU at one sample is the rarer second order).
//
// Duty collisions "as if always active". How often a pod is busy shifts with the hour and
// with traffic (GenTD26: busy in 59% of the first half's samples, 9% of the second's), but
// how busy it is while it runs stays (p99 of the nonzero samples 37-45% vs 24-30%). So each
// pod's duty cycle is modelled by its distribution over its active samples (duty > 0; a
// pod never active is always 0), pods independent, and a group is judged by
// P(sum of duty > 100%): the share of samples the group would collide in were every pod
// active at every sample. Duty values are rounded up to whole percent (1% bins, 0..100).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

// Pooled absolute peak surprises (MiB, ascending) of `pods` (indices into telemetry.pods)
// between the two halves of the window, two per pod running in both halves (see above).
// Empty when fewer than 2 samples or no pod runs in both halves.
std::vector<double> PooledPeakSurprises(const Telemetry& telemetry, const std::vector<std::size_t>& pods);
// The same over the samples [0, end) alone, split at end / 2 (a margin learned from the
// earlier part of a window, for a check on the later part).
std::vector<double> PooledPeakSurprises(const Telemetry& telemetry, const std::vector<std::size_t>& pods,
                                        std::size_t end);

// Nearest-rank (1 - risk) quantile of `surprises` (ascending), risk in [0, 1); 0 if empty.
double SurpriseMargin(const std::vector<double>& surprises, double risk);

// Group margin (MiB): what a GPU shared by k pods keeps free, margin(k) = single + (k - 1) x
// per_pod. One pod's margin covers one pod surprising; a shared GPU must also cover several of
// its pods surprising at once. The pods' observed surprises are resampled k at a time: the
// distribution of the sum of k independent draws from the pooled surprises (exact, by
// convolution on bins of at most 1/512 of the largest surprise, each rounded up), and
// margin_k is its quantile at 1 - max(risk, 1/n), n the pooled surprises: with risk 0, the
// level at which the single-pod pool's largest value sits (one value in n), so that k pods
// surprising together are covered as often as one pod is by the largest surprise.
// per_pod is the smallest slope that covers every size measured (k = 2 .. max_size) above
// the single margin, max over k of (margin_k - single) / (k - 1), and is extrapolated
// linearly beyond (the quantile of a sum of independent draws grows more slowly than k, so
// the line is the safe side); never below kPerPodFloorMib.
//
// Measured alternative, not used: drawing random k-subsets of pods and taking the surprise of
// their time-aligned sum, which also sees peaks coinciding. On GenTD26 it puts pairs at a
// 27 GB margin against 19.6 GB for one pod, which turned the whole-window A100 plan from 73
// GPUs into 107 while the plans without it held on every cut from 30% on (issue 37's note).
//
// kPerPodFloorMib: a shared GPU is never planned 100% full. Each process on a GPU holds a
// CUDA context (a few hundred MiB, more as kernels load lazily) and a caching allocator grows
// in blocks (PyTorch: 2 MiB small blocks, 20 MiB large segments, allocations rounded up);
// neither shows in a pod's telemetry before it happens. 512 MiB per extra pod covers one
// context and a few segments.
inline constexpr double kPerPodFloorMib = 512;

struct GroupMargin {
  double single_mib = 0;             // one pod's margin: SurpriseMargin of the pooled surprises
  double per_pod_mib = 0;            // added per pod beyond the first
  std::vector<double> measured_mib;  // margin_k, k = 2 .. (index + 2)
  double For(std::size_t pods) const {
    return pods == 0 ? 0.0 : single_mib + static_cast<double>(pods - 1) * per_pod_mib;
  }
};

// The group margin from the pooled surprises (ascending, PooledPeakSurprises) and the single
// margin already learned from them. No surprises: per_pod is the floor.
GroupMargin LearnGroupMargin(const std::vector<double>& surprises, double single, double risk,
                             std::size_t max_size = 8);

// A pod's duty cycle while active: probability of each whole percent 0..100.
struct ActiveDuty {
  std::array<double, 101> p{};  // sums to 1
};
ActiveDuty ActiveDutyOf(const PodSeries& pod);

// P(sum over `pods` of independent draws > 100); 0 for fewer than 2 pods.
double CollisionProbabilityIfActive(const std::vector<const ActiveDuty*>& pods);

}  // namespace gpufit

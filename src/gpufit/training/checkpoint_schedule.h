// One run of a job on one node, as a timeline: compute tau, write a checkpoint (delta),
// and again, until the work is done; the last segment (shorter when the work is not a
// multiple of tau) also ends with a checkpoint, which is the job's output. A job without
// checkpoints is one segment of all its remaining work with delta = 0.
//
// The simulator and the drain planner both read a running job through this one type, so
// "what is committed at time t" has one answer.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>

#include "gpufit/core/units.h"
#include "gpufit/model/training_job.h"

namespace gpufit {

struct CheckpointSchedule {
  Seconds compute_start{0};  // when compute began on this node (after any restore)
  Seconds committed{0};      // work saved in the checkpoint it started from
  Seconds work{0};           // the job's total failure-free work
  Seconds tau{0};            // compute between checkpoints (> 0)
  Seconds delta{0};          // checkpoint write time

  // A run of `job` computing from compute_start with `committed` work saved, checkpointing
  // every tau; a job without checkpoints is one segment of all its remaining work.
  static CheckpointSchedule ForRun(const TrainingJob& job, Seconds compute_start, Seconds committed, Seconds tau) {
    const bool none = job.checkpointing == Checkpointing::kNone;
    return {.compute_start = compute_start,
            .committed = committed,
            .work = job.work,
            .tau = none ? job.work - committed : tau,
            .delta = none ? Seconds{0} : job.checkpoint_write};
  }

  Seconds Remaining() const { return work - committed; }
  std::int64_t Segments() const {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(Remaining() / tau - 1e-9)));
  }
  Seconds Period() const { return tau + delta; }
  Seconds Finish() const { return compute_start + Remaining() + static_cast<double>(Segments()) * delta; }

  // Index of the segment that time t falls in (0 .. Segments()-1), for t >= compute_start.
  std::int64_t SegmentAt(Seconds t) const {
    const double k = std::floor((t - compute_start) / Period());
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(k), 0, Segments() - 1);
  }
  // Compute length of segment k (the last one may be shorter).
  Seconds SegmentWork(std::int64_t k) const {
    return k < Segments() - 1 ? tau : Remaining() - static_cast<double>(Segments() - 1) * tau;
  }
  // End of segment k's checkpoint.
  Seconds CheckpointEnd(std::int64_t k) const {
    return k < Segments() - 1 ? compute_start + static_cast<double>(k + 1) * Period() : Finish();
  }

  // Work saved in a checkpoint by time t.
  Seconds CommittedAt(Seconds t) const {
    if (t >= Finish()) return work;
    const std::int64_t k = SegmentAt(t);
    return committed + static_cast<double>(k) * tau;
  }
  // Work computed by time t, saved or not.
  Seconds ComputedAt(Seconds t) const {
    if (t >= Finish()) return work;
    const std::int64_t k = SegmentAt(t);
    const Seconds into = t - compute_start - static_cast<double>(k) * Period();
    return committed + static_cast<double>(k) * tau + std::clamp(into, Seconds{0}, SegmentWork(k));
  }
  // Work an interruption at t throws away.
  Seconds LostAt(Seconds t) const { return ComputedAt(t) - CommittedAt(t); }
  // The first checkpoint that ends at or after t (Finish() at the latest).
  Seconds NextCheckpointEnd(Seconds t) const {
    if (t <= compute_start) return CheckpointEnd(0);
    const std::int64_t k = SegmentAt(t);
    const Seconds prev = compute_start + static_cast<double>(k) * Period();
    return (k > 0 && t <= prev) ? prev : CheckpointEnd(k);
  }
  // The last checkpoint that ends at or before t, or compute_start when none has yet.
  Seconds LastCheckpointEnd(Seconds t) const {
    if (t >= Finish()) return Finish();
    return compute_start + static_cast<double>(SegmentAt(t)) * Period();
  }
};

}  // namespace gpufit

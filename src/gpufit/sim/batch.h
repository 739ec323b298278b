// Many simulation runs (policies x seeds) over one prepared trace, in parallel, and their
// comparison: mean and standard deviation over seeds per policy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/sim/engine.h"

namespace gpufit {

// Runs every (policy, seed) pair on up to `threads` threads (0: one per core). The result
// is ordered policy by policy, seeds in the given order. Errors: the first failing run's.
Result<std::vector<RunResult>> RunBatch(const SimInput& input, const std::vector<std::string>& policies,
                                        const std::vector<std::uint64_t>& seeds, const SimOptions& options,
                                        unsigned threads = 0);

// Mean and sample standard deviation (n - 1; 0 for a single value).
struct Spread {
  double mean = 0;
  double sd = 0;
};
Spread SpreadOf(const std::vector<double>& values);

struct PolicySummary {
  std::string policy;
  std::vector<const RunResult*> runs;  // one per seed
  Spread alloc_ratio, unallocated_gpus, failed_pods;
  std::optional<Spread> frag_rate_at_90;  // over the runs whose arrivals reached 90%; none if no run did
};

// Groups runs by policy, in first-appearance order.
std::vector<PolicySummary> Summarize(const std::vector<RunResult>& runs);

inline constexpr std::uint64_t kMaxSeeds = 10000;

// Parses "42-51", "42,43,50" or "7" into seeds. Errors: kInvalidArgument (malformed, a
// range going down, more than kMaxSeeds seeds, a seed twice).
Result<std::vector<std::uint64_t>> ParseSeeds(const std::string& text);

}  // namespace gpufit

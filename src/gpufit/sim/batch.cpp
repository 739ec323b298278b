#include "gpufit/sim/batch.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

namespace gpufit {

Result<std::vector<RunResult>> RunBatch(const SimInput& input, const std::vector<std::string>& policies,
                                        const std::vector<std::uint64_t>& seeds, const SimOptions& options,
                                        unsigned threads) {
  const std::size_t jobs = policies.size() * seeds.size();
  std::vector<std::optional<RunResult>> out(jobs);
  std::optional<Error> first_error;
  std::mutex error_mutex;
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t j = next++; j < jobs; j = next++) {
      Result<RunResult> r = Internal("not run");
      try {
        r = Simulate(input, policies[j / seeds.size()], seeds[j % seeds.size()], options);
      } catch (const std::bad_alloc&) {
        r = Internal("out of memory in run {} of {} (fewer seeds or policies, or no --out)", j + 1, jobs);
      }
      if (r) {
        out[j] = std::move(*r);
      } else {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = r.error();
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(jobs, 1)));
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
  }
  if (first_error) return *first_error;
  std::vector<RunResult> results;
  for (std::optional<RunResult>& r : out) results.push_back(std::move(*r));
  return results;
}

Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return s;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  return s;
}

std::vector<PolicySummary> Summarize(const std::vector<RunResult>& runs) {
  std::vector<PolicySummary> out;
  for (const RunResult& r : runs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const PolicySummary& s) { return s.policy == r.policy; });
    if (it == out.end()) {
      it = out.insert(out.end(), PolicySummary{});
      it->policy = r.policy;
    }
    it->runs.push_back(&r);
  }
  for (PolicySummary& s : out) {
    std::vector<double> alloc, unalloc, frag, failed;
    for (const RunResult* r : s.runs) {
      alloc.push_back(r->alloc_ratio);
      unalloc.push_back(r->unallocated_gpus);
      if (r->frag_rate_at_90) frag.push_back(*r->frag_rate_at_90);
      failed.push_back(static_cast<double>(r->failed_pods));
    }
    s.alloc_ratio = SpreadOf(alloc);
    s.unallocated_gpus = SpreadOf(unalloc);
    if (!frag.empty()) s.frag_rate_at_90 = SpreadOf(frag);
    s.failed_pods = SpreadOf(failed);
  }
  return out;
}

namespace {
Result<std::uint64_t> ParseSeed(std::string_view t, const std::string& whole) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size())
    return InvalidArgument("--seeds '{}': expected whole numbers >= 0, as 42-51 or 1,2,3", whole);
  return v;
}
}  // namespace

Result<std::vector<std::uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<std::uint64_t> seeds;
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (const std::size_t dash = item.find('-'); dash != std::string_view::npos) {
      Result<std::uint64_t> lo = ParseSeed(item.substr(0, dash), text);
      if (!lo) return lo.error();
      Result<std::uint64_t> hi = ParseSeed(item.substr(dash + 1), text);
      if (!hi) return hi.error();
      if (*hi < *lo) return InvalidArgument("--seeds '{}': a range must go up", text);
      if (*hi - *lo >= kMaxSeeds) return InvalidArgument("--seeds '{}': at most {} seeds", text, kMaxSeeds);
      for (std::uint64_t s = *lo;; ++s) {
        seeds.push_back(s);
        if (s == *hi) break;
      }
    } else {
      Result<std::uint64_t> s = ParseSeed(item, text);
      if (!s) return s.error();
      seeds.push_back(*s);
    }
    if (seeds.size() > kMaxSeeds) return InvalidArgument("--seeds '{}': at most {} seeds", text, kMaxSeeds);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::vector<std::uint64_t> sorted = seeds;
  std::sort(sorted.begin(), sorted.end());
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
    return InvalidArgument("--seeds '{}': seed {} appears twice", text, *dup);
  return seeds;
}

}  // namespace gpufit

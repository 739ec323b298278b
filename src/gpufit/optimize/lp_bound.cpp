#include "gpufit/optimize/lp_bound.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cmath>
#include <coin/ClpSimplex.hpp>
#include <ctime>
#include <numeric>
#include <optional>
#include <set>

#include "gpufit/optimize/lower_bound.h"

namespace gpufit {
namespace {

// CPU seconds of the calling thread: the guard measures the bound's own work, so a busy
// machine does not cut it short.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

constexpr double kPricesOut = 1.0 + 1e-7;  // a group whose dual value exceeds this lowers the master
constexpr std::size_t kRowsPerRound = 8;   // memory rows the exact pricing adds per re-solve
constexpr std::size_t kGreedySeeds = 16;   // greedy groups grown from the best-priced pods
constexpr double kBoundPad = 1e-4;         // room for the tolerances CBC prunes nodes with

// The pods of the bound (local indices 0..n-1) and the relaxed rule: memory at every sample
// and the pairwise conflicts.
class Relaxation {
 public:
  Relaxation(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
             std::int64_t collision_limit)
      : telemetry_(telemetry), pods_(pods), capacity_(capacity_mib), conflict_(pods.size() * pods.size(), false) {
    for (std::size_t i = 0; i < pods.size(); ++i) {
      const PodSeries& p = Series(i);
      double peak = 0;
      for (std::size_t t = p.first; t <= p.last && t < p.fb_used_mib.size(); ++t)
        peak = std::max(peak, static_cast<double>(p.fb_used_mib[t]));
      peak_.push_back(peak);
      for (std::size_t j = 0; j < i; ++j) {
        const bool c = PodsConflict(p, Series(j), capacity_mib, collision_limit);
        conflict_[i * pods.size() + j] = conflict_[j * pods.size() + i] = c;
      }
    }
  }

  std::size_t size() const { return pods_.size(); }
  double peak(std::size_t i) const { return peak_[i]; }
  double capacity() const { return capacity_; }
  std::size_t samples() const { return telemetry_.samples; }
  bool Conflicts(std::size_t i, std::size_t j) const { return conflict_[i * pods_.size() + j]; }
  const PodSeries& Series(std::size_t i) const { return telemetry_.pods[pods_[i]]; }

  // Adds pod i's memory to `sum` when the group stays within capacity at every sample.
  bool TryAdd(std::size_t i, std::vector<double>& sum) const {
    const PodSeries& p = Series(i);
    const std::size_t end = std::min(p.last + 1, p.fb_used_mib.size());
    for (std::size_t t = p.first; t < end; ++t) {
      if (sum[t] + p.fb_used_mib[t] > capacity_) return false;
    }
    for (std::size_t t = p.first; t < end; ++t) sum[t] += p.fb_used_mib[t];
    return true;
  }

  // Up to `most` samples where the group's memory exceeds capacity, the largest excess first.
  std::vector<std::size_t> OverflowingSamples(const std::vector<std::size_t>& group, std::size_t most) const {
    std::vector<double> sum(samples(), 0.0);
    for (std::size_t i : group) {
      const PodSeries& p = Series(i);
      for (std::size_t t = p.first; t <= p.last && t < p.fb_used_mib.size(); ++t) sum[t] += p.fb_used_mib[t];
    }
    std::vector<std::size_t> over;
    for (std::size_t t = 0; t < sum.size(); ++t) {
      if (sum[t] > capacity_) over.push_back(t);
    }
    std::sort(over.begin(), over.end(), [&](std::size_t a, std::size_t b) { return sum[a] > sum[b]; });
    if (over.size() > most) over.resize(most);
    return over;
  }

  bool Feasible(const std::vector<std::size_t>& group) const {
    for (std::size_t a = 0; a < group.size(); ++a) {
      for (std::size_t b = a + 1; b < group.size(); ++b) {
        if (Conflicts(group[a], group[b])) return false;
      }
    }
    return OverflowingSamples(group, 1).empty();
  }

 private:
  const Telemetry& telemetry_;
  const std::vector<std::size_t>& pods_;
  double capacity_;
  std::vector<bool> conflict_;
  std::vector<double> peak_;
};

double Value(const std::vector<std::size_t>& group, const std::vector<double>& pi) {
  double v = 0;
  for (std::size_t i : group) v += pi[i];
  return v;
}

// Greedy groups in a few orders (by dual, by dual per MiB of peak, and the latter from every
// of the kGreedySeeds best-priced pods as a seed); those that price out, best first, distinct.
std::vector<std::vector<std::size_t>> GreedyPricing(const Relaxation& r, const std::vector<double>& pi) {
  std::vector<std::size_t> by_pi, by_density;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (pi[i] > 1e-12) by_pi.push_back(i);
  }
  by_density = by_pi;
  std::stable_sort(by_pi.begin(), by_pi.end(), [&](std::size_t a, std::size_t b) { return pi[a] > pi[b]; });
  std::stable_sort(by_density.begin(), by_density.end(), [&](std::size_t a, std::size_t b) {
    return pi[a] * std::max(r.peak(b), 1.0) > pi[b] * std::max(r.peak(a), 1.0);
  });
  std::set<std::vector<std::size_t>> found;
  std::vector<double> sum(r.samples());
  auto grow = [&](std::optional<std::size_t> seed, const std::vector<std::size_t>& order) {
    std::fill(sum.begin(), sum.end(), 0.0);
    std::vector<std::size_t> group;
    if (seed) {
      if (!r.TryAdd(*seed, sum)) return;
      group.push_back(*seed);
    }
    for (std::size_t i : order) {
      if (seed && i == *seed) continue;
      if (std::any_of(group.begin(), group.end(), [&](std::size_t g) { return r.Conflicts(g, i); })) continue;
      if (r.TryAdd(i, sum)) group.push_back(i);
    }
    std::sort(group.begin(), group.end());
    if (Value(group, pi) > kPricesOut) found.insert(group);
  };
  grow(std::nullopt, by_pi);
  grow(std::nullopt, by_density);
  for (std::size_t k = 0; k < std::min<std::size_t>(by_pi.size(), kGreedySeeds); ++k) grow(by_pi[k], by_density);
  std::vector<std::vector<std::size_t>> out(found.begin(), found.end());
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) { return Value(a, pi) > Value(b, pi); });
  return out;
}

// The conflict pairs among `vars` as cliques (x(K) <= 1 per clique K, indices into vars):
// every pair is in some clique, and a clique row is stronger than its pairs' rows.
std::vector<std::vector<int>> CliqueCover(const Relaxation& r, const std::vector<std::size_t>& vars) {
  const std::size_t n = vars.size();
  std::vector<bool> covered(n * n, false);
  std::vector<std::vector<int>> cliques;
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (covered[a * n + b] || !r.Conflicts(vars[a], vars[b])) continue;
      std::vector<std::size_t> clique = {a, b};
      // Grow greedily, preferring vertices that cover pairs not yet covered.
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t c = 0; c < n; ++c) {
          if (std::find(clique.begin(), clique.end(), c) != clique.end()) continue;
          if (!std::all_of(clique.begin(), clique.end(), [&](std::size_t m) { return r.Conflicts(vars[m], vars[c]); }))
            continue;
          const bool new_pair = std::any_of(clique.begin(), clique.end(), [&](std::size_t m) {
            return !covered[std::min(m, c) * n + std::max(m, c)];
          });
          if (pass == 1 || new_pair) clique.push_back(c);
        }
      }
      for (std::size_t x : clique) {
        for (std::size_t y : clique) {
          if (x < y) covered[x * n + y] = true;
        }
      }
      cliques.emplace_back(clique.begin(), clique.end());
    }
  }
  return cliques;
}

// The `most` samples where the pods of `vars` hold the most memory together.
std::vector<std::size_t> HeaviestSamples(const Relaxation& r, const std::vector<std::size_t>& vars, std::size_t most) {
  std::vector<double> sum(r.samples(), 0.0);
  for (std::size_t v : vars) {
    const PodSeries& p = r.Series(v);
    for (std::size_t t = p.first; t <= p.last && t < p.fb_used_mib.size(); ++t) sum[t] += p.fb_used_mib[t];
  }
  std::vector<std::size_t> order(sum.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return sum[a] > sum[b]; });
  if (order.size() > most) order.resize(most);
  return order;
}

struct ExactPricing {
  double upper = 0;                              // >= max_S pi(S) over the relaxation (CBC's proven bound)
  double padded = 0;                             // upper with room for CBC's tolerances: what the bound divides by
  bool proven = false;                           // upper is the optimum
  std::vector<std::size_t> group;                // the best group found that keeps every sample's memory (may be empty)
  std::vector<std::vector<std::size_t>> others;  // more groups that price out, found on the way
};

// max pi(S) as a 0/1 program: clique rows x(K) <= 1 over the conflicting pairs and memory rows
// at samples, the latter added while the answer overflows some sample. Rows left out only
// raise the bound.
ExactPricing ExactPrice(const Relaxation& r, const std::vector<double>& pi, std::vector<std::size_t>& sample_rows,
                        const LpBoundOptions& options, double seconds_left) {
  const double start = ThreadCpuSeconds();
  std::vector<std::size_t> vars;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (pi[i] > 1e-12) vars.push_back(i);
  }
  ExactPricing out;
  if (vars.empty()) {
    out.proven = true;
    return out;
  }
  const std::vector<std::vector<int>> cliques = CliqueCover(r, vars);
  if (sample_rows.empty()) sample_rows = HeaviestSamples(r, vars, kRowsPerRound);
  while (true) {
    Cbc_Model* model = Cbc_newModel();
    for (std::size_t v : vars) Cbc_addCol(model, "", 0.0, 1.0, -pi[v], 1, 0, nullptr, nullptr);  // min -pi x
    for (const std::vector<int>& clique : cliques) {
      const std::vector<double> ones(clique.size(), 1.0);
      Cbc_addRow(model, "", static_cast<int>(clique.size()), clique.data(), ones.data(), 'L', 1.0);
    }
    for (std::size_t t : sample_rows) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (std::size_t a = 0; a < vars.size(); ++a) {
        const PodSeries& p = r.Series(vars[a]);
        if (t < p.first || t > p.last || t >= p.fb_used_mib.size() || p.fb_used_mib[t] <= 0) continue;
        cols.push_back(static_cast<int>(a));
        coefs.push_back(p.fb_used_mib[t]);
      }
      if (!cols.empty())
        Cbc_addRow(model, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), 'L', r.capacity());
    }
    Cbc_setLogLevel(model, 0);
    Cbc_setMaximumNodes(model, options.max_pricing_nodes);
    const double spent = (ThreadCpuSeconds() - start);
    Cbc_setMaximumSeconds(model, std::max(0.05, seconds_left - spent));
    Cbc_solve(model);
    out.upper = -Cbc_getBestPossibleObjValue(model);
    out.proven = Cbc_isProvenOptimal(model) != 0;
    auto group_of = [&](const double* x) {
      std::vector<std::size_t> g;
      for (std::size_t a = 0; x && a < vars.size(); ++a) {
        if (x[a] > 0.5) g.push_back(vars[a]);
      }
      return g;
    };
    std::vector<std::size_t> group = group_of(Cbc_getColSolution(model));
    // The other solutions CBC met on the way: groups too, when they keep every sample.
    for (int k = 0; k < Cbc_numberSavedSolutions(model); ++k) {
      std::vector<std::size_t> g = group_of(Cbc_savedSolution(model, k));
      if (g != group && Value(g, pi) > kPricesOut && r.OverflowingSamples(g, 1).empty())
        out.others.push_back(std::move(g));
    }
    Cbc_deleteModel(model);
    // Every single pod is a group, and all of them together bound every group: a "bound"
    // outside [max pi_i, sum pi_i] (CBC's value when it stopped before having one, about
    // -1e50) is no bound, and sum pi_i is used. CBC prunes nodes that could improve on its
    // best by less than its tolerances, so its bound is padded by kBoundPad.
    const double all = Value(vars, pi), largest = *std::max_element(pi.begin(), pi.end());
    if (!std::isfinite(out.upper) || out.upper < largest - 1e-9 || out.upper > all) out.upper = all;
    out.padded = std::min(all, out.upper * (1 + 1e-6) + kBoundPad);
    const std::vector<std::size_t> over = r.OverflowingSamples(group, kRowsPerRound);
    if (over.empty()) {
      out.group = std::move(group);
      return out;
    }
    const double spent_now = (ThreadCpuSeconds() - start);
    if (sample_rows.size() >= static_cast<std::size_t>(options.max_sample_rows) || spent_now >= seconds_left) {
      out.proven = false;  // the answer overflows a sample: not a group, and the bound stays
      return out;
    }
    sample_rows.insert(sample_rows.end(), over.begin(), over.end());
  }
}

}  // namespace

LpBound ColumnGenerationBound(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
                              std::int64_t collision_limit, const std::vector<std::vector<std::size_t>>& groups,
                              const LpBoundOptions& options) {
  LpBound out;
  if (pods.empty()) {
    out.converged = true;
    return out;
  }
  const double start = ThreadCpuSeconds();
  const Relaxation r(telemetry, pods, capacity_mib, collision_limit);
  const std::size_t n = pods.size();

  ClpSimplex master;
  master.setLogLevel(0);
  master.resize(static_cast<int>(n), 0);
  for (std::size_t i = 0; i < n; ++i) {
    master.setRowLower(static_cast<int>(i), 1.0);
    master.setRowUpper(static_cast<int>(i), COIN_DBL_MAX);
  }
  std::set<std::vector<std::size_t>> columns;
  auto add_column = [&](const std::vector<std::size_t>& group) {
    if (group.empty() || !columns.insert(group).second) return false;
    std::vector<int> rows(group.begin(), group.end());
    const std::vector<double> ones(group.size(), 1.0);
    master.addColumn(static_cast<int>(rows.size()), rows.data(), ones.data(), 0.0, COIN_DBL_MAX, 1.0);
    return true;
  };
  for (std::size_t i = 0; i < n; ++i) add_column({i});
  std::vector<std::size_t> local(telemetry.pods.size(), n);  // telemetry index -> local index
  for (std::size_t i = 0; i < n; ++i) local[pods[i]] = i;
  for (const std::vector<std::size_t>& g : groups) {
    std::vector<std::size_t> group;
    for (std::size_t p : g) {
      if (p < local.size() && local[p] < n) group.push_back(local[p]);
    }
    std::sort(group.begin(), group.end());
    group.erase(std::unique(group.begin(), group.end()), group.end());
    if (r.Feasible(group)) add_column(group);
  }

  std::vector<std::size_t> sample_rows;
  std::vector<double> pi(n);
  auto out_of_time = [&] {  // the wall-clock guard; the last third is kept for the final bound
    return (ThreadCpuSeconds() - start) > options.max_seconds * 2 / 3;
  };
  int iterations = 0;  // master solves
  // The duals of the master as it stands, and whether a bound was taken from them.
  auto solve_master = [&] {
    master.primal();
    ++iterations;
    const double* dual = master.dualRowSolution();
    for (std::size_t i = 0; i < n; ++i) pi[i] = dual[i] > 1e-12 ? dual[i] : 0.0;  // as the pricing sees them
  };
  auto bound = [&] {  // Farley's bound from the current duals; true when they prove the LP optimum
    const double left = options.max_seconds - (ThreadCpuSeconds() - start);
    const ExactPricing exact = ExactPrice(r, pi, sample_rows, options, left);
    const double sum_pi = std::accumulate(pi.begin(), pi.end(), 0.0);
    out.lp_value = std::max(out.lp_value, sum_pi / std::max(1.0, exact.padded));
    out.converged = exact.proven && exact.upper <= kPricesOut;
    return exact;
  };
  bool bounded = false;
  while (iterations < options.max_iterations && !out_of_time()) {
    solve_master();
    bounded = false;
    // Greedy groups that price out lower the master; no bound from them.
    bool added = false;
    for (const std::vector<std::size_t>& g : GreedyPricing(r, pi)) added = add_column(g) || added;
    if (added) continue;
    const ExactPricing exact = bound();
    bounded = true;
    for (const std::vector<std::size_t>& g : exact.others) add_column(g);
    if (out.converged || exact.group.empty() || Value(exact.group, pi) <= kPricesOut || !add_column(exact.group)) break;
    bounded = false;  // the master changed
  }
  if (!bounded) {
    solve_master();
    bound();
  }
  out.seconds = (ThreadCpuSeconds() - start);
  out.gpus = static_cast<std::size_t>(std::max(0.0, std::ceil(out.lp_value - 1e-6)));
  return out;
}

}  // namespace gpufit

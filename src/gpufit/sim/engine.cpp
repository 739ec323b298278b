#include "gpufit/sim/engine.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <tuple>

#include "gpufit/placement/registry.h"
#include "gpufit/sim/arrivals.h"
#include "gpufit/sim/invariants.h"

namespace gpufit {
namespace {

// Cluster fragmentation kept up to date one node at a time.
class FragTracker {
 public:
  FragTracker(const ClusterState& cluster, const std::vector<TypicalPod>& target) : target_(target) {
    node_frag_.resize(cluster.nodes().size());
    for (const NodeState& n : cluster.nodes()) Update(n);
  }
  void Update(const NodeState& n) {
    double& f = node_frag_[static_cast<std::size_t>(n.id)];
    total_ -= f;
    f = FragMilli(NodeFree::Of(n), target_);
    total_ += f;
  }
  double total() const { return total_ > 0 ? total_ : 0; }

 private:
  const std::vector<TypicalPod>& target_;
  std::vector<double> node_frag_;
  double total_ = 0;
};

class Run {
 public:
  Run(const SimInput& input, Policy policy, std::uint64_t seed, const SimOptions& options)
      : input_(input),
        options_(options),
        cluster_(input.initial),
        policy_(std::move(policy)),
        rng_(seed),
        frag_(cluster_, *input.target) {
    // The simulator's random node names: ties go to the first in this order.
    policy_.SetNodeOrder(SeededNodeOrder(cluster_.nodes().size(), rng_));
    result_.policy = policy_.name();
    result_.seed = seed;
    result_.mode = options.mode;
  }

  Result<RunResult> Saturation() {
    const std::vector<std::size_t> order =
        SaturationArrivals(input_.pods, cluster_.gpu_capacity(), options_.inflation, rng_);
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::size_t pod = order[k];
      Arrive(pod);
      const bool placed = TryPlace(pod) == Outcome::kPlaced;
      if (!placed) {
        ++failed_;
        if (!result_.unallocated_gpus_at_first_failure) result_.unallocated_gpus_at_first_failure = Unallocated();
      }
      if (Result<void> ok = Check(); !ok) return ok.error();
      Record(std::nullopt);
      if (options_.keep_steps) {
        StepMetrics& s = result_.steps.back();
        s.pod = static_cast<std::int64_t>(pod);
        s.node = placed ? placed_.back().node : -1;
        s.gpus = placed ? placed_.back().gpus : 0;
      }
    }
    result_.alloc_ratio = AllocRatio();
    result_.unallocated_gpus = Unallocated();
    result_.cpu_alloc_ratio = CpuRatio();
    return Finish();
  }

  // Waiting pods are retried, in arrival order, after every departure. Only the departed
  // pod's node gained room since each waiting pod last failed (every waiting pod was tried
  // after the previous departure, and placements only take room; every filter is monotone
  // in free room), so a retry can only land there, and pods of one shape (the same
  // requests) that do not fit there now will not fit later in the same pass either. The
  // waiting pods are therefore kept in one queue per shape and a pass visits, in arrival
  // order, only the heads of shapes that fit the freed node: the same placements, in the
  // same order, with the same random draws (a policy draws none for a pod no node takes)
  // as retrying every waiting pod, at a cost per departure of the shapes waiting rather
  // than of the pods waiting times the nodes.
  Result<RunResult> Replay() {
    const std::vector<TraceEvent> events = ReplayEvents(input_.pods);
    std::vector<int> slot(input_.pods.size(), -1);  // index into placed_, or -1
    const std::vector<std::size_t> shape_of = Shapes();
    const std::size_t shapes = shape_of.empty() ? 0 : 1 + *std::max_element(shape_of.begin(), shape_of.end());
    std::vector<std::deque<std::size_t>> queue(shapes);       // waiting pods of each shape, by arrival
    std::vector<std::size_t> arrival(input_.pods.size(), 0);  // arrival order of each pod
    std::vector<bool> waiting(input_.pods.size(), false);
    std::vector<std::size_t> shapes_waiting;  // shapes that may have waiting pods, each once
    std::vector<bool> listed(shapes, false);  // in shapes_waiting
    std::int64_t waiting_count = 0;
    std::size_t arrivals = 0;
    auto head = [&](std::size_t shape) -> std::optional<std::size_t> {  // drops pods that left meanwhile
      std::deque<std::size_t>& q = queue[shape];
      while (!q.empty() && !waiting[q.front()]) q.pop_front();
      if (q.empty()) return std::nullopt;
      return q.front();
    };
    double weighted_alloc = 0, weighted_cpu = 0, last_t = events.empty() ? 0 : events.front().time.count();
    const double span = events.empty() ? 0 : events.back().time.count() - last_t;
    for (const TraceEvent& e : events) {
      const double t = e.time.count();
      weighted_alloc += AllocRatio() * (t - last_t);
      weighted_cpu += CpuRatio() * (t - last_t);
      last_t = t;
      if (e.arrival) {
        Arrive(e.pod);
        arrival[e.pod] = arrivals++;
        const Outcome o = TryPlace(e.pod);
        if (o == Outcome::kPlaced) {
          slot[e.pod] = static_cast<int>(placed_.size()) - 1;
        } else if (o == Outcome::kNever) {
          ++failed_;  // no node could ever take it: no point waiting
        } else {
          const std::size_t shape = shape_of[e.pod];
          queue[shape].push_back(e.pod);
          if (!listed[shape]) {
            shapes_waiting.push_back(shape);
            listed[shape] = true;
          }
          waiting[e.pod] = true;
          ++waiting_count;
        }
      } else if (slot[e.pod] >= 0) {
        const int freed = placed_[static_cast<std::size_t>(slot[e.pod])].node;
        Depart(static_cast<std::size_t>(slot[e.pod]), slot);
        slot[e.pod] = -1;
        // Heads of the shapes that fit the freed node, earliest arrival first.
        using Entry = std::pair<std::size_t, std::size_t>;  // arrival, shape
        std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
        auto offer = [&](std::size_t shape) {
          const std::optional<std::size_t> p = head(shape);
          if (p && policy_.Fits(input_.workloads[*p], cluster_.node(freed))) next.emplace(arrival[*p], shape);
        };
        std::erase_if(shapes_waiting, [&](std::size_t shape) {
          if (head(shape)) return false;
          listed[shape] = false;
          return true;
        });
        for (std::size_t shape : shapes_waiting) offer(shape);
        while (!next.empty()) {
          const std::size_t shape = next.top().second;
          next.pop();
          const std::size_t p = *head(shape);
          // The node may have filled since the head was offered: then no pod of this shape fits.
          if (!policy_.Fits(input_.workloads[p], cluster_.node(freed)) || TryPlace(p) != Outcome::kPlaced) continue;
          slot[p] = static_cast<int>(placed_.size()) - 1;
          waiting[p] = false;
          --waiting_count;
          offer(shape);
        }
      } else if (waiting[e.pod]) {
        waiting[e.pod] = false;  // left before it ever ran
        --waiting_count;
        ++failed_;
      }
      if (Result<void> ok = Check(); !ok) return ok.error();
      pending_ = waiting_count;
      Record(t);
    }
    failed_ += waiting_count;
    result_.alloc_ratio = span > 0 ? weighted_alloc / span : AllocRatio();
    result_.unallocated_gpus = (1.0 - result_.alloc_ratio) * cluster_.total_gpus();
    result_.cpu_alloc_ratio = span > 0 ? weighted_cpu / span : CpuRatio();
    return Finish();
  }

 private:
  // Shape ids: pods with equal requests (everything a filter reads) share one.
  std::vector<std::size_t> Shapes() const {
    std::map<std::tuple<std::int64_t, std::int64_t, int, std::int64_t, bool, std::uint64_t>, std::size_t> ids;
    std::vector<std::size_t> out;
    for (const Workload& w : input_.workloads) {
      const auto key = std::make_tuple(w.cpu.value, w.memory.value, w.gpu_count, w.gpu_per_gpu.value, w.any_model,
                                       w.any_model ? 0 : w.model_mask);
      out.push_back(ids.try_emplace(key, ids.size()).first->second);
    }
    return out;
  }

  double AllocRatio() const {
    return static_cast<double>(cluster_.gpu_allocated().value) / static_cast<double>(cluster_.gpu_capacity().value);
  }
  double CpuRatio() const {
    const double capacity = static_cast<double>(cluster_.cpu_capacity().value);
    return capacity > 0 ? static_cast<double>(cluster_.cpu_used().value) / capacity : 0;
  }
  double Unallocated() const {
    return static_cast<double>(cluster_.gpu_capacity().value - cluster_.gpu_allocated().value) / 1000.0;
  }

  void Arrive(std::size_t pod) {
    ++arrived_;
    arrived_gpu_ += input_.workloads[pod].TotalGpu().value;
  }

  enum class Outcome { kPlaced, kNotNow, kNever };
  Outcome TryPlace(std::size_t pod) {
    const Workload& w = input_.workloads[pod];
    const Policy::Decision d = policy_.Place(w, cluster_, rng_, /*explain=*/false);
    if (d.node < 0) return d.verdict.kind == Verdict::Kind::kNever ? Outcome::kNever : Outcome::kNotNow;
    cluster_.Place(d.node, w, d.gpus);
    frag_.Update(cluster_.node(d.node));
    placed_.push_back({d.node, w, d.gpus});
    owner_.push_back(pod);
    return Outcome::kPlaced;
  }

  // Removes placed_[k] by swapping the last placement into its slot.
  void Depart(std::size_t k, std::vector<int>& slot) {
    const PlacedPod p = placed_[k];
    cluster_.Remove(p.node, p.workload, p.gpus);
    frag_.Update(cluster_.node(p.node));
    placed_[k] = placed_.back();
    owner_[k] = owner_.back();
    slot[owner_[k]] = static_cast<int>(k);
    placed_.pop_back();
    owner_.pop_back();
  }

  Result<void> Check() const {
    if (!options_.check_invariants) return {};
    if (std::string broken = CheckInvariants(cluster_, placed_); !broken.empty())
      return Internal("invariant broken in policy '{}', seed {}: {}", policy_.name(), result_.seed, broken);
    return {};
  }

  void Record(std::optional<double> time) {
    const double capacity = static_cast<double>(cluster_.gpu_capacity().value);
    StepMetrics s;
    s.time_s = time;
    s.arrived_pods = arrived_;
    s.arrived_gpu_pct = 100.0 * static_cast<double>(arrived_gpu_) / capacity;
    s.alloc_ratio = AllocRatio();
    s.frag_milli = frag_.total();
    const double free = capacity - static_cast<double>(cluster_.gpu_allocated().value);
    s.frag_rate = free > 0 ? s.frag_milli / free : 0;
    s.running_pods = static_cast<std::int64_t>(placed_.size());
    s.pending_pods = pending_;
    s.failed_pods = failed_;
    if (!reached_90_ && s.arrived_gpu_pct >= 90.0) {
      reached_90_ = true;
      result_.frag_rate_at_90 = s.frag_rate;
    }
    if (options_.keep_steps) result_.steps.push_back(s);
  }

  Result<RunResult> Finish() {
    result_.pods_submitted = arrived_;
    result_.failed_pods = failed_;
    for (const NodeState& n : cluster_.nodes()) {
      if (n.gpu_count > 0 && n.gpu_free_total().value == 0) {
        result_.cpu_stranded += n.cpu_free();
        result_.memory_stranded += n.memory_free();
      }
    }
    return std::move(result_);
  }

  const SimInput& input_;
  const SimOptions& options_;
  ClusterState cluster_;
  Policy policy_;
  Rng rng_;
  FragTracker frag_;
  std::vector<PlacedPod> placed_;
  std::vector<std::size_t> owner_;  // trace index of placed_[k]
  std::int64_t arrived_ = 0, arrived_gpu_ = 0, failed_ = 0, pending_ = 0;
  bool reached_90_ = false;
  RunResult result_;
};

}  // namespace

Result<SimInput> PrepareSimulation(std::vector<NodeSpec> nodes, std::vector<PodSpec> pods, const SimOptions& options) {
  Result<ClusterState> cluster = ClusterState::FromSpecs(nodes);
  if (!cluster) return cluster.error();
  if (pods.empty()) return InvalidArgument("the pod list is empty");
  if (cluster->total_gpus() == 0) return InvalidArgument("the cluster has no GPUs");
  if (!(options.inflation >= 1.0) || options.inflation > 100.0)
    return InvalidArgument("--inflation must be between 1 and 100, got {}", options.inflation);
  if (options.mode == SimMode::kSaturation) {
    // Expected arrivals: the trace plus the GPU room up to the target over the mean request.
    double requested = 0;
    for (const PodSpec& p : pods) requested += static_cast<double>(p.TotalGpu().value);
    const double target = options.inflation * static_cast<double>(cluster->gpu_capacity().value);
    const double mean = requested / static_cast<double>(pods.size());
    constexpr double kMaxArrivals = 1e7;
    if (mean <= 0 || static_cast<double>(pods.size()) + (target - requested) / mean > kMaxArrivals)
      return InvalidArgument(
          "saturation would need more than {:.0f} arrivals: the pods ask for {:.0f} milli-GPU on average against {} "
          "GPUs x {} (use fewer nodes, a smaller --inflation, or --mode replay)",
          kMaxArrivals, mean, cluster->total_gpus(), options.inflation);
  }
  SimInput in{std::move(nodes), std::move(pods), std::move(*cluster), {}, nullptr, {}};
  for (const PodSpec& p : in.pods) in.workloads.push_back(in.initial.WorkloadFor(p));
  Result<Policy> probe = MakePolicy("first-fit", PolicyContext{});
  Rng unused(0);
  for (std::size_t i = 0; i < in.pods.size(); ++i) {
    const Policy::Decision d = probe->Place(in.workloads[i], in.initial, unused);
    if (d.node < 0) in.never_fit.push_back(in.pods[i].name + ": " + d.why);
  }
  in.target = std::make_shared<const std::vector<TypicalPod>>(TypicalPods(in.pods, in.initial, options.target));
  return in;
}

Result<RunResult> Simulate(const SimInput& input, std::string_view policy_name, std::uint64_t seed,
                           const SimOptions& options) {
  Result<Policy> policy = MakePolicy(policy_name, PolicyContext{input.target});
  if (!policy) return policy.error();
  return Simulate(input, std::move(*policy), seed, options);
}

Result<RunResult> Simulate(const SimInput& input, Policy policy, std::uint64_t seed, const SimOptions& options) {
  Run run(input, std::move(policy), seed, options);
  return options.mode == SimMode::kSaturation ? run.Saturation() : run.Replay();
}

}  // namespace gpufit

// A segment tree over positions 0..size-1 holding one int64 value each, for the placement
// index (placement/policy.h): per node-order position, a node's weighted score when it fits
// the pod, kNone when it does not. Each tree node keeps the maximum of its range and how
// many positions reach it, so the best score, the first position with a better score than
// a given one, and the k-th position holding the maximum of a suffix are found in
// O(log size) instead of a scan over every node. Set and these queries are O(log size);
// Assign is O(size). Memory: 2 * next_pow2(size) * 16 bytes. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace gpufit::internal {

class MaxCountTree {
 public:
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();  // below every real value
  static constexpr std::size_t kNpos = static_cast<std::size_t>(-1);

  explicit MaxCountTree(std::size_t size);

  std::size_t size() const { return size_; }
  std::size_t MemoryBytes() const { return nodes_.size() * sizeof(Node); }
  static std::size_t MemoryBytesFor(std::size_t size);

  // Every position at once: value_at(p) for p = 0..size()-1.
  template <class ValueAt>
  void Fill(ValueAt value_at) {
    for (std::size_t p = 0; p < size_; ++p) nodes_[leaves_ + p] = {value_at(p), 1};
    Rebuild();
  }
  void Set(std::size_t pos, std::int64_t value);
  std::int64_t Get(std::size_t pos) const { return nodes_[leaves_ + pos].max; }

  // The maximum over all positions (kNone when all are kNone).
  std::int64_t Max() const { return nodes_[1].max; }
  // The maximum over [from, to) and how many positions there hold it; {kNone, count} when
  // every value there is kNone, {kNone, 0} for an empty range.
  std::pair<std::int64_t, std::int64_t> MaxCount(std::size_t from, std::size_t to) const;
  // The first position >= from whose value is greater than `above`; kNpos when none.
  std::size_t FirstAbove(std::size_t from, std::int64_t above) const;
  // The k-th (0-based) position >= from whose value equals `value`, where `value` is the
  // maximum over [from, size()); kNpos when fewer than k + 1 positions hold it.
  std::size_t KthOfMax(std::size_t from, std::int64_t value, std::int64_t k) const;

 private:
  struct Node {
    std::int64_t max = kNone;
    std::int64_t count = 0;  // positions of the range holding max (kNone counts too)
  };
  static Node Combine(const Node& a, const Node& b);
  void Rebuild();  // every inner node from the leaves
  std::size_t FirstAbove(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::int64_t above) const;
  std::size_t KthOfMax(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::int64_t value,
                       std::int64_t& k) const;
  void MaxCount(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::size_t to, Node& acc) const;

  std::size_t size_ = 0;
  std::size_t leaves_ = 1;  // a power of two >= size_; leaf of position p is nodes_[leaves_ + p]
  std::vector<Node> nodes_;
};

}  // namespace gpufit::internal

#include "gpufit/placement/internal/max_count_tree.h"

#include <algorithm>

namespace gpufit::internal {

MaxCountTree::MaxCountTree(std::size_t size) : size_(size) {
  while (leaves_ < size_) leaves_ *= 2;
  nodes_.assign(2 * leaves_, Node{});
  // Padding past size() holds kNone with count 0, so it never counts as a position.
  for (std::size_t p = 0; p < size_; ++p) nodes_[leaves_ + p].count = 1;
  Rebuild();
}

MaxCountTree::Node MaxCountTree::Combine(const Node& a, const Node& b) {
  if (a.max > b.max) return a;
  if (b.max > a.max) return b;
  return {a.max, a.count + b.count};
}

void MaxCountTree::Rebuild() {
  for (std::size_t n = leaves_ - 1; n >= 1; --n) nodes_[n] = Combine(nodes_[2 * n], nodes_[2 * n + 1]);
}

std::size_t MaxCountTree::MemoryBytesFor(std::size_t size) {
  std::size_t leaves = 1;
  while (leaves < size) leaves *= 2;
  return 2 * leaves * sizeof(Node);
}

void MaxCountTree::Set(std::size_t pos, std::int64_t value) {
  std::size_t n = leaves_ + pos;
  if (nodes_[n].max == value) return;
  nodes_[n].max = value;
  for (n /= 2; n >= 1; n /= 2) nodes_[n] = Combine(nodes_[2 * n], nodes_[2 * n + 1]);
}

void MaxCountTree::MaxCount(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, std::size_t to,
                            Node& acc) const {
  if (hi <= from || to <= lo) return;
  if (from <= lo && hi <= to) {
    acc = acc.count == 0 ? nodes_[node] : Combine(acc, nodes_[node]);
    return;
  }
  const std::size_t mid = (lo + hi) / 2;
  MaxCount(2 * node, lo, mid, from, to, acc);
  MaxCount(2 * node + 1, mid, hi, from, to, acc);
}

std::pair<std::int64_t, std::int64_t> MaxCountTree::MaxCount(std::size_t from, std::size_t to) const {
  Node acc{kNone, 0};
  MaxCount(1, 0, leaves_, from, std::min(to, size_), acc);
  return {acc.max, acc.count};
}

std::size_t MaxCountTree::FirstAbove(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from,
                                     std::int64_t above) const {
  if (hi <= from || nodes_[node].max <= above) return kNpos;
  if (hi - lo == 1) return lo;
  const std::size_t mid = (lo + hi) / 2;
  const std::size_t left = FirstAbove(2 * node, lo, mid, from, above);
  return left != kNpos ? left : FirstAbove(2 * node + 1, mid, hi, from, above);
}

std::size_t MaxCountTree::FirstAbove(std::size_t from, std::int64_t above) const {
  const std::size_t p = FirstAbove(1, 0, leaves_, from, above);
  return p < size_ ? p : kNpos;
}

std::size_t MaxCountTree::KthOfMax(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from,
                                   std::int64_t value, std::int64_t& k) const {
  // A range inside the suffix holds nothing above `value`; one reaching before `from` may.
  if (hi <= from || nodes_[node].max < value) return kNpos;
  if (from <= lo) {
    if (nodes_[node].max != value) return kNpos;
    if (nodes_[node].count <= k) {
      k -= nodes_[node].count;
      return kNpos;
    }
  }
  if (hi - lo == 1) return lo;
  const std::size_t mid = (lo + hi) / 2;
  const std::size_t left = KthOfMax(2 * node, lo, mid, from, value, k);
  return left != kNpos ? left : KthOfMax(2 * node + 1, mid, hi, from, value, k);
}

std::size_t MaxCountTree::KthOfMax(std::size_t from, std::int64_t value, std::int64_t k) const {
  const std::size_t p = KthOfMax(1, 0, leaves_, from, value, k);
  return p < size_ ? p : kNpos;
}

}  // namespace gpufit::internal

// A seeded random number generator whose sequence is the same on every platform and
// compiler (std::uniform_int_distribution and std::shuffle are not), so a seed replays a
// simulation exactly.
//
// Generator: xoshiro256** 1.0 (Blackman and Vigna, "Scrambled linear pseudorandom number
// generators", ACM TOMS 2021), its state filled from the seed by SplitMix64 as the authors
// recommend. Bounded integers by rejection of the
// 2^64 mod n lowest draws, then modulo: unbiased. Not thread-safe; not for secrets.
#pragma once

#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace gpufit {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (std::uint64_t& s : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }

  std::uint64_t Next() {
    const std::uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, n), unbiased: draws below 2^64 mod n are rejected. Precondition: n > 0.
  // Uniform in [0, 1) with 53 random bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Exponential with the given rate (> 0): -ln(1 - U) / rate.
  double Exponential(double rate) { return -std::log1p(-Unit()) / rate; }

  std::uint64_t Below(std::uint64_t n) {
    assert(n > 0);
    const std::uint64_t threshold = (0 - n) % n;
    while (true) {
      const std::uint64_t r = Next();
      if (r >= threshold) return r % n;
    }
  }

  // Fisher-Yates shuffle (Knuth's Algorithm P), from the back.
  template <class T>
  void Shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  static std::uint64_t Rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> state_{};
};

}  // namespace gpufit

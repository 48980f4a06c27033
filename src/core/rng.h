// Rng: the one seeded random generator (xoshiro256**, seeded through splitmix64) used for
// initialisation, data and sampling. Its whole state is four 64-bit words that can be saved
// and restored, so a resumed run draws exactly what the uninterrupted run would have drawn.
#pragma once
#include <array>
#include <cstdint>

namespace sl {

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed = 0) { seed_with(seed); }
  void seed_with(uint64_t seed);

  uint64_t next_u64();
  double uniform();                   // [0, 1), 53 random bits
  float uniform(float lo, float hi);  // [lo, hi)
  double normal();                    // N(0, 1), Box-Muller without a cached spare
  float normal(float mean, float std) { return mean + std * static_cast<float>(normal()); }
  uint64_t below(uint64_t n);  // uniform integer in [0, n), unbiased
  double gamma(double shape);  // Gamma(shape, 1), Marsaglia-Tsang

  const State& state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

 private:
  State s_{};
};

}  // namespace sl

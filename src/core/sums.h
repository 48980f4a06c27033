// Sums over raw float spans accumulated in double, for the measurements and the optimizer's
// norms (gradient clipping, update norms, per-layer statistics).
#pragma once
#include <cstdint>

namespace sl {

// sum_i x[i]^2 over n floats, in double.
inline double squared_norm(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

}  // namespace sl

// Mask drawing for a training forward pass (see dropout.h).
#include "nn/dropout.h"

#include "core/ops.h"

namespace sl {

Tensor ForwardMode::dropout_mask(const Shape& shape) const {
  if (!rng_ || !(p_ > 0.0f)) return Tensor();
  Tensor m = Tensor::empty(shape);
  const float keep = 1.0f / (1.0f - p_);
  const double p = static_cast<double>(p_);
  float* d = m.data();
  for (int64_t i = 0; i < m.numel(); ++i) d[i] = rng_->uniform() < p ? 0.0f : keep;
  return m;
}

Tensor ForwardMode::dropout(const Tensor& x) const {
  Tensor m = dropout_mask(x.shape());
  return m.defined() ? mul(x, m) : x;
}

}  // namespace sl

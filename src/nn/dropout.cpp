// The dropout scope (one per thread, nested scopes restore the outer one) and mask drawing.
#include "nn/dropout.h"

#include "core/ops.h"

namespace sl {
namespace {
thread_local const DropoutScope* g_scope = nullptr;
}  // namespace

DropoutScope::DropoutScope(float p, Rng& rng) : outer_(g_scope), p_(p), rng_(&rng) {
  g_scope = this;
}
DropoutScope::~DropoutScope() { g_scope = outer_; }

Tensor dropout_mask(const Shape& shape) {
  if (!g_scope || !(g_scope->p_ > 0.0f)) return Tensor();
  Tensor m = Tensor::empty(shape);
  const float keep = 1.0f / (1.0f - g_scope->p_);
  const double p = g_scope->p_;
  float* d = m.data();
  for (int64_t i = 0; i < m.numel(); ++i) d[i] = g_scope->rng_->uniform() < p ? 0.0f : keep;
  return m;
}

Tensor dropout(const Tensor& x) {
  Tensor m = dropout_mask(x.shape());
  return m.defined() ? mul(x, m) : x;
}

}  // namespace sl

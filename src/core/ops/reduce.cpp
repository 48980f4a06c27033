// sum / mean: forward in double, backward spreads the scalar gradient (times 1/n for mean).
#include "core/ops/reduce.h"

#include "core/autograd.h"

namespace sl {
namespace {

Tensor reduce(const char* op, const Tensor& x, double factor) {
  double s = 0.0;
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x.data()[i]);
  Tensor y = Tensor::scalar(static_cast<float>(s * factor));
  if (needs_grad(x))
    attach(y, op, {x}, [x, n, factor](TensorImpl& o) {
      float* dx = grad_of(x);
      const float g = static_cast<float>(static_cast<double>(o.grad->data()[0]) * factor);
      for (int64_t i = 0; i < n; ++i) dx[i] += g;
    });
  return y;
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce("sum", x, 1.0); }
Tensor mean(const Tensor& x) {
  return reduce("mean", x, x.numel() ? 1.0 / static_cast<double>(x.numel()) : 0.0);
}

}  // namespace sl

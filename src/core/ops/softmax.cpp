// Numerically stable softmax (max subtracted), causal variant, and its backward.
#include "core/ops/softmax.h"

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "util/error.h"

namespace sl {

void softmax_forward(float* y, const float* x, int64_t rows, int64_t cols, bool causal) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const int64_t len = causal ? (r % cols) + 1 : cols;
    float mx = xr[0];
    for (int64_t j = 1; j < len; ++j) mx = xr[j] > mx ? xr[j] : mx;
    double s = 0.0;
    for (int64_t j = 0; j < len; ++j) {
      yr[j] = std::exp(xr[j] - mx);
      s += static_cast<double>(yr[j]);
    }
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t j = 0; j < len; ++j) yr[j] *= inv;
    for (int64_t j = len; j < cols; ++j) yr[j] = 0.0f;
  }
}

void softmax_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t cols,
                      bool causal) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * cols;
    const float* yr = y + r * cols;
    float* dxr = dx + r * cols;
    const int64_t len = causal ? (r % cols) + 1 : cols;
    float dot = 0.0f;
    for (int64_t j = 0; j < len; ++j) dot += dyr[j] * yr[j];
    for (int64_t j = 0; j < len; ++j) dxr[j] += yr[j] * (dyr[j] - dot);
  }
}

Tensor softmax(const Tensor& x, bool causal) {
  if (x.ndim() < 1 || x.size(-1) == 0)
    throw ShapeError("[softmax] needs a non-empty last dim, got " + x.shape().str());
  if (causal && (x.ndim() < 2 || x.size(-1) != x.size(-2)))
    throw ShapeError("[softmax] causal mask needs square (..., T, T) scores, got " +
                     x.shape().str());
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  Tensor y = Tensor::empty(x.shape());
  softmax_forward(y.data(), x.data(), rows, cols, causal);
  if (needs_grad(x))
    attach(y, causal ? "softmax_causal" : "softmax", {x}, [x, rows, cols, causal](TensorImpl& o) {
      softmax_backward(grad_of(x), o.grad->data(), o.data->data(), rows, cols, causal);
    });
  return y;
}

}  // namespace sl

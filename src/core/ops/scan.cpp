// The causal running mean and its backward. With C the uniform causal matrix (row t holds
// 1/(t+1) over columns 0..t):
//   forward:  y_t = (1/(t+1)) sum_{s<=t} x_s            (a cumulative sum, then a division)
//   backward: dx_s += sum_{t>=s} dy_t / (t+1)           (C^T dy: a reverse cumulative sum)
// Each (b, c) runs its sum in one fixed order (t ascending, or descending), in double.
#include "core/ops/scan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "util/error.h"

namespace sl {

void causal_mean_forward(float* y, const float* x, int64_t B, int64_t T, int64_t C) {
  std::vector<double> acc(static_cast<size_t>(C));
  for (int64_t b = 0; b < B; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t t = 0; t < T; ++t) {
      const float* xt = x + (b * T + t) * C;  // (C)
      float* yt = y + (b * T + t) * C;        // (C)
      const double inv = 1.0 / static_cast<double>(t + 1);
      for (int64_t c = 0; c < C; ++c) {
        acc[static_cast<size_t>(c)] += static_cast<double>(xt[c]);
        yt[c] = static_cast<float>(acc[static_cast<size_t>(c)] * inv);
      }
    }
  }
}

void causal_mean_backward(float* dx, const float* dy, int64_t B, int64_t T, int64_t C) {
  std::vector<double> acc(static_cast<size_t>(C));
  for (int64_t b = 0; b < B; ++b) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t t = T - 1; t >= 0; --t) {
      const float* gt = dy + (b * T + t) * C;  // (C)
      float* dxt = dx + (b * T + t) * C;       // (C)
      const double inv = 1.0 / static_cast<double>(t + 1);
      for (int64_t c = 0; c < C; ++c) {
        acc[static_cast<size_t>(c)] += static_cast<double>(gt[c]) * inv;
        dxt[c] += static_cast<float>(acc[static_cast<size_t>(c)]);
      }
    }
  }
}

Tensor causal_mean(const Tensor& x) {
  if (x.ndim() != 3) throw ShapeError("[causal_mean] needs x (B, T, C), got " + x.shape().str());
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  Tensor y = Tensor::empty(x.shape());
  causal_mean_forward(y.data(), x.data(), B, T, C);
  if (needs_grad(x))
    attach(y, "causal_mean", {x}, [x, B, T, C](TensorImpl& o) {
      causal_mean_backward(grad_of(x), o.grad->data(), B, T, C);
    });
  return y;
}

}  // namespace sl

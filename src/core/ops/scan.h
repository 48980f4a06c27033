// Prefix ops along time: the causal running mean y_t = mean_{s<=t} x_s of (B, T, C), which is
// the uniform causal attention matrix C (C_ts = 1/(t+1) for s <= t, else 0) applied to x
// without building the (T, T) matrix. Not here: other masks, weighted sums (core/ops/attention.h).
#pragma once
#include "core/tensor.h"

namespace sl {

// y (B, T, C) = the running mean over t of x (B, T, C), sums in double.
void causal_mean_forward(float* y, const float* x, int64_t B, int64_t T, int64_t C);
// dx (B, T, C) += C^T dy: dx_s = sum_{t>=s} dy_t / (t+1), a reverse cumulative sum; dy (B, T, C).
void causal_mean_backward(float* dx, const float* dy, int64_t B, int64_t T, int64_t C);

// x (B, T, C) -> (B, T, C).
Tensor causal_mean(const Tensor& x);

}  // namespace sl

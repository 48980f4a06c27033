// Softmax over the last dimension, optionally causal over the last two: for x (..., T, T),
// entry (i, j) with j > i gets probability exactly 0 (query i sees keys 0..i only).
#pragma once
#include "core/tensor.h"

namespace sl {

// Kernel pair over `rows` rows of `cols` entries. With causal, row r is query r % T (T = cols)
// and only its first (r % T) + 1 entries take part. Backward: dx += y * (dy - sum_j dy_j y_j).
void softmax_forward(float* y, const float* x, int64_t rows, int64_t cols, bool causal);
void softmax_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t cols,
                      bool causal);

Tensor softmax(const Tensor& x, bool causal = false);

}  // namespace sl

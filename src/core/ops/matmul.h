// Matrix products through sgemm, with transpose flags instead of transpose copies.
#pragma once
#include "core/tensor.h"

namespace sl {

// Kernel pair. C (M, N) = op(A) op(B); backward accumulates into dA, dB (either may be null).
// A is (M, K), or (K, M) when trans_a; B is (K, N), or (N, K) when trans_b.
void matmul_forward(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K,
                    bool trans_a, bool trans_b);
void matmul_backward(float* dA, float* dB, const float* dC, const float* A, const float* B,
                     int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b);

// (M, K) x (K, N) -> (M, N), 2-D only.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// Batched over leading dims: (..., M, K) x (..., K, N) -> (..., M, N); leading dims must match,
// e.g. attention's (B, NH, T, HS) x (B, NH, HS, T) via trans_b.
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// torch.nn.functional.linear: x (..., in), w (out, in), b (out) or undefined -> (..., out).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b);
// gelu(linear(x, w, b), tanh_approx) in one op: the bias and GELU run on each block of rows right
// after its product, while it is in cache, and backward applies GELU's gradient to a block of
// rows right before the product that reads it. The values are those of the two composed ops.
Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& b, bool tanh_approx = false);

}  // namespace sl

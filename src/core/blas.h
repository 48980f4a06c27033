// The one place that calls BLAS. Row-major single-precision GEMM on raw spans:
//   C (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C
// with op(X) = X or X^T; leading dimensions are those of contiguous row-major storage.
#pragma once
#include <cstdint>

namespace sl {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C);

// Threads OpenBLAS may use (0 = leave its default).
void blas_set_threads(int n);
int blas_get_threads();

}  // namespace sl

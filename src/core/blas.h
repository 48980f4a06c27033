// The one place that calls BLAS. Row-major single-precision GEMM on raw spans:
//   C (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C
// with op(X) = X or X^T; leading dimensions are those of contiguous row-major storage.
#pragma once
#include <cstdint>

namespace sl {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C);
// The same with explicit leading dimensions (row strides), for operands that are column blocks
// of wider row-major matrices (e.g. one head's q inside (T, 3C)).
void gemm_ld(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Threads OpenBLAS may use (0 = leave its default).
void blas_set_threads(int n);
int blas_get_threads();

// The one thread setting: OpenBLAS and the OpenMP loops of the non-BLAS kernels both use n
// threads. They never run at the same time (a kernel is either a gemm or an OpenMP loop), so
// they share the cores instead of oversubscribing them. n <= 0 leaves the defaults.
void set_num_threads(int n);
int num_threads();

}  // namespace sl

// The one place that calls BLAS. Row-major single-precision GEMM on raw spans:
//   C (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C
// with op(X) = X or X^T; leading dimensions are those of contiguous row-major storage.
#pragma once
#include <cstdint>
#include <string>

namespace sl {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C);
// The same with explicit leading dimensions (row strides), for operands that are column blocks
// of wider row-major matrices (e.g. one head's q inside (T, 3C)).
void gemm_ld(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
             int64_t ldc);

// C (M, N) = A (M, K) op(B) + beta C, with a prologue and an epilogue on each thread's block of
// rows that run on that thread right before and after its product, while its rows of C are in
// cache: before(ctx, lo, hi) may fill rows lo..hi of C (a bias the product adds to with beta 1),
// after(ctx, lo, hi) reads or rewrites them (an activation). The product is cut over the threads
// exactly as gemm_ld cuts it (so C holds gemm_ld's bits): by rows when M >= N, each thread's
// callbacks on its own rows; when C is wider than tall, by columns, with the callbacks on row
// blocks before and after the whole product. Either callback may be null. A is not transposed.
// bias (N), when given (beta 0): C = bias + A op(B), the bias written into each tile of C right
// before its product (the same sum as bias rows written first, then beta 1).
using RowBlockFn = void (*)(void* ctx, int64_t lo, int64_t hi);
void gemm_rows(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float beta, float* C, RowBlockFn before, RowBlockFn after, void* ctx,
               const float* bias = nullptr);

// Which library runs the products in this build ("OpenBLAS", or the libxsmm path), and the
// kernel family OpenBLAS picked for this CPU at load time (e.g. "Haswell", "Cooperlake"; set by
// OPENBLAS_CORETYPE): together with the thread count they fix a run's arithmetic.
std::string matmul_path();
std::string openblas_core();
// The clone of the SL_SIMD_CLONES loops (core/fastmath.h) that this CPU runs.
std::string simd_clone();
// `gemm` through OpenBLAS whatever the build's path (the reference ceiling of `stacklab bench`).
void gemm_openblas(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   const float* A, const float* B, float beta, float* C);
bool has_libxsmm();

// The same as set_num_threads (kept for callers that only think of BLAS); blas_get_threads is
// OpenBLAS's own count (1 when built with OpenMP).
void blas_set_threads(int n);
int blas_get_threads();

// The one thread setting (n <= 0 leaves the defaults). With OpenMP: n OpenMP threads run the
// non-BLAS kernels and share out large gemms block by block (core/blas.cpp), while OpenBLAS
// itself stays single-threaded, so the two pools never oversubscribe the cores. Without
// OpenMP: OpenBLAS gets n threads.
void set_num_threads(int n);
int num_threads();

}  // namespace sl

// cblas_sgemm behind a row-major interface, and the one thread pool.
//
// Threads: OpenMP is the only pool. OpenBLAS runs single-threaded (its pthread workers would
// otherwise spin right after each gemm while the OpenMP workers of the next kernel spin too:
// three busy threads on two cores). A gemm large enough to share is cut here instead, into one
// block of C per OpenMP thread (rows of C, or columns when C is wide), each block one
// single-threaded sgemm. Inside a parallel region (attention's per-head gemms) a gemm runs
// whole on the calling thread. Without OpenMP, OpenBLAS keeps its own threads.
#include "core/blas.h"

#include <cblas.h>

#include <algorithm>  // std::fill
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"

extern "C" {
// Provided by OpenBLAS; declared here because cblas.h from Debian's alternatives may not.
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace sl {
namespace {

// Below this many multiply-adds a gemm is not worth splitting.
constexpr double kSplitWork = 1 << 20;

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb),
              beta, C, static_cast<int>(ldc));
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C) {
  gemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

void gemm_ld(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  if (M == 0 || N == 0) return;
  if (K == 0 && beta == 0.0f) {  // C = 0 exactly, whatever C held (a fresh GradSlot may hold anything)
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
#ifdef _OPENMP
  static const bool blas_single = (openblas_set_num_threads(1), true);  // before the first gemm
  (void)blas_single;
  const int nt = omp_get_max_threads();
  if (nt > 1 && !omp_in_parallel() && static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) >= kSplitWork) {
    const bool by_rows = M >= N;
    const int64_t extent = by_rows ? M : N;
    const int64_t block = ((extent + nt - 1) / nt + 15) / 16 * 16;  // multiples of 16 rows / columns
#pragma omp parallel num_threads(nt)
    {
      const int64_t lo = omp_get_thread_num() * block;
      const int64_t hi = lo + block < extent ? lo + block : extent;
      if (lo < hi) {
        if (by_rows)  // rows lo..hi of C: rows of op(A) (columns of A when it is stored transposed)
          sgemm(trans_a, trans_b, hi - lo, N, K, alpha, A + (trans_a ? lo : lo * lda), lda, B, ldb, beta,
                C + lo * ldc, ldc);
        else  // columns lo..hi of C: columns of op(B) (rows of B when it is stored transposed)
          sgemm(trans_a, trans_b, M, hi - lo, K, alpha, A, lda, B + (trans_b ? lo * ldb : lo), ldb, beta, C + lo,
                ldc);
      }
    }
    return;
  }
#endif
  sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// With OpenMP the pool size is OpenMP's and OpenBLAS stays at one thread (gemm_ld splits).
void blas_set_threads(int n) { set_num_threads(n); }
int blas_get_threads() { return openblas_get_num_threads(); }

void set_num_threads(int n) {
  if (n <= 0) return;
#ifdef _OPENMP
  omp_set_num_threads(n);
  openblas_set_num_threads(1);
#else
  openblas_set_num_threads(n);
#endif
}

int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return blas_get_threads();
#endif
}

}  // namespace sl

// cblas_sgemm behind a row-major, contiguous-only interface.
#include "core/blas.h"

#include <cblas.h>
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

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  if (M == 0 || N == 0) return;
  const auto lda = static_cast<int>(trans_a ? M : K);
  const auto ldb = static_cast<int>(trans_b ? K : N);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, lda, B, ldb, beta, C,
              static_cast<int>(N));
}

void gemm_ld(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
             const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  if (M == 0 || N == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
              static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

void blas_set_threads(int n) {
  if (n > 0) openblas_set_num_threads(n);
}
int blas_get_threads() { return openblas_get_num_threads(); }

void set_num_threads(int n) {
  if (n <= 0) return;
  blas_set_threads(n);
#ifdef _OPENMP
  omp_set_num_threads(n);
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

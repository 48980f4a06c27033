// cblas_sgemm behind a row-major interface, and the one thread pool.
//
// Threads: OpenMP is the only pool. OpenBLAS runs single-threaded (its pthread workers would
// otherwise spin right after each gemm while the OpenMP workers of the next kernel spin too:
// three busy threads on two cores). A gemm large enough to share is cut here instead, into one
// block of C per OpenMP thread (rows of C, or columns when C is wide), each block one
// single-threaded sgemm. Inside a parallel region (attention's per-head gemms) a gemm runs
// whole on the calling thread. Without OpenMP, OpenBLAS keeps its own threads.
//
// Two paths (chosen when the build is configured, see `matmul_path()`): OpenBLAS for every
// product (the default, the reference), or with -DSTACKLAB_LIBXSMM=ON libxsmm's JIT kernels for
// the products its JIT covers and that measured faster than OpenBLAS on this project's shapes
// (`xsmm_covers`), OpenBLAS for the rest. The choice depends on the shape alone, never on a
// timing, so a run stays deterministic at a fixed thread count.
#include "core/blas.h"

#include <cblas.h>
#ifdef STACKLAB_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include <algorithm>  // std::fill
#include <string>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/error.h"
#include "core/profile.h"

extern "C" {
// Provided by OpenBLAS; declared here because cblas.h from Debian's alternatives may not.
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
}

namespace sl {
namespace {

// Below this many multiply-adds a gemm is not worth splitting.
constexpr double kSplitWork = 1 << 20;

#ifdef STACKLAB_HAVE_LIBXSMM
// libxsmm is column-major: the row-major C (M, N) = op(A) B is the column-major
// C^T (N, M) = B^T op(A)^T, so libxsmm's "a" is B (N x K, ld ldb) and its "b" is A, transposed
// when A is stored transposed (its TRANS_B flag). libxsmm 1.17's JIT has no transposed "a", so
// a row-major B^T (the forward of a Linear) stays with OpenBLAS. Measured single-threaded on this
// project's machine (AVX-512), libxsmm ran 113-118 GFLOP/s against OpenBLAS's 93-101 on the
// Linear shapes (512 x {64, 192, 256} x {64, 192, 256}) and the per-head products (64 x 16 x 64),
// but 35 against 93 on a transposed-A product with a small output and a long inner dimension
// (64 x 64 x 512: the dW of a 64 x 64 Linear); hence the output-size floor for transposed A.
constexpr int64_t kXsmmMinTransOut = 8192;

bool xsmm_covers(bool ta, bool tb, int64_t M, int64_t N, float alpha, float beta) {
  if (tb || alpha != 1.0f || (beta != 0.0f && beta != 1.0f) || M < 2 || N < 2) return false;
  return !ta || M * N >= kXsmmMinTransOut;
}

libxsmm_smmfunction xsmm_kernel(bool ta, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                                int64_t ldc, float beta) {
  static const bool initialised = (libxsmm_init(), true);
  (void)initialised;
  const int flags =
      (ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0) | (beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : 0);
  const libxsmm_blasint m = N, n = M, k = K, la = ldb, lb = lda, lc = ldc;
  const float one = 1.0f;
  return libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &one, &beta, &flags, nullptr);
}
#endif

void sgemm_leaf(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                bool openblas_only) {
#ifdef STACKLAB_HAVE_LIBXSMM
  if (!openblas_only && xsmm_covers(ta, tb, M, N, alpha, beta))
    if (const libxsmm_smmfunction f = xsmm_kernel(ta, M, N, K, lda, ldb, ldc, beta)) {
      f(B, A, C);
      return;
    }
  // B stored transposed (a Linear's forward, x w^T) has no JIT in libxsmm 1.17: op(B) (K, N) is
  // copied into this thread's scratch and the product runs untransposed. The copy is K N floats
  // against 2 M N K FLOPs (b3's forward: 87.6 ms per step in the libxsmm build before, 66.8
  // after; docs/benchmarks.md). No row threshold: which library runs a block of rows must not
  // depend on how gemm_split cut it. The scratch keeps the largest op(B) a thread has seen.
  if (!openblas_only && tb && !ta && xsmm_covers(false, false, M, N, alpha, beta))
    if (const libxsmm_smmfunction f = xsmm_kernel(false, M, N, K, lda, N, ldc, beta)) {
      thread_local std::vector<float> bt;  // (K, N)
      bt.resize(static_cast<size_t>(K * N));
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) bt[static_cast<size_t>(k * N + n)] = B[n * ldb + k];
      f(bt.data(), A, C);
      return;
    }
#else
  (void)openblas_only;
#endif
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

// The leaf product, timed when the op profile is on (core/profile.h).
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           bool openblas_only) {
  if (!op_profile::on()) {
    sgemm_leaf(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, openblas_only);
    return;
  }
  const int64_t t0 = op_profile::now_ns();
  sgemm_leaf(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, openblas_only);
  op_profile::add_sgemm_ns(op_profile::now_ns() - t0);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          const float* B, float beta, float* C) {
  gemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

namespace {

// Each thread's share of `extent` rows or columns of C: an equal part, rounded up to 16.
int64_t thread_block(int64_t extent, int nt) { return ((extent + nt - 1) / nt + 15) / 16 * 16; }

void gemm_split(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                int64_t ldc, bool openblas_only) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  if (M == 0 || N == 0) return;
  if (K == 0 &&
      beta == 0.0f) {  // C = 0 exactly, whatever C held (a fresh GradSlot may hold anything)
    for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
#ifdef _OPENMP
  static const bool blas_single = (openblas_set_num_threads(1), true);  // before the first gemm
  (void)blas_single;
  const int nt = omp_get_max_threads();
  if (nt > 1 && !omp_in_parallel() &&
      static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) >= kSplitWork) {
    const bool by_rows = M >= N;
    const int64_t extent = by_rows ? M : N;
    const int64_t block = thread_block(extent, nt);
#pragma omp parallel num_threads(nt)
    {
      const int64_t lo = omp_get_thread_num() * block;
      const int64_t hi = lo + block < extent ? lo + block : extent;
      if (lo < hi) {
        if (by_rows)  // rows lo..hi of C: rows of op(A) (columns of A when it is stored transposed)
          sgemm(trans_a, trans_b, hi - lo, N, K, alpha, A + (trans_a ? lo : lo * lda), lda, B, ldb,
                beta, C + lo * ldc, ldc, openblas_only);
        else  // columns lo..hi of C: columns of op(B) (rows of B when it is stored transposed)
          sgemm(trans_a, trans_b, M, hi - lo, K, alpha, A, lda, B + (trans_b ? lo * ldb : lo), ldb,
                beta, C + lo, ldc, openblas_only);
      }
    }
    return;
  }
#endif
  sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, openblas_only);
}

}  // namespace

void gemm_ld(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
             int64_t ldc) {
  gemm_split(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, false);
}

void gemm_rows(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float beta, float* C, RowBlockFn before, RowBlockFn after, void* ctx) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  if (M == 0 || N == 0) return;
  const int64_t lda = K, ldb = trans_b ? K : N;
  auto rows = [&](int64_t lo, int64_t hi) {  // prologue, product, epilogue of rows lo..hi
    if (before) before(ctx, lo, hi);
    gemm_split(false, trans_b, hi - lo, N, K, 1.0f, A + lo * lda, lda, B, ldb, beta, C + lo * N, N,
               false);  // whole on this thread inside the region below, else split as gemm_ld
    if (after) after(ctx, lo, hi);
  };
#ifdef _OPENMP
  const int nt = omp_get_max_threads();
  if (nt > 1 && !omp_in_parallel() &&
      static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) >= kSplitWork) {
    const int64_t block = thread_block(M, nt);
    if (M < N) {
      // gemm_ld cuts a wide C by columns; so does this product, so that its bits are gemm_ld's
      // (a cut by rows can change OpenBLAS's kernel, and so the rounding). The prologue and the
      // epilogue then run on row blocks before and after the whole product.
      if (before) before(ctx, 0, M);
      gemm_split(false, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, N, false);
      if (after) {
#pragma omp parallel num_threads(nt)
        {
          const int64_t lo = omp_get_thread_num() * block;
          const int64_t hi = lo + block < M ? lo + block : M;
          if (lo < hi) after(ctx, lo, hi);
        }
      }
      return;
    }
    // the rows gemm_ld would give each thread
#pragma omp parallel num_threads(nt)
    {
      const int64_t lo = omp_get_thread_num() * block;
      const int64_t hi = lo + block < M ? lo + block : M;
      if (lo < hi) rows(lo, hi);
    }
    return;
  }
#endif
  rows(0, M);
}

void gemm_openblas(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   const float* A, const float* B, float beta, float* C) {
  gemm_split(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N,
             true);
}

std::string matmul_path() {
#ifdef STACKLAB_HAVE_LIBXSMM
  return "libxsmm " + std::to_string(LIBXSMM_VERSION_MAJOR) + "." +
         std::to_string(LIBXSMM_VERSION_MINOR) + " JIT where it covers the shape, else OpenBLAS";
#else
  return "OpenBLAS";
#endif
}

bool has_libxsmm() {
#ifdef STACKLAB_HAVE_LIBXSMM
  return true;
#else
  return false;
#endif
}

std::string openblas_core() {
  const char* name = openblas_get_corename();
  return name ? name : "unknown";
}

std::string simd_clone() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX2__) && \
    !defined(STACKLAB_NO_SIMD_CLONES)
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4 (AVX-512)";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3 (AVX2)";
  return "x86-64 baseline (SSE2)";
#else
  return "none (one build for this target)";
#endif
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

// cblas_sgemm behind a row-major interface, and the one thread pool.
//
// Threads: OpenMP is the only pool. OpenBLAS runs single-threaded (its pthread workers would
// otherwise spin right after each gemm while the OpenMP workers of the next kernel spin too:
// three busy threads on two cores). A gemm large enough to share is cut here instead, into one
// block of C per OpenMP thread (rows of C, or columns when C is wide), each block one
// single-threaded sgemm. Inside a parallel region (attention's per-head gemms) a gemm runs
// whole on the calling thread. Without OpenMP, OpenBLAS keeps its own threads.
//
// Two paths (chosen when the build is configured, see `matmul_path()`): libxsmm's JIT kernels on
// tiles of each product (the default), OpenBLAS for a product scaled by alpha; or, with
// -DSTACKLAB_LIBXSMM=OFF, OpenBLAS for every product. The choice depends on the shape and the
// scalars alone, never on a timing, so a run stays deterministic at a fixed thread count.
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

#include "core/simd.h"
#include "util/error.h"
#include "util/profile.h"

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
// libxsmm is column-major: the row-major C (M, N) = A (M, K) B (K, N) is the column-major
// C^T (N, M) = B^T A^T, so libxsmm's "a" is B (N x K, ld ldb) and its "b" is A (K x M, ld lda).
// Its JIT kernels are fast on small tiles and slow on long inner dimensions and on transposed
// operands (measured on an Intel Xeon model 207, 1 thread: 19-38 GFLOP/s on the dW products
// 768 x 256 x 2048 and 64 x 64 x 512 with its transpose flag, against 60-100 after a copy;
// docs/benchmarks.md). So a product runs as tiles of C (kTileM, kTileN), each accumulated over
// blocks of kTileK of the inner dimension, every operand untransposed: a transposed A or B is
// first copied into this thread's scratch. Each element of C is still one sum over k = 0..K-1 in
// order (a tile's kernel starts from C for every block after the first), whatever the tiling, so
// a block of rows gives the same bits whichever thread runs it.
constexpr int64_t kTileM = 64, kTileN = 256, kTileK = 256;

libxsmm_smmfunction xsmm_kernel(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                                int64_t ldc, float beta) {
  static const bool initialised = (libxsmm_init(), true);
  (void)initialised;
  const int flags = beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : 0;
  const libxsmm_blasint m = N, n = M, k = K, la = ldb, lb = lda, lc = ldc;
  const float one = 1.0f;
  return libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &one, &beta, &flags, nullptr);
}

// Y (cols, rows) = X^T, X (rows, cols) with row stride ldx: full 16 x 16 blocks transposed in
// registers (core/simd.h), the edges element by element. A copy: no rounding.
SL_SIMD_CLONES void transpose_into(const float* X, int64_t rows, int64_t cols, int64_t ldx,
                                   float* Y) {
  const int64_t rows16 = rows / kLanes * kLanes, cols16 = cols / kLanes * kLanes;
  for (int64_t r0 = 0; r0 < rows16; r0 += kLanes)
    for (int64_t c0 = 0; c0 < cols16; c0 += kLanes) {
      v16 blk[kLanes];
      for (int64_t i = 0; i < kLanes; ++i) blk[i] = vload(X + (r0 + i) * ldx + c0);
      transpose16(blk);
      for (int64_t i = 0; i < kLanes; ++i) vstore(Y + (c0 + i) * rows + r0, blk[i]);
    }
  for (int64_t r = 0; r < rows; ++r)  // the columns right of the last full block
    for (int64_t c = cols16; c < cols; ++c) Y[c * rows + r] = X[r * ldx + c];
  for (int64_t r = rows16; r < rows; ++r)  // the rows below it
    for (int64_t c = 0; c < cols16; ++c) Y[c * rows + r] = X[r * ldx + c];
}

// The products libxsmm runs: alpha 1 and beta 0 or 1 (every product of the model's ops; the
// attention's fallback path scales by alpha and stays with OpenBLAS).
bool xsmm_covers(float alpha, float beta) {
  return alpha == 1.0f && (beta == 0.0f || beta == 1.0f);
}

// With a bias (beta 0), C = bias + op(A) op(B): each tile of C starts as the bias rows, written
// right before its first block's kernel (beta 1) while the tile is in cache, so that the sum is
// the one a pass of bias rows before the product gives, without that pass over memory.
void xsmm_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const float* bias) {
  thread_local std::vector<float> a_copy, b_copy;
  if (ta) {  // A stored (K, M): copy op(A) (M, K)
    a_copy.resize(static_cast<size_t>(M * K));
    transpose_into(A, K, M, lda, a_copy.data());
    A = a_copy.data();
    lda = K;
  }
  if (tb) {  // B stored (N, K): copy op(B) (K, N)
    b_copy.resize(static_cast<size_t>(K * N));
    transpose_into(B, N, K, ldb, b_copy.data());
    B = b_copy.data();
    ldb = N;
  }
  for (int64_t n0 = 0; n0 < N; n0 += kTileN) {
    const int64_t nb = std::min(kTileN, N - n0);
    for (int64_t m0 = 0; m0 < M; m0 += kTileM) {
      const int64_t mb = std::min(kTileM, M - m0);
      for (int64_t k0 = 0; k0 < K; k0 += kTileK) {
        const int64_t kb = std::min(kTileK, K - k0);
        const float* a = A + m0 * lda + k0;  // (mb, kb)
        const float* b = B + k0 * ldb + n0;  // (kb, nb)
        float* c = C + m0 * ldc + n0;        // (mb, nb)
        float tile_beta = k0 == 0 ? beta : 1.0f;
        if (k0 == 0 && bias) {
          for (int64_t i = 0; i < mb; ++i) std::copy(bias + n0, bias + n0 + nb, c + i * ldc);
          tile_beta = 1.0f;
        }
        if (const libxsmm_smmfunction f = xsmm_kernel(mb, nb, kb, lda, ldb, ldc, tile_beta))
          f(b, a, c);
        else  // a tile shape the JIT refuses: the same tile through OpenBLAS (fixed by the shape)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mb),
                      static_cast<int>(nb), static_cast<int>(kb), 1.0f, a, static_cast<int>(lda), b,
                      static_cast<int>(ldb), tile_beta, c, static_cast<int>(ldc));
      }
    }
  }
}
#endif

// bias (N) or null: with a bias (beta 0), C = bias + alpha op(A) op(B).
void sgemm_leaf(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                const float* bias, bool openblas_only) {
#ifdef STACKLAB_HAVE_LIBXSMM
  if (!openblas_only && K > 0 && xsmm_covers(alpha, beta)) {
    xsmm_gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, bias);
    return;
  }
#else
  (void)openblas_only;
#endif
  if (bias) {  // the bias rows, then the product adds to them
    for (int64_t i = 0; i < M; ++i) std::copy(bias, bias + N, C + i * ldc);
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

// The leaf product, timed when the op profile is on (util/profile.h).
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           const float* bias, bool openblas_only) {
  if (!op_profile::on()) {
    sgemm_leaf(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, openblas_only);
    return;
  }
  const int64_t t0 = op_profile::now_ns();
  sgemm_leaf(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, openblas_only);
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
                int64_t ldc, const float* bias, bool openblas_only) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  SL_CHECK(!bias || beta == 0.0f, "a gemm with a bias starts C from it: beta must be 0");
  if (M == 0 || N == 0) return;
  if (K == 0 && beta == 0.0f) {  // C = 0 (or the bias) exactly, whatever C held (a fresh
                                 // GradSlot may hold anything)
    for (int64_t i = 0; i < M; ++i)
      if (bias)
        std::copy(bias, bias + N, C + i * ldc);
      else
        std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
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
                beta, C + lo * ldc, ldc, bias, openblas_only);
        else  // columns lo..hi of C: columns of op(B) (rows of B when it is stored transposed)
          sgemm(trans_a, trans_b, M, hi - lo, K, alpha, A, lda, B + (trans_b ? lo * ldb : lo), ldb,
                beta, C + lo, ldc, bias ? bias + lo : nullptr, openblas_only);
      }
    }
    return;
  }
#endif
  sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, openblas_only);
}

}  // namespace

void gemm_ld(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
             int64_t ldc) {
  gemm_split(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr, false);
}

void gemm_rows(bool trans_b, int64_t M, int64_t N, int64_t K, const float* A, const float* B,
               float beta, float* C, RowBlockFn before, RowBlockFn after, void* ctx,
               const float* bias) {
  SL_CHECK(M >= 0 && N >= 0 && K >= 0, "negative gemm size");
  if (M == 0 || N == 0) return;
  const int64_t lda = K, ldb = trans_b ? K : N;
  auto rows = [&](int64_t lo, int64_t hi) {  // prologue, product, epilogue of rows lo..hi
    if (before) before(ctx, lo, hi);
    gemm_split(false, trans_b, hi - lo, N, K, 1.0f, A + lo * lda, lda, B, ldb, beta, C + lo * N, N,
               bias, false);  // whole on this thread inside the region below, else as gemm_ld
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
      gemm_split(false, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, N, bias, false);
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
             nullptr, true);
}

std::string matmul_path() {
#ifdef STACKLAB_HAVE_LIBXSMM
  return "libxsmm " + std::to_string(LIBXSMM_VERSION_MAJOR) + "." +
         std::to_string(LIBXSMM_VERSION_MINOR) + " JIT in tiles (OpenBLAS for alpha != 1)";
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

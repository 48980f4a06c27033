// gemm_ld, the one entry to the matrix products: values against a double-precision loop on shapes
// that cross the tiles of the libxsmm path (core/blas.cpp), for every transpose, beta 0 and 1,
// operands inside wider rows; and the same bits whether one thread or two cut the product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/blas.h"
#include "core/rng.h"

namespace sl {
namespace {

struct Product {
  bool ta, tb;
  int64_t M, N, K;
};

std::vector<float> random_floats(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = rng.normal(0.0f, 1.0f);
  return v;
}

// C (M, N) = op(A) op(B) + beta C with every operand a column block of a wider row-major matrix
// (its row stride `pad` more than its width), as attention's per-head products are.
struct Operands {
  Product p;
  int64_t pad, lda, ldb, ldc;
  std::vector<float> A, B, C;
  Operands(Product q, int64_t pad_, uint64_t seed) : p(q), pad(pad_) {
    const int64_t a_rows = p.ta ? p.K : p.M, a_cols = p.ta ? p.M : p.K;
    const int64_t b_rows = p.tb ? p.N : p.K, b_cols = p.tb ? p.K : p.N;
    lda = a_cols + pad;
    ldb = b_cols + pad;
    ldc = p.N + pad;
    A = random_floats(static_cast<size_t>(a_rows * lda), seed);
    B = random_floats(static_cast<size_t>(b_rows * ldb), seed + 1);
    C = random_floats(static_cast<size_t>(p.M * ldc), seed + 2);
  }
  float a(int64_t i, int64_t k) const { return p.ta ? A[k * lda + i] : A[i * lda + k]; }
  float b(int64_t k, int64_t j) const { return p.tb ? B[j * ldb + k] : B[k * ldb + j]; }
  std::vector<float> run(float beta) const {
    std::vector<float> c = C;
    gemm_ld(p.ta, p.tb, p.M, p.N, p.K, 1.0f, A.data(), lda, B.data(), ldb, beta, c.data(), ldc);
    return c;
  }
};

const std::vector<Product> kProducts = {
    {false, false, 130, 300, 520},  // more than one tile of M (64), N and K (256), with edges
    {true, false, 70, 257, 600},    // a transposed A (a Linear's dW)
    {false, true, 513, 65, 300},    // a transposed B (a Linear's forward)
    {true, true, 33, 40, 17},       // both, smaller than a tile
    {false, false, 1, 1, 1},
};

TEST(Gemm, MatchesADoublePrecisionLoopAcrossTileEdgesForEveryTransposeAndBeta) {
  for (const Product& p : kProducts)
    for (float beta : {0.0f, 1.0f}) {
      const Operands op(p, 3, 11);
      const std::vector<float> c = op.run(beta);
      for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j) {
          double s = beta == 0.0f ? 0.0 : static_cast<double>(op.C[i * op.ldc + j]);
          for (int64_t k = 0; k < p.K; ++k)
            s += static_cast<double>(op.a(i, k)) * static_cast<double>(op.b(k, j));
          ASSERT_NEAR(c[i * op.ldc + j], s, 2e-4 * (1.0 + std::abs(s)))
              << "ta=" << p.ta << " tb=" << p.tb << " M=" << p.M << " N=" << p.N << " K=" << p.K
              << " beta=" << beta << " at (" << i << ", " << j << ")";
        }
      for (int64_t i = 0; i < p.M; ++i)  // the padding beside C is not written
        for (int64_t j = p.N; j < op.ldc; ++j)
          ASSERT_EQ(c[i * op.ldc + j], op.C[i * op.ldc + j])
              << "padding at (" << i << ", " << j << ")";
    }
}

TEST(Gemm, GivesTheSameBitsOnOneAndOnTwoThreads) {
  if (!has_libxsmm())
    GTEST_SKIP() << "OpenBLAS alone (-DSTACKLAB_LIBXSMM=OFF) may round a product cut over threads "
                    "differently (docs/reference.md, Determinism and threads)";
  // Large enough to be cut over the threads (core/blas.cpp's kSplitWork), both ways: by rows when
  // C is taller than wide, by columns when wider.
  const std::vector<Product> shared = {
      {false, false, 512, 192, 64}, {true, false, 64, 640, 512}, {false, true, 300, 520, 130}};
  const int before = num_threads();
  for (const Product& p : shared) {
    const Operands op(p, 0, 21);
    set_num_threads(1);
    const std::vector<float> one = op.run(1.0f);
    set_num_threads(2);
    const std::vector<float> two = op.run(1.0f);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0)
        << "ta=" << p.ta << " tb=" << p.tb << " M=" << p.M << " N=" << p.N << " K=" << p.K;
  }
  set_num_threads(before);
}

TEST(GemmRows, WithABiasEqualsTheBiasRowsAddedBeforeTheProductBitForBit) {
  for (bool tb : {false, true})
    for (int threads : {1, 2}) {
      const int64_t M = 300, N = 130, K = 520;  // more than one tile each way
      const std::vector<float> A = random_floats(static_cast<size_t>(M * K), 31);
      const std::vector<float> B = random_floats(static_cast<size_t>(K * N), 32);
      const std::vector<float> bias = random_floats(static_cast<size_t>(N), 33);
      const int before = num_threads();
      set_num_threads(threads);
      std::vector<float> fused(static_cast<size_t>(M * N), -7.0f), rows(fused.size());
      gemm_rows(tb, M, N, K, A.data(), B.data(), 0.0f, fused.data(), nullptr, nullptr, nullptr,
                bias.data());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) rows[i * N + j] = bias[j];
      gemm_ld(false, tb, M, N, K, 1.0f, A.data(), K, B.data(), tb ? K : N, 1.0f, rows.data(), N);
      set_num_threads(before);
      EXPECT_EQ(std::memcmp(fused.data(), rows.data(), rows.size() * sizeof(float)), 0)
          << "tb=" << tb << " threads=" << threads;
    }
}

}  // namespace
}  // namespace sl

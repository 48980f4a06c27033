// matmul, bmm and linear: values against a naive loop, gradients against finite differences.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

TEST(Matmul, MatchesNaiveProductForEveryTransposeCombination) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t M = 3, K = 5, N = 4;
      Tensor a = randn(ta ? Shape{K, M} : Shape{M, K}, 1, 1.0f, false);
      Tensor b = randn(tb ? Shape{N, K} : Shape{K, N}, 2, 1.0f, false);
      Tensor c = matmul(a, b, ta, tb);
      ASSERT_EQ(c.shape(), (Shape{M, N}));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += static_cast<double>(a.data()[ta ? k * M + i : i * K + k]) *
                 b.data()[tb ? j * K + k : k * N + j];
          EXPECT_NEAR(c.data()[i * N + j], s, 1e-5) << "ta=" << ta << " tb=" << tb;
        }
    }
}

TEST(Matmul, BackwardMatchesFiniteDifferencesForEveryTransposeCombination) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = randn(ta ? Shape{5, 3} : Shape{3, 5}, 3);
      Tensor b = randn(tb ? Shape{4, 5} : Shape{5, 4}, 4);
      EXPECT_TRUE(grad_check(
          [&](const std::vector<Tensor>& in) { return matmul(in[0], in[1], ta, tb); }, {a, b}))
          << "ta=" << ta << " tb=" << tb;
    }
}

TEST(Matmul, RejectsMismatchedInnerDimsNamingTheShapes) {
  Tensor a = Tensor::zeros({4, 64}), b = Tensor::zeros({96, 384});
  try {
    matmul(a, b);
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "[matmul] inner dims differ: (4,64) vs (96,384)");
  }
}

TEST(Bmm, BatchedAttentionShapesBackwardMatchesFiniteDifferences) {
  // (B, NH, T, HS) x (B, NH, T, HS)^T -> (B, NH, T, T), as attention scores are formed.
  Tensor q = randn({2, 3, 4, 5}, 5), k = randn({2, 3, 4, 5}, 6);
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) { return bmm(in[0], in[1], false, true); }, {q, k}));
  Tensor att = randn({2, 3, 4, 4}, 7), v = randn({2, 3, 4, 5}, 8);
  EXPECT_TRUE(
      grad_check([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {att, v}));
}

TEST(Bmm, EachBatchEntryEqualsItsOwnMatmul) {
  Tensor a = randn({3, 2, 4}, 9, 1.0f, false), b = randn({3, 4, 5}, 10, 1.0f, false);
  Tensor c = bmm(a, b);
  for (int64_t i = 0; i < 3; ++i) {
    Tensor ai = Tensor::from({2, 4}, std::vector<float>(a.data() + i * 8, a.data() + (i + 1) * 8));
    Tensor bi =
        Tensor::from({4, 5}, std::vector<float>(b.data() + i * 20, b.data() + (i + 1) * 20));
    Tensor ci = matmul(ai, bi);
    for (int64_t j = 0; j < 10; ++j) EXPECT_FLOAT_EQ(c.data()[i * 10 + j], ci.data()[j]);
  }
}

TEST(Linear, ComputesXTimesWeightTransposedPlusBias) {
  Tensor x = Tensor::from({1, 2}, {1, 2});
  Tensor w = Tensor::from({3, 2}, {1, 0, 0, 1, 1, 1});  // (out, in) as in torch.nn.Linear
  Tensor b = Tensor::from({3}, {0.5f, -0.5f, 0});
  EXPECT_EQ(linear(x, w, b).to_vector(), (std::vector<float>{1.5f, 1.5f, 3.0f}));
}

TEST(Linear, BackwardMatchesFiniteDifferencesWithAndWithoutBias) {
  Tensor x = randn({2, 3, 5}, 11), w = randn({4, 5}, 12), b = randn({4}, 13);
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); },
                         {x, w, b}));
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor()); }, {x, w}));
}

}  // namespace
}  // namespace sl

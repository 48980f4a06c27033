// matmul, bmm and linear: values against a naive loop, gradients against finite differences.
#include <gtest/gtest.h>

#include "core/autograd.h"
#include "core/blas.h"
#include "core/ops.h"
#include "support/gradcheck.h"
#include "util/error.h"

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

// The fused Linear + GELU against the two ops it replaces, shared over one thread and over two: a
// tall product (199 rows, which gemm_ld splits by rows) and a wide one (64 rows of 512 outputs,
// which it splits by columns).
struct Gradients {
  std::vector<float> y, dx, dw, db;
};
struct FcShape {
  int64_t rows, in, out;
};
Gradients run_mlp_fc(bool fused, bool tanh_approx, int threads, FcShape s) {
  const int before = num_threads();
  set_num_threads(threads);
  Tensor x = randn({s.rows, s.in}, 21), w = randn({s.out, s.in}, 22, 0.2f), b = randn({s.out}, 23);
  Tensor dy = randn({s.rows, s.out}, 24, 1.0f, false);
  Tensor y = fused ? linear_gelu(x, w, b, tanh_approx) : gelu(linear(x, w, b), tanh_approx);
  sum(mul(y, dy)).backward();
  set_num_threads(before);
  auto grad = [](Tensor& t) {
    return std::vector<float>(t.grad_data(), t.grad_data() + t.numel());
  };
  return {y.to_vector(), grad(x), grad(w), grad(b)};
}

TEST(LinearGelu, EqualsLinearThenGeluBitForBitInValuesAndGradientsOnOneAndTwoThreads) {
  for (FcShape shape : {FcShape{199, 48, 96}, FcShape{64, 64, 512}})
    for (bool tanh_approx : {false, true})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(shape.rows) + " x " + std::to_string(shape.out) + ", " +
                     (tanh_approx ? "tanh" : "erf") + ", threads " + std::to_string(threads));
        const Gradients fused = run_mlp_fc(true, tanh_approx, threads, shape);
        const Gradients composed = run_mlp_fc(false, tanh_approx, threads, shape);
        EXPECT_EQ(fused.y, composed.y);
        EXPECT_EQ(fused.dx, composed.dx);
        EXPECT_EQ(fused.dw, composed.dw);
        EXPECT_EQ(fused.db, composed.db);
      }
}

TEST(LinearGelu, BackwardMatchesFiniteDifferencesWithAndWithoutBiasInBothForms) {
  Tensor x = randn({2, 3, 5}, 31), w = randn({4, 5}, 32), b = randn({4}, 33);
  for (bool tanh_approx : {false, true}) {
    EXPECT_TRUE(grad_check(
        [=](const std::vector<Tensor>& in) {
          return linear_gelu(in[0], in[1], in[2], tanh_approx);
        },
        {x, w, b}));
    EXPECT_TRUE(grad_check(
        [=](const std::vector<Tensor>& in) {
          return linear_gelu(in[0], in[1], Tensor(), tanh_approx);
        },
        {x, w}));
  }
}

TEST(LinearGelu, WithoutTheTapeGivesTheSameValuesAndRecordsNothing) {
  Tensor x = randn({70, 16}, 41), w = randn({32, 16}, 42), b = randn({32}, 43);
  const std::vector<float> taped = linear_gelu(x, w, b).to_vector();
  NoGradGuard no_grad;
  Tensor y = linear_gelu(x, w, b);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.to_vector(), taped);
}

TEST(LinearGelu, RejectsAWeightThatDoesNotMatchTheInputNamingTheOp) {
  try {
    linear_gelu(randn({2, 5}, 1), randn({4, 6}, 2), Tensor());
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[linear_gelu] input"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sl

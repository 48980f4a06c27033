// The fused causal attention op: against the composed reference (slice, split_heads, bmm,
// causal softmax, merge_heads), gradient-checked, and causal.
#include <gtest/gtest.h>

#include <cmath>

#include "core/autograd.h"
#include "core/blas.h"
#include "core/ops.h"
#include "core/ops/attention.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

// The readable reference path the fused op replaces.
Tensor composed_attention(const Tensor& qkv, int64_t NH) {
  const int64_t C = qkv.size(2) / 3, HS = C / NH;
  Tensor q = split_heads(slice_last(qkv, 0, C), NH);
  Tensor k = split_heads(slice_last(qkv, C, C), NH);
  Tensor v = split_heads(slice_last(qkv, 2 * C, C), NH);
  Tensor att =
      softmax(scale(bmm(q, k, false, true), 1.0f / std::sqrt(static_cast<float>(HS))), true);
  return merge_heads(bmm(att, v));
}

TEST(CausalAttention, MatchesTheComposedOpsForwardAndBackward) {
  Tensor a = randn({2, 5, 24}, 11);  // B 2, T 5, C 8, NH 2
  Tensor b = a.detach().clone().set_requires_grad(true);
  Tensor ya = causal_attention(a, 2), yb = composed_attention(b, 2);
  std::vector<float> va = ya.to_vector(), vb = yb.to_vector();
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-5f) << i;
  Tensor r = randn({2, 5, 8}, 12, 1.0f, false);
  sum(mul(ya, r)).backward();
  sum(mul(yb, r)).backward();
  std::vector<float> ga = a.grad().to_vector(), gb = b.grad().to_vector();
  for (size_t i = 0; i < ga.size(); ++i) EXPECT_NEAR(ga[i], gb[i], 1e-5f) << i;
}

TEST(CausalAttention, BackwardMatchesFiniteDifferences) {
  for (int64_t NH : {1, 2, 4})
    EXPECT_TRUE(
        grad_check([NH](const std::vector<Tensor>& in) { return causal_attention(in[0], NH); },
                   {randn({2, 4, 24}, 13)}))
        << "n_head=" << NH;
}

// A fixed dropout mask (B, NH, T, T): about a third of the entries 0, the rest 1/(1-p).
Tensor fixed_mask(int64_t B, int64_t NH, int64_t T, float p) {
  Tensor u = testing::uniform({B, NH, T, T}, 21, 0.0f, 1.0f, false);
  for (int64_t i = 0; i < u.numel(); ++i) u.data()[i] = u.data()[i] < p ? 0.0f : 1.0f / (1.0f - p);
  return u;
}

TEST(CausalAttention, DropoutWithAFixedMaskMatchesTheComposedOpsAndFiniteDifferences) {
  const Tensor m = fixed_mask(2, 2, 5, 0.3f);
  Tensor a = randn({2, 5, 24}, 11);
  Tensor b = a.detach().clone().set_requires_grad(true);
  auto composed = [&m](const Tensor& qkv) {  // softmax, then the mask, then V
    const int64_t C = qkv.size(2) / 3, HS = C / 2;
    Tensor q = split_heads(slice_last(qkv, 0, C), 2), k = split_heads(slice_last(qkv, C, C), 2);
    Tensor v = split_heads(slice_last(qkv, 2 * C, C), 2);
    Tensor att =
        softmax(scale(bmm(q, k, false, true), 1.0f / std::sqrt(static_cast<float>(HS))), true);
    return merge_heads(bmm(mul(att, m), v));
  };
  Tensor ya = causal_attention(a, 2, m), yb = composed(b);
  std::vector<float> va = ya.to_vector(), vb = yb.to_vector(),
                     plain = causal_attention(a.detach(), 2).to_vector();
  double diff = 0.0;
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_NEAR(va[i], vb[i], 1e-5f) << i;
    diff += std::abs(va[i] - plain[i]);
  }
  EXPECT_GT(diff, 1e-3) << "the mask changed nothing";
  Tensor r = randn({2, 5, 8}, 12, 1.0f, false);
  sum(mul(ya, r)).backward();
  sum(mul(yb, r)).backward();
  std::vector<float> ga = a.grad().to_vector(), gb = b.grad().to_vector();
  for (size_t i = 0; i < ga.size(); ++i) EXPECT_NEAR(ga[i], gb[i], 1e-5f) << i;
  EXPECT_TRUE(
      grad_check([&m](const std::vector<Tensor>& in) { return causal_attention(in[0], 2, m); },
                 {randn({2, 5, 24}, 13)}));
}

TEST(CausalAttention, RejectsADropoutMaskOfTheWrongShape) {
  EXPECT_THROW(causal_attention(randn({1, 4, 12}, 1, 1.0f, false), 2, fixed_mask(1, 2, 3, 0.5f)),
               ShapeError);
}

TEST(CausalAttention, FutureTokensDoNotChangeThePast) {
  Tensor x = randn({1, 6, 12}, 14, 1.0f, false);
  std::vector<float> y = causal_attention(x, 2).to_vector();
  Tensor x2 = x.clone();
  for (int64_t c = 0; c < 12; ++c) x2.data()[4 * 12 + c] += 3.0f;  // change token 4
  std::vector<float> y2 = causal_attention(x2, 2).to_vector();
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(y[t * 4 + c], y2[t * 4 + c]) << "t=" << t;
  EXPECT_NE(y[4 * 4], y2[4 * 4]);
}

TEST(CausalAttention, RejectsAWidthThatDoesNotSplitIntoHeads) {
  EXPECT_THROW(causal_attention(randn({1, 2, 10}, 1, 1.0f, false), 2), ShapeError);
}

// An evaluation keeps no probabilities: they live in per-thread scratch, with the same values.
TEST(CausalAttention, WithoutTheTapeGivesBitIdenticalOutputsOnOneAndTwoThreads) {
  const int before = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    Tensor a = randn({3, 16, 48}, 51);  // B 3, T 16, C 16, NH 4: more (batch, head)s than threads
    const std::vector<float> taped = causal_attention(a, 4).to_vector();
    NoGradGuard no_grad;
    Tensor y = causal_attention(a, 4);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.to_vector(), taped) << threads << " thread(s)";
  }
  set_num_threads(before);
}

// The tiled kernels (head size a multiple of 16) against the per-head sgemm path, forward and
// backward, for lengths that fill the 16-key chunks and lengths that do not, with the gradient
// both written fresh and added to an existing one (a second backward into the same leaf).
struct AttentionRun {
  std::vector<float> y, grad_once, grad_twice;
};
AttentionRun run_attention(const Tensor& qkv, int64_t NH, bool gemm_path) {
  attention_force_gemm() = gemm_path;
  Tensor a = qkv.detach().clone().set_requires_grad(true);
  const Tensor r = randn({qkv.size(0), qkv.size(1), qkv.size(2) / 3}, 77, 1.0f, false);
  AttentionRun out;
  Tensor y = causal_attention(a, NH);
  out.y = y.to_vector();
  sum(mul(y, r)).backward();
  out.grad_once = a.grad().to_vector();
  sum(mul(causal_attention(a, NH), r)).backward();
  out.grad_twice = a.grad().to_vector();
  attention_force_gemm() = false;
  return out;
}

TEST(CausalAttention, TiledKernelsMatchTheGemmPathForwardAndBackward) {
  struct Case {
    int64_t B, T, C, NH;
  };
  for (const Case c : {Case{2, 5, 32, 2}, Case{2, 16, 32, 2}, Case{1, 37, 64, 2},
                       Case{2, 64, 64, 4}, Case{1, 70, 96, 2}}) {
    ASSERT_TRUE(attention_tiled(c.C / c.NH, nullptr)) << "head size " << c.C / c.NH;
    const Tensor qkv = randn({c.B, c.T, 3 * c.C}, 90 + c.T, 1.0f, false);
    const AttentionRun tiled = run_attention(qkv, c.NH, false);
    const AttentionRun gemm = run_attention(qkv, c.NH, true);
    const std::string where = "B " + std::to_string(c.B) + ", T " + std::to_string(c.T) + ", C " +
                              std::to_string(c.C) + ", NH " + std::to_string(c.NH);
    for (size_t i = 0; i < tiled.y.size(); ++i)
      ASSERT_NEAR(tiled.y[i], gemm.y[i], 2e-6f) << where << ", y[" << i << "]";
    for (size_t i = 0; i < tiled.grad_once.size(); ++i) {
      ASSERT_NEAR(tiled.grad_once[i], gemm.grad_once[i], 2e-5f) << where << ", grad[" << i << "]";
      ASSERT_NEAR(tiled.grad_twice[i], gemm.grad_twice[i], 4e-5f)
          << where << ", 2 grad[" << i << "]";
    }
  }
}

// The tiled forward does not write P past the diagonal's chunk, which the gemm path's backward
// would read: a backward that would switch paths stops instead of computing from it.
TEST(CausalAttention, RefusesABackwardOnAnotherPathThanItsForward) {
  Tensor qkv = randn({1, 32, 96}, 15);
  Tensor y = causal_attention(qkv, 2);  // head size 16: tiled
  attention_force_gemm() = true;
  EXPECT_THROW(sum(y).backward(), InternalError);
  attention_force_gemm() = false;
}

TEST(CausalAttention, TiledKernelsMatchFiniteDifferences) {
  ASSERT_TRUE(attention_tiled(16, nullptr));
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return causal_attention(in[0], 2); },
                         {randn({2, 19, 96}, 14)}));
}

// Packed probabilities (T a multiple of 16, several bands of 16 rows): the rows of each band
// start where the band before ends, so a mistake in the offsets shows in the gradients.
TEST(CausalAttention, TiledKernelsWithPackedProbabilitiesMatchFiniteDifferences) {
  ASSERT_TRUE(attention_tiled(16, nullptr));
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return causal_attention(in[0], 2); },
                         {randn({1, 48, 96}, 16)}));
}

TEST(CausalAttention, KeepsOnlyTheKeyChunksEachRowReachesOnTheTiledPath) {
  EXPECT_EQ(attention_probs_size(64, 16, nullptr), 2560);  // 16 * 16 * (1 + 2 + 3 + 4)
  EXPECT_EQ(attention_probs_size(16, 16, nullptr), 256);
  EXPECT_EQ(attention_probs_size(37, 16, nullptr), 37 * 37);  // not whole chunks: the square
  EXPECT_EQ(attention_probs_size(64, 8, nullptr), 64 * 64);   // the gemm path: the square
  const float mask = 1.0f;
  EXPECT_EQ(attention_probs_size(64, 16, &mask), 64 * 64);
}

TEST(CausalAttention, TakesTheGemmPathForHeadSizesOtherThanMultiplesOf16OrWithDropout) {
  EXPECT_FALSE(attention_tiled(8, nullptr));
  EXPECT_FALSE(attention_tiled(24, nullptr));
  const float mask = 1.0f;
  EXPECT_FALSE(attention_tiled(16, &mask));
}

}  // namespace
}  // namespace sl

// The causal running mean (core/ops/scan.h): hand-checked values, the uniform causal matrix C
// it stands for, causality, and its backward against finite differences.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

TEST(CausalMean, EachPositionIsTheMeanOfItselfAndThePast) {
  // B 1, T 3, C 2: columns [1, 2, 6] and [4, 0, -1].
  Tensor x = Tensor::from({1, 3, 2}, {1, 4, 2, 0, 6, -1});
  EXPECT_EQ(causal_mean(x).to_vector(), (std::vector<float>{1, 4, 1.5f, 2, 3, 1}));
}

TEST(CausalMean, EqualsTheUniformCausalMatrixTimesX) {
  const int64_t B = 2, T = 5, C = 3;
  Tensor x = randn({B, T, C}, 1, 1.0f, false);
  std::vector<float> u(static_cast<size_t>(T * T), 0.0f);  // C_ts = 1/(t+1), s <= t
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s <= t; ++s) u[static_cast<size_t>(t * T + s)] = 1.0f / (t + 1.0f);
  Tensor cm = Tensor::from({T, T}, u);
  const std::vector<float> y = causal_mean(x).to_vector();
  for (int64_t b = 0; b < B; ++b) {
    Tensor xb =
        Tensor::from({T, C}, std::vector<float>(x.data() + b * T * C, x.data() + (b + 1) * T * C));
    const std::vector<float> ref = matmul(cm, xb).to_vector();
    for (int64_t i = 0; i < T * C; ++i)
      EXPECT_NEAR(y[static_cast<size_t>(b * T * C + i)], ref[static_cast<size_t>(i)], 1e-6f)
          << b << " " << i;
  }
}

TEST(CausalMean, FutureEntriesDoNotChangeThePast) {
  Tensor x = randn({1, 4, 2}, 2, 1.0f, false);
  Tensor x2 = x.detach().clone();
  x2.data()[3 * 2] += 5.0f;  // t = 3
  const std::vector<float> a = causal_mean(x).to_vector(), b = causal_mean(x2).to_vector();
  for (int i = 0; i < 3 * 2; ++i) EXPECT_EQ(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]);
  EXPECT_NE(a[6], b[6]) << "the test must be able to fail";
}

TEST(CausalMean, BackwardMatchesFiniteDifferences) {
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return causal_mean(in[0]); },
                         {randn({2, 6, 3}, 3)}));
}

TEST(CausalMean, RejectsATensorThatIsNotBTC) {
  EXPECT_THROW(causal_mean(randn({4, 3}, 4)), ShapeError);
}

}  // namespace
}  // namespace sl

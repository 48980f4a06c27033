// add, sub, mul, scale and the activations: values and finite-difference gradients.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;
using testing::uniform;

TEST(Add, ResidualAddOfTheSourceTextGivesTheStatedSum) {
  Tensor x = Tensor::from({3}, {0.5f, 1.2f, -0.3f}), f = Tensor::from({3}, {0.1f, -0.2f, 0.4f});
  std::vector<float> y = add(x, f).to_vector();
  EXPECT_NEAR(y[0], 0.6f, 1e-6);
  EXPECT_NEAR(y[1], 1.0f, 1e-6);
  EXPECT_NEAR(y[2], 0.1f, 1e-6);
}

TEST(Add, SkipPathPassesTheGradientUnchangedSoDxIsOnePlusFPrime) {
  // y = x + tanh(x): dy/dx = 1 + (1 - tanh(x)^2) elementwise.
  Tensor x = Tensor::from({3}, {0.5f, 1.2f, -0.3f}, true);
  Tensor y = sum(add(x, tanh(x)));
  y.backward();
  for (int i = 0; i < 3; ++i) {
    const float t = std::tanh(x.data()[i]);
    EXPECT_NEAR(x.grad().data()[i], 1.0f + (1.0f - t * t), 1e-6);
  }
  // With the branch cut off (its input detached), exactly 1 flows through the skip.
  Tensor x2 = Tensor::from({3}, {0.5f, 1.2f, -0.3f}, true);
  sum(add(x2, tanh(x2.detach()))).backward();
  EXPECT_EQ(x2.grad().to_vector(), (std::vector<float>{1, 1, 1}));
}

TEST(Add, BroadcastsBiasPositionTableAndScalarWithGradients) {
  Tensor a = randn({2, 3, 4}, 1);
  for (Shape bs : {Shape{4}, Shape{3, 4}, Shape{1}, Shape{2, 3, 4}}) {
    Tensor b = randn(bs, 2);
    EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return add(in[0], in[1]); }, {a, b}))
        << bs.str();
    EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }, {a, b}))
        << bs.str();
  }
}

TEST(Add, RejectsShapesThatDoNotBroadcast) {
  EXPECT_THROW(add(Tensor::zeros({2, 3}), Tensor::zeros({2})), ShapeError);
}

TEST(Sub, NeedsEqualShapesAsItsHeaderSays) {
  EXPECT_THROW(sub(randn({2, 4}, 1), randn({4}, 2)), ShapeError);
  EXPECT_NO_THROW(sub(randn({2, 4}, 1), randn({2, 4}, 2)));
}

TEST(Sub, BackwardMatchesFiniteDifferences) {
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return sub(in[0], in[1]); },
                         {randn({3, 5}, 3), randn({3, 5}, 4)}));
}

TEST(Scale, BackwardMatchesFiniteDifferences) {
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return scale(in[0], -2.5f); },
                         {randn({7}, 5)}));
}

TEST(Tanh, BackwardMatchesFiniteDifferences) {
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return tanh(in[0]); },
                         {randn({4, 6}, 6, 1.5f)}));
}

TEST(Relu, BackwardMatchesFiniteDifferencesAwayFromTheKink) {
  // |x| >= 0.1 keeps every entry further than eps from 0.
  Tensor x = uniform({5, 5}, 7, 0.1f, 2.0f);
  for (int64_t i = 0; i < x.numel(); i += 2) x.data()[i] = -x.data()[i];
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return relu(in[0]); }, {x}));
}

TEST(Gelu, ExactFormMatchesXTimesNormalCdf) {
  Tensor x = Tensor::from({3}, {-1.0f, 0.0f, 2.0f});
  std::vector<float> y = gelu(x).to_vector();
  EXPECT_NEAR(y[0], -0.158655254f, 1e-6);
  EXPECT_NEAR(y[1], 0.0f, 1e-7);
  EXPECT_NEAR(y[2], 1.954499736f, 1e-6);
}

TEST(Gelu, TanhApproximationIsCloseToExactButNotEqual) {
  Tensor x = Tensor::from({1}, {1.0f});
  EXPECT_NEAR(gelu(x, true).item(), 0.841191990f, 1e-6);
  EXPECT_NE(gelu(x, true).item(), gelu(x, false).item());
}

TEST(Gelu, BothFormsBackwardMatchFiniteDifferences) {
  for (bool approx : {false, true})
    EXPECT_TRUE(grad_check([approx](const std::vector<Tensor>& in) { return gelu(in[0], approx); },
                           {randn({3, 8}, 8, 2.0f)}))
        << "tanh_approx=" << approx;
}

// linear_gelu keeps g'(x) from its forward pass and multiplies by it in backward; those values
// must be the bits gelu_forward and gelu_backward give, at every magnitude and sign (including
// +-0, the clamps of exp at large |x| and a length that leaves a vector tail).
TEST(Gelu, ForwardWithItsDerivativeGivesTheBitsOfForwardAndBackwardInBothForms) {
  std::vector<float> x = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-4f, -3.5f, 7.0f, -9.0f, 20.0f, -40.0f};
  for (float v : randn({1003}, 51, 3.0f).to_vector()) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<float> dy = randn({n}, 52).to_vector();
  for (bool approx : {false, true}) {
    std::vector<float> y(x.size()), dx(x.size()), y2(x.size()), g = x;
    gelu_forward(y.data(), x.data(), n, approx);
    gelu_backward(dx.data(), dy.data(), x.data(), n, approx, /*overwrite=*/true);
    gelu_forward_grad_serial(y2.data(), g.data(), n, approx);
    gelu_backward_from_grad_serial(g.data(), dy.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(y2[i]), std::bit_cast<uint32_t>(y[i]))
          << "gelu(" << x[i] << "), tanh_approx=" << approx;
      ASSERT_EQ(std::bit_cast<uint32_t>(g[i]), std::bit_cast<uint32_t>(dx[i]))
          << "dy * gelu'(" << x[i] << "), tanh_approx=" << approx;
    }
  }
}

TEST(Reduce, SumAndMeanBackwardMatchFiniteDifferences) {
  Tensor x = randn({3, 4}, 9);
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return sum(in[0]); }, {x}));
  EXPECT_TRUE(grad_check([](const std::vector<Tensor>& in) { return mean(in[0]); }, {x}));
  EXPECT_NEAR(mean(Tensor::from({4}, {1, 2, 3, 4})).item(), 2.5f, 1e-7);
}

}  // namespace
}  // namespace sl

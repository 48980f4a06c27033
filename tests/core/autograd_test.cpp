// Autograd semantics: accumulation, release, no-grad, hooks, deep graphs.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "core/rng.h"

namespace sl {
namespace {

TEST(Autograd, GradientsAccumulateIntoLeavesAcrossBackwardCalls) {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  sum(scale(x, 3.0f)).backward();
  sum(scale(x, 3.0f)).backward();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{6, 6}));
  x.zero_grad();
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 0}));
}

TEST(Autograd, ATensorUsedTwiceReceivesBothGradients) {
  Tensor x = Tensor::from({1}, {3}, true);
  sum(mul(x, x)).backward();  // d(x^2)/dx = 2x
  EXPECT_FLOAT_EQ(x.grad().item(), 6.0f);
}

TEST(Autograd, SecondBackwardOnAReleasedGraphThrows) {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  Tensor loss = sum(tanh(x));
  loss.backward();
  try {
    loss.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already released"), std::string::npos) << e.what();
  }
}

TEST(Autograd, BackwardNeedsAScalar) {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  EXPECT_THROW(tanh(x).backward(), Error);
}

TEST(Autograd, NoGradScopeRecordsNothing) {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    Tensor y = tanh(x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE(tanh(x).requires_grad());
}

TEST(Autograd, HookOnAnIntermediateSeesItsCompleteGradient) {
  Tensor x = Tensor::from({2}, {0.5f, -1.0f}, true);
  Tensor h = scale(x, 2.0f);
  std::vector<float> seen;
  h.register_hook([&](const Tensor& g) { seen = g.to_vector(); });
  sum(add(h, h)).backward();  // dL/dh = 2 from both uses
  EXPECT_EQ(seen, (std::vector<float>{2, 2}));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{4, 4}));
  EXPECT_FALSE(h.has_grad()) << "intermediate gradients are released";
}

TEST(Autograd, AChainOfTenThousandOpsBackpropagatesWithoutStackOverflow) {
  Tensor x = Tensor::from({1}, {1.0f}, true);
  Tensor y = x;
  for (int i = 0; i < 10000; ++i) y = add(y, scale(y, 1e-5f));
  sum(y).backward();
  EXPECT_NEAR(x.grad().item(), std::pow(1.0 + 1e-5, 10000), 1e-3);
}

TEST(Autograd, NoGradientReachesATensorThatDoesNotRequireIt) {
  Tensor w = Tensor::from({2}, {1, 2}, true);
  Tensor c = Tensor::from({2}, {3, 4});
  sum(mul(w, c)).backward();
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{3, 4}));
  EXPECT_FALSE(c.has_grad());
}

TEST(Rng, SavedStateReproducesTheSameDraws) {
  Rng a(42);
  a.normal();
  Rng::State s = a.state();
  const double x1 = a.normal();
  const uint64_t k1 = a.below(1000);
  Rng b(0);
  b.set_state(s);
  EXPECT_EQ(b.normal(), x1);
  EXPECT_EQ(b.below(1000), k1);
  EXPECT_NE(Rng(1).next_u64(), Rng(2).next_u64());
}

TEST(Rng, NormalDrawsHaveUnitVariance) {
  Rng r(3);
  double s = 0, ss = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double v = r.normal();
    s += v;
    ss += v * v;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(ss / n, 1.0, 0.01);
}

}  // namespace
}  // namespace sl

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

TEST(Autograd, AGradSlotIsFreshOnlyUntilItsFirstWriter) {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  const GradSlot first = grad_slot(x);
  const GradSlot second = grad_slot(x);
  EXPECT_TRUE(first.fresh);
  EXPECT_FALSE(second.fresh);
  EXPECT_EQ(first.data, second.data);
  EXPECT_EQ(second.beta(), 1.0f);
}

// The overwriting kernels (linear, gelu, add, layer_norm, attention) write a fresh gradient and
// add to a used one: a tensor feeding several of them gets the sum, in whichever order they run,
// even when a kernel is handed the same tensor twice or the backward is run a second time.
TEST(Autograd, OverwritingKernelsStillSumTheGradientsOfATensorWithSeveralConsumers) {
  Tensor x = Tensor::from({2, 3}, {0.5f, -1.0f, 2.0f, 0.1f, 0.3f, -0.7f}, true);
  Tensor w = Tensor::from({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}, true);
  Tensor b = Tensor::from({3}, {0, 0, 0}, true);
  // loss = sum(x + x) + sum(linear(x, I, 0)) + sum(gelu(x)): dloss/dx = 2 + 1 + gelu'(x)
  auto loss_of = [&] {
    return add(add(sum(add(x, x)), sum(linear(x, w, b))), sum(gelu(x, false)));
  };
  loss_of().backward();
  const std::vector<float> once = x.grad().to_vector();
  for (size_t i = 0; i < once.size(); ++i) {
    const double v = x.to_vector()[i];
    const double gelu_grad = 0.5 * (1.0 + std::erf(v / std::sqrt(2.0))) +
                             v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    EXPECT_NEAR(once[i], 3.0 + gelu_grad, 1e-5) << "element " << i;
  }
  loss_of().backward();  // accumulates onto the leaf's existing gradient
  for (size_t i = 0; i < once.size(); ++i)
    EXPECT_NEAR(x.grad().to_vector()[i], 2.0f * once[i], 1e-5);
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

// The gradient-check harness: compares autograd's gradients with central finite differences.
// The scalar checked is L = sum_i r_i * f(inputs)_i, with r a fixed random projection, summed
// in double. Each test picks its own eps and tolerances (ggml's test-backend-ops style) and
// keeps inputs away from kinks (ReLU at 0, ties in max).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace sl::testing {

struct GradCheck {
  double eps = 1e-2;   // finite-difference step
  double atol = 2e-3;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 2e-2;
  int max_elements = 256;  // per input; larger inputs are checked on a random sample
  uint64_t seed = 7;
};

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks d L / d input for every input that requires grad.
::testing::AssertionResult grad_check(const TensorFn& f, std::vector<Tensor> inputs,
                                      const GradCheck& opt = {});

// A tensor of the given shape with N(0, std) entries (or uniform in [lo, hi)), seeded.
Tensor randn(const Shape& shape, uint64_t seed, float std = 1.0f, bool requires_grad = true);
Tensor uniform(const Shape& shape, uint64_t seed, float lo, float hi, bool requires_grad = true);

}  // namespace sl::testing

// A worked 4-number example of one residual block, y = x + F(Norm(x)) with
// F(v)_i = s * tanh(0.6 v_i + 0.3 v_((i+1) mod 4)), computed through the engine's own
// LayerNorm and autograd, for pre-norm and post-norm wiring. Used by `stacklab toyblock`.
#pragma once
#include <string>
#include <vector>

namespace sl {

struct ToyBlockResult {
  std::string wiring;   // "pre" or "post"
  std::string formula;  // "x + F(norm(x))" or "norm(x + F(x))"
  std::vector<float> x, f_input, f, residual_sum, output;
  double mean = 0, variance = 0;             // statistics of the tensor that is normalized
  std::vector<std::vector<float>> jacobian;  // d output_i / d x_j
};

// wiring: "pre" (y = x + F(LN(x))) or "post" (y = LN(x + F(x))).
ToyBlockResult run_toy_block(const std::vector<float>& x, float strength, float eps,
                             const std::string& wiring);

}  // namespace sl

// Toy block through the engine: F is a fixed 4x4 mixing (0.6 on the diagonal, 0.3 on the
// next index, cyclic), a tanh and a scale; the Jacobian comes from four backward passes.
#include "nn/toyblock.h"

#include "core/ops.h"

namespace sl {
namespace {

Tensor toy_f(const Tensor& v, float strength) {
  const int64_t n = v.size(-1);
  // (n, n) with W[i][i] = 0.6, W[i][(i+1) mod n] = 0.3, so (v W^T)_i = 0.6 v_i + 0.3 v_(i+1)
  std::vector<float> w(static_cast<size_t>(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    w[static_cast<size_t>(i * n + i)] += 0.6f;
    w[static_cast<size_t>(i * n + (i + 1) % n)] += 0.3f;
  }
  return scale(tanh(linear(v, Tensor::from(Shape{n, n}, w), Tensor())), strength);
}

struct Pass {
  Tensor f_input, f, sum, out;
};

Pass forward(const Tensor& x, float s, float eps, bool pre) {
  Pass p;
  if (pre) {
    p.f_input = layer_norm(x, Tensor(), Tensor(), eps);
    p.f = toy_f(p.f_input, s);
    p.sum = add(x, p.f);
    p.out = p.sum;
  } else {
    p.f_input = x;
    p.f = toy_f(x, s);
    p.sum = add(x, p.f);
    p.out = layer_norm(p.sum, Tensor(), Tensor(), eps);
  }
  return p;
}

std::pair<double, double> moments(const std::vector<float>& v) {
  double m = 0, var = 0;
  for (float a : v) m += static_cast<double>(a);
  m /= static_cast<double>(v.size());
  for (float a : v) var += (static_cast<double>(a) - m) * (static_cast<double>(a) - m);
  return {m, var / static_cast<double>(v.size())};
}

}  // namespace

ToyBlockResult run_toy_block(const std::vector<float>& xv, float strength, float eps,
                             const std::string& wiring) {
  if (wiring != "pre" && wiring != "post")
    throw Error("toyblock: --norm must be pre, post or both, got '" + wiring + "'");
  if (xv.size() < 2) throw Error("toyblock: --x needs at least 2 values");
  const bool pre = wiring == "pre";
  const auto n = static_cast<int64_t>(xv.size());
  ToyBlockResult r;
  r.wiring = wiring;
  r.formula = pre ? "y = x + F(LayerNorm(x))" : "y = LayerNorm(x + F(x))";
  {
    NoGradGuard no_grad;
    Pass p = forward(Tensor::from(Shape{n}, xv), strength, eps, pre);
    r.x = xv;
    r.f_input = p.f_input.to_vector();
    r.f = p.f.to_vector();
    r.residual_sum = p.sum.to_vector();
    r.output = p.out.to_vector();
    std::tie(r.mean, r.variance) = moments(pre ? r.x : r.residual_sum);
  }
  for (int64_t i = 0; i < n; ++i) {  // row i of the Jacobian: d out_i / d x
    Tensor x = Tensor::from(Shape{n}, xv, true);
    Pass p = forward(x, strength, eps, pre);
    sum(slice_last(p.out, i, 1)).backward();
    r.jacobian.push_back(x.grad().to_vector());
  }
  return r;
}

}  // namespace sl

// Central differences in float inputs, loss accumulated in double.
#include "support/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/autograd.h"
#include "core/rng.h"

namespace sl::testing {
namespace {

double projected(const Tensor& out, const std::vector<double>& r) {
  double s = 0.0;
  const float* p = out.data();
  for (size_t i = 0; i < r.size(); ++i) s += r[i] * static_cast<double>(p[i]);
  return s;
}

}  // namespace

Tensor randn(const Shape& shape, uint64_t seed, float std, bool requires_grad) {
  Rng rng(seed);
  Tensor t = Tensor::empty(shape, requires_grad);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.normal(0.0f, std);
  return t;
}

Tensor uniform(const Shape& shape, uint64_t seed, float lo, float hi, bool requires_grad) {
  Rng rng(seed);
  Tensor t = Tensor::empty(shape, requires_grad);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.uniform(lo, hi);
  return t;
}

::testing::AssertionResult grad_check(const TensorFn& f, std::vector<Tensor> inputs,
                                      const GradCheck& opt) {
  Rng rng(opt.seed);
  for (auto& t : inputs) t.zero_grad();

  // Analytic: seed the output's gradient with r through a one-off node.
  Tensor out = f(inputs);
  std::vector<double> r(static_cast<size_t>(out.numel()));
  for (auto& v : r) v = rng.normal();
  if (!out.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  Tensor loss = Tensor::scalar(static_cast<float>(projected(out, r)));
  attach(loss, "grad_check_projection", {out}, [out, r](TensorImpl&) {
    float* g = grad_of(out);
    for (size_t i = 0; i < r.size(); ++i) g[i] += static_cast<float>(r[i]);
  });
  loss.backward();

  std::ostringstream failures;
  int n_bad = 0, n_checked = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    if (!x.has_grad())
      return ::testing::AssertionFailure() << "input " << k << " received no gradient";
    std::vector<float> analytic(x.grad().data(), x.grad().data() + x.numel());
    std::vector<int64_t> idx;
    if (x.numel() <= opt.max_elements) {
      for (int64_t i = 0; i < x.numel(); ++i) idx.push_back(i);
    } else {
      for (int i = 0; i < opt.max_elements; ++i)
        idx.push_back(static_cast<int64_t>(rng.below(static_cast<uint64_t>(x.numel()))));
    }
    NoGradGuard no_grad;
    for (int64_t i : idx) {
      float* p = x.data() + i;
      const float saved = *p;
      *p = saved + static_cast<float>(opt.eps);
      const double lp = projected(f(inputs), r);
      *p = saved - static_cast<float>(opt.eps);
      const double lm = projected(f(inputs), r);
      *p = saved;
      const double numeric = (lp - lm) / (2.0 * opt.eps);
      const double a = analytic[static_cast<size_t>(i)];
      ++n_checked;
      if (!(std::fabs(a - numeric) <= opt.atol + opt.rtol * std::fabs(numeric))) {
        if (++n_bad <= 8)
          failures << "\n  input " << k << " " << x.shape().str() << " element " << i
                   << ": analytic " << a << " vs numeric " << numeric;
      }
    }
  }
  if (n_checked == 0) return ::testing::AssertionFailure() << "no input requires grad";
  if (n_bad)
    return ::testing::AssertionFailure()
           << n_bad << " of " << n_checked << " gradient entries differ" << failures.str();
  return ::testing::AssertionSuccess() << n_checked << " entries match";
}

}  // namespace sl::testing

// `stacklab toyblock`: a worked 4-number example of y = x + F(Norm(x)), printed as a table
// for pre-norm and post-norm, with the Jacobian d(output)/dx and its identity part.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "nn/toyblock.h"
#include "util/error.h"

namespace sl {
namespace {

void print_row(const char* label, const std::vector<float>& v) {
  std::printf("  %-34s [", label);
  for (size_t i = 0; i < v.size(); ++i)
    std::printf("%s%7.3f", i ? ", " : "", static_cast<double>(v[i]));
  std::printf("]\n");
}

void print_result(const ToyBlockResult& r) {
  const bool pre = r.wiring == "pre";
  std::printf("%s-norm: %s\n", r.wiring.c_str(), r.formula.c_str());
  std::printf("  %s: mean %.3f, variance %.3f\n",
              pre ? "statistics of x (normalized)" : "statistics of x + F(x) (normalized)", r.mean,
              r.variance);
  print_row("residual input x", r.x);
  print_row(pre ? "input of F = LayerNorm(x)" : "input of F = x", r.f_input);
  print_row("branch update F", r.f);
  print_row(pre ? "residual sum x + F(LayerNorm(x))" : "residual sum x + F(x)", r.residual_sum);
  print_row(pre ? "block output (= residual sum)" : "block output LayerNorm(x + F(x))", r.output);
  std::printf("  Jacobian d(output)/dx%s:\n", pre ? " = I + dF/dx (identity from the skip)" : "");
  for (size_t i = 0; i < r.jacobian.size(); ++i) {
    std::printf("   ");
    for (float v : r.jacobian[i]) std::printf(" %7.3f", static_cast<double>(v));
    if (pre) {
      std::printf("    branch part:");
      for (size_t j = 0; j < r.jacobian[i].size(); ++j)
        std::printf(" %7.3f", static_cast<double>(r.jacobian[i][j]) - (i == j ? 1.0 : 0.0));
    }
    std::printf("\n");
  }
  std::printf("\n");
}

}  // namespace

int cmd_toyblock(const ArgList& argv) {
  Args a = parse_args("toyblock", argv, {"x", "strength", "norm", "eps"}, {}, false);
  if (!a.positional.empty()) throw Error("unexpected argument '" + a.positional[0] + "'");
  const std::vector<float> x = parse_float_list("x", a.get("x", "1,-1,2,0"));
  const auto s = static_cast<float>(a.get_double("strength", 0.8));
  const auto eps = static_cast<float>(a.get_double("eps", 1e-5));
  if (!(eps > 0)) throw Error("--eps: must be > 0");
  const std::string norm = a.get("norm", "both");
  if (norm != "pre" && norm != "post" && norm != "both")
    throw Error("--norm: expected pre, post or both, got '" + norm + "'");
  std::vector<ToyBlockResult>
      results;  // computed before anything is printed: a bad --x prints only the error
  for (const char* w : {"pre", "post"})
    if (norm == "both" || norm == w) results.push_back(run_toy_block(x, s, eps, w));
  std::printf(
      "toy block: F(v)_i = %.3g * tanh(0.6 v_i + 0.3 v_((i+1) mod %zu)), LayerNorm eps %.3g, gamma "
      "1, beta 0\n\n",
      static_cast<double>(s), x.size(), static_cast<double>(eps));
  for (const auto& r : results) print_result(r);
  return kExitOk;
}

}  // namespace sl

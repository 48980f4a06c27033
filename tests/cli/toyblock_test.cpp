// `stacklab toyblock`: prints the worked 4-number example of x + F(norm(x)) (docs/study.md)
// and the post-norm block, each checked against values worked out by hand.
#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using testing::run_stacklab;

// The line of `output` that starts (after indentation) with `label`, or "".
std::string line_with(const std::string& output, const std::string& label) {
  const size_t at = output.find(label);
  if (at == std::string::npos) return "";
  return output.substr(at, output.find('\n', at) - at);
}

TEST(ToyblockCommand, PrintsTheSeedNumbersOfThePreNormBlock) {
  const auto r = run_stacklab({"toyblock", "--norm", "pre"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find("mean 0.500, variance 1.250"), std::string::npos) << r;
  EXPECT_NE(
      line_with(r.output, "input of F = LayerNorm(x)").find("[  0.447,  -1.342,   1.342,  -0.447]"),
      std::string::npos)
      << r;
  EXPECT_NE(line_with(r.output, "branch update F").find("[ -0.107,  -0.306,   0.468,  -0.107]"),
            std::string::npos)
      << r;
  EXPECT_NE(line_with(r.output, "residual sum x + F(LayerNorm(x))")
                .find("[  0.893,  -1.306,   2.468,  -0.107]"),
            std::string::npos)
      << r;
  EXPECT_EQ(r.output.find("post-norm"), std::string::npos)
      << "--norm pre prints only the pre-norm block";
}

// By hand: F(x) = 0.8 tanh(0.6 x_i + 0.3 x_(i+1)) = [0.8 tanh(0.3), 0, 0.8 tanh(1.2), 0.8
// tanh(0.3)] = [0.233, 0, 0.667, 0.233]; x + F = [1.233, -1, 2.667, 0.233], mean 0.783,
// variance 1.808, LayerNorm: (x + F - 0.783) / sqrt(1.808) = [0.334, -1.326, 1.401, -0.409].
TEST(ToyblockCommand, PrintsThePostNormBlockWithItsHandCheckedValues) {
  const auto r = run_stacklab({"toyblock", "--norm", "post"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find("mean 0.783, variance 1.808"), std::string::npos) << r;
  EXPECT_NE(line_with(r.output, "branch update F").find("[  0.233,   0.000,   0.667,   0.233]"),
            std::string::npos)
      << r;
  EXPECT_NE(
      line_with(r.output, "residual sum x + F(x)").find("[  1.233,  -1.000,   2.667,   0.233]"),
      std::string::npos)
      << r;
  EXPECT_NE(line_with(r.output, "block output LayerNorm(x + F(x))")
                .find("[  0.334,  -1.326,   1.401,  -0.409]"),
            std::string::npos)
      << r;
  EXPECT_EQ(r.output.find("pre-norm"), std::string::npos)
      << "--norm post prints only the post-norm block";
  const auto both = run_stacklab({"toyblock", "--norm", "both"});
  EXPECT_NE(both.output.find("pre-norm"), std::string::npos) << both;
  EXPECT_NE(both.output.find("post-norm"), std::string::npos) << both;
}

TEST(ToyblockCommand, RejectsAnUnknownNormPosition) {
  const auto r = run_stacklab({"toyblock", "--norm", "middle"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_NE(r.output.find("--norm: expected pre, post or both, got 'middle'"), std::string::npos)
      << r;
}

}  // namespace
}  // namespace sl

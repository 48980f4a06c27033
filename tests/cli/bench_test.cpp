// `stacklab bench --profile` end to end: the op table's rows name the model's ops and, with the
// optimizer and the unattributed rest, add up to the profiled step.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "support/cli.h"

namespace sl {
namespace {

using nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::run_stacklab;
using testing::tiny_model_args;

TEST(BenchProfile, ItsRowsNameTheModelsOpsAndAddUpToTheProfiledStep) {
  const auto r = run_stacklab(
      concat(concat({"bench", base_config()}, tiny_model_args()),
             {"--steps", "2", "--warmup", "1", "--no-ceiling", "--profile", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r;
  const json j = json::parse(r.out);
  ASSERT_TRUE(j.contains("profile")) << r.out;
  double total = 0.0;
  std::set<std::string> ops;
  for (const json& row : j.at("profile")) {
    ops.insert(row.at("op").get<std::string>());
    total += row.at("forward_ms").get<double>() + row.at("backward_ms").get<double>();
    EXPECT_LE(row.at("forward_sgemm_ms").get<double>(), row.at("forward_ms").get<double>() + 1e-9);
    EXPECT_LE(row.at("backward_sgemm_ms").get<double>(),
              row.at("backward_ms").get<double>() + 1e-9);
  }
  for (const char* op : {"linear", "causal_attention", "layer_norm", "cross_entropy",
                         "optimizer (step + zero_grad)"})
    EXPECT_TRUE(ops.count(op)) << "no row '" << op << "' in " << j.at("profile").dump();
  EXPECT_NEAR(total, j.at("profiled_ms_per_step").get<double>(),
              1e-6 * j.at("profiled_ms_per_step").get<double>());
}

TEST(BenchProfile, WithoutTheFlagTheReportHasNoProfile) {
  const auto r = run_stacklab(concat(concat({"bench", base_config()}, tiny_model_args()),
                                     {"--steps", "1", "--warmup", "0", "--no-ceiling", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_FALSE(json::parse(r.out).contains("profile"));
}

}  // namespace
}  // namespace sl

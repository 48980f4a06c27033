// `stacklab bench --profile` end to end: the op table's rows name the model's ops and, with the
// optimizer and the unattributed rest, add up to the profiled step.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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

// The step `bench` times is the trainer's: with train.grad_accum_steps = 4 it runs 4 micro-batches
// (so tier.py size, which costs runs from it, no longer underestimates such runs 4-fold) and with
// model.dropout its masks. Counted, not timed: the tokens and FLOPs of a step, and the config it
// says it timed.
TEST(BenchStep, CountsEveryMicroBatchOfGradAccumStepsAndRecordsDropout) {
  const auto bench = [](const std::vector<std::string>& extra) {
    const auto r =
        run_stacklab(concat(concat(concat({"bench", base_config()}, tiny_model_args()),
                                   {"--steps", "1", "--warmup", "0", "--no-ceiling", "--json"}),
                            extra));
    EXPECT_EQ(r.exit_code, 0) << r;
    return json::parse(r.out);
  };
  const json one = bench({});
  const json four = bench({"--train.grad_accum_steps=4", "--model.dropout=0.1"});
  EXPECT_EQ(four.at("grad_accum_steps"), 4);
  EXPECT_EQ(four.at("dropout"), 0.1);
  EXPECT_EQ(four.at("tokens_per_step").get<long long>(),
            4 * one.at("tokens_per_step").get<long long>());
  EXPECT_DOUBLE_EQ(four.at("flops_per_step").get<double>(),
                   4 * one.at("flops_per_step").get<double>());
}

// The machine's limit beside the sgemm ceiling (issue 46): the cores' FP32 FMA rate in registers,
// on the widest vectors the CPU has, measured in the same rounds; counted and named, not timed
// against a bound.
TEST(BenchPeak, ReportsTheFmaPeakOfTheWidestVectorsBesideTheCeilingAndNotWithout) {
  const auto bench = [](const std::vector<std::string>& extra) {
    const auto r = run_stacklab(concat(concat({"bench", base_config()}, tiny_model_args()),
                                       concat({"--steps", "2", "--warmup", "0", "--json"}, extra)));
    EXPECT_EQ(r.exit_code, 0) << r;
    return json::parse(r.out);
  };
  const json j = bench({"--rounds", "2"});
  ASSERT_TRUE(j.contains("fma_peak_gflops")) << j.dump();
  EXPECT_GT(j.at("fma_peak_best_round_gflops").get<double>(), 0.0);
  EXPECT_TRUE(std::set<std::string>({"AVX-512", "AVX2+FMA", "scalar"})
                  .count(j.at("fma_peak_isa").get<std::string>()))
      << j.dump();
  // Short rounds before, between and after the products of each of the 2 ceiling rounds.
  EXPECT_GE(j.at("fma_peak_rounds").get<int>(), 4) << j.dump();
  EXPECT_TRUE(j.at("cpus").get<int>() >= 1) << j.dump();
  EXPECT_TRUE(j.at("peak_load_signs").is_array()) << j.dump();
  EXPECT_EQ(j.at("peak_loaded").get<bool>(), !j.at("peak_load_signs").empty()) << j.dump();
  // Whatever the load: a peak is never reported below a product measured beside it, and a ratio
  // only beside a peak.
  if (j.at("fma_peak_gflops").is_null()) {
    EXPECT_TRUE(j.at("peak_loaded").get<bool>()) << j.dump();
    EXPECT_TRUE(j.at("peak_ratio").is_null()) << j.dump();
  } else {
    const double peak = j.at("fma_peak_gflops").get<double>();
    EXPECT_DOUBLE_EQ(peak, j.at("fma_peak_best_round_gflops").get<double>());
    for (const char* product : {"gflops", "ceiling_gflops", "ceiling_build_gflops"})
      if (j.contains(product)) {
        EXPECT_GE(peak, j.at(product).get<double>()) << product << " in " << j.dump();
      }
    EXPECT_DOUBLE_EQ(j.at("peak_ratio").get<double>(), j.at("gflops").get<double>() / peak);
  }
  EXPECT_FALSE(bench({"--no-ceiling"}).contains("fma_peak_gflops"));
}

// Flags out of range are refused naming the flag, as train refuses --train.threads=-2: a negative
// thread count used to run on every core, --steps 4294967297 wrapped to 1 step, and --profile was
// ignored with --sgemm.
TEST(BenchFlags, OutOfRangeCountsAndFlagsThatDoNotApplyAreRefusedNamingTheFlag) {
  const auto refused = [](const std::vector<std::string>& flags, const std::string& part) {
    const auto r = run_stacklab(concat(concat({"bench", base_config()}, tiny_model_args()), flags));
    EXPECT_EQ(r.exit_code, 1) << r;
    EXPECT_NE(r.output.find(part), std::string::npos) << "missing '" << part << "'\n" << r;
  };
  refused({"--threads", "-3"}, "--threads: expected an integer from 0 to 4096, got -3");
  refused({"--steps", "4294967297"}, "--steps: expected an integer from 1 to");
  refused({"--warmup", "-1"}, "--warmup: expected an integer from 0 to");
  refused({"--rounds", "0"}, "--rounds: expected an integer from 1 to");
  refused({"--sgemm", "--profile"}, "--profile does not apply to --sgemm");
  refused({"--sgemm", "--steps", "3"}, "--steps does not apply to --sgemm");
}

}  // namespace
}  // namespace sl

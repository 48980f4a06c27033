// train.flush_subnormals end to end through the `stacklab` binary: on by default, recorded in the
// start record's numeric_path, in bench's numeric_path and in `stacklab --version`; off on request;
// and the losses of a residual stack (whose values stay far above the subnormal range) are the
// same bits either way.
#include <gtest/gtest.h>

#include "support/cli.h"

namespace sl {
namespace {

using testing::contains;

using nlohmann::json;
using testing::base_config;
using testing::concat;
using testing::make_temp_dir;
using testing::read_jsonl;
using testing::records_of;
using testing::run_stacklab;
using testing::tiny_model_args;

std::vector<std::string> tiny_run(const std::string& out,
                                  const std::vector<std::string>& extra = {}) {
  return concat(concat(concat({"train", base_config()}, tiny_model_args()), {"--out", out}), extra);
}

TEST(FlushSubnormals, IsOnByDefaultOffOnRequestAndRecordedInTheStartRecordsNumericPath) {
  const std::string dir = make_temp_dir("flush");
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/on", {"--train.max_iters=2"})).exit_code, 0);
  ASSERT_EQ(run_stacklab(
                tiny_run(dir + "/off", {"--train.max_iters=2", "--train.flush_subnormals=false"}))
                .exit_code,
            0);
  const json on = read_jsonl(dir + "/on/metrics.jsonl").at(0),
             off = read_jsonl(dir + "/off/metrics.jsonl").at(0);
  ASSERT_EQ(on.at("kind"), "start");
  EXPECT_EQ(on.at("numeric_path").at("flush_subnormals"), true) << on;
  EXPECT_EQ(off.at("numeric_path").at("flush_subnormals"), false) << off;
  const auto version = run_stacklab({"--version"});
  ASSERT_EQ(version.exit_code, 0) << version;
  EXPECT_TRUE(
      contains(version.out, "subnormal floats: flushed to zero (FTZ+DAZ on every compute thread)"))
      << version;
}

TEST(FlushSubnormals, LeavesTheLossesOfAResidualStackBitIdentical) {
  const std::string dir = make_temp_dir("flush");
  const std::vector<std::string> steps = {"--train.max_iters=30", "--train.eval_interval=10",
                                          "--model.residual=true"};
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/on", steps)).exit_code, 0);
  ASSERT_EQ(run_stacklab(tiny_run(dir + "/off", concat(steps, {"--train.flush_subnormals=false"})))
                .exit_code,
            0);
  const auto evals_on = records_of(read_jsonl(dir + "/on/metrics.jsonl"), "eval");
  const auto evals_off = records_of(read_jsonl(dir + "/off/metrics.jsonl"), "eval");
  ASSERT_EQ(evals_on.size(), 4u);
  ASSERT_EQ(evals_on.size(), evals_off.size());
  for (size_t i = 0; i < evals_on.size(); ++i) {
    EXPECT_EQ(evals_on[i].at("val_loss"), evals_off[i].at("val_loss")) << "eval " << i;
    EXPECT_EQ(evals_on[i].at("train_loss"), evals_off[i].at("train_loss")) << "eval " << i;
  }
}

TEST(FlushSubnormals, BenchRecordsItInItsNumericPathAndTakesTheOverride) {
  const auto bench = [](const std::vector<std::string>& extra) {
    const auto r =
        run_stacklab(concat(concat(concat({"bench", base_config()}, tiny_model_args()),
                                   {"--steps", "1", "--warmup", "0", "--no-ceiling", "--json"}),
                            extra));
    EXPECT_EQ(r.exit_code, 0) << r;
    return json::parse(r.out).at("numeric_path").at("flush_subnormals");
  };
  EXPECT_EQ(bench({}), true);
  EXPECT_EQ(bench({"--train.flush_subnormals=false"}), false);
}

}  // namespace
}  // namespace sl

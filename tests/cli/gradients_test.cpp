// `stacklab gradients CONFIG --out DIR [--checkpoint PATH]`: with a checkpoint, the weights written
// (and so the logits) are the trained run's, not the initial ones; a file that is not a checkpoint
// is refused by name. tests/parity/load_run_check.py compares these logits with stacklab.load_run.
#include <gtest/gtest.h>

#include "core/safetensors.h"
#include "support/cli.h"

namespace sl {
namespace {

using testing::concat;
using testing::run_stacklab;

bool same_values(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.data()[i] != b.data()[i]) return false;
  return true;
}

TEST(GradientsCommand, WithACheckpointWritesTheTrainedWeightsAndTheirLogits) {
  const std::string root = testing::make_temp_dir("gradients");
  const std::string run = root + "/run";
  const auto t =
      run_stacklab(concat(concat({"train", testing::base_config()}, testing::tiny_model_args()),
                          {"--train.max_iters=5", "--out", run}));
  ASSERT_EQ(t.exit_code, 0) << t;
  const std::string ckpt = run + "/checkpoints/latest.safetensors";
  const auto init = run_stacklab({"gradients", run + "/config.json", "--out", root + "/init"});
  const auto trained = run_stacklab(
      {"gradients", run + "/config.json", "--checkpoint", ckpt, "--out", root + "/trained"});
  ASSERT_EQ(init.exit_code, 0) << init;
  ASSERT_EQ(trained.exit_code, 0) << trained;

  const TensorFile saved = load_safetensors(ckpt);
  const TensorFile got = load_safetensors(root + "/trained/weights.safetensors");
  const TensorFile at_init = load_safetensors(root + "/init/weights.safetensors");
  const Tensor* w = got.find("blocks.0.attn.qkv.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(same_values(*w, *saved.find("blocks.0.attn.qkv.weight")));
  EXPECT_FALSE(same_values(*w, *at_init.find("blocks.0.attn.qkv.weight")))
      << "5 steps changed no weight?";
  EXPECT_FALSE(same_values(*load_safetensors(root + "/trained/outputs.safetensors").find("logits"),
                           *load_safetensors(root + "/init/outputs.safetensors").find("logits")));
}

// The logits load_run_check.py compares against must come from the wiring the weights were
// trained with: post-norm weights through a pre-norm config were accepted because the shapes match.
TEST(GradientsCommand, RefusesACheckpointWrittenWithAnotherConfigNamingTheKey) {
  const std::string root = testing::make_temp_dir("gradients_other");
  const std::string run = root + "/run";
  const auto t =
      run_stacklab(concat(concat({"train", testing::base_config()}, testing::tiny_model_args()),
                          {"--train.max_iters=2", "--model.norm_position=post", "--out", run}));
  ASSERT_EQ(t.exit_code, 0) << t;
  const auto r =
      run_stacklab({"gradients", run + "/config.json", "--model.norm_position=pre", "--checkpoint",
                    run + "/checkpoints/latest.safetensors", "--out", root + "/out"});
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find("'model.norm_position' is \"post\" in the checkpoint"), std::string::npos)
      << r;
}

TEST(GradientsCommand, RefusesACheckpointThatIsNotOneByName) {
  const std::string root = testing::make_temp_dir("gradients_bad");
  testing::write_text(root + "/x.safetensors", "not a safetensors file");
  const auto r =
      run_stacklab(concat(concat({"gradients", testing::base_config()}, testing::tiny_model_args()),
                          {"--checkpoint", root + "/x.safetensors", "--out", root + "/out"}));
  EXPECT_NE(r.exit_code, 0) << r;
  EXPECT_NE(r.output.find(root + "/x.safetensors"), std::string::npos) << r;
}

}  // namespace
}  // namespace sl

// Tests for the pieces the trainer is made of, at library level: a tiny model with AdamW must be
// able to memorise one fixed batch (the classic "can it overfit?" check of the whole loop:
// forward, loss, backward, optimizer). The command-level behaviour of `stacklab train` (files,
// records, resume, signals, divergence) is tested in tests/cli/train_test.cpp.
#include "train/trainer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/blas.h"
#include "core/rng.h"
#include "nn/model.h"
#include "train/optimizer.h"

namespace sl {
namespace {

std::vector<int32_t> tokens(int n, uint64_t seed, int V) {
  Rng r(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = static_cast<int32_t>(r.below(static_cast<uint64_t>(V)));
  return t;
}

TEST(Training, AdamWDrivesTheLossOnOneFixedBatchFarBelowLnV) {
  set_num_threads(1);  // tiny matrices: threads only add overhead (and contend on a busy machine)
  ModelConfig c;
  c.n_layer = 2;
  c.n_embd = 32;
  c.n_head = 2;
  c.block_size = 8;
  c.vocab_size = 16;
  Model model(c);
  model.init_weights(11);
  std::vector<ParamRef> refs;
  for (const auto& p : model.parameters()) refs.push_back({p.name, p.tensor, true});
  OptimConfig o;
  o.learning_rate = 1e-2;
  auto opt = make_optimizer(o, refs);

  const int B = 4, T = 8;
  const std::vector<int32_t> x = tokens(B * T, 1, c.vocab_size), y = tokens(B * T, 2, c.vocab_size);
  const double ln_v = std::log(static_cast<double>(c.vocab_size));
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = Model::loss(model.forward(x, B, T, ForwardMode::eval()), y);
    loss.backward();
    last = static_cast<double>(loss.item());
    if (step == 0) first = last;
    opt->step(static_cast<float>(o.learning_rate));
    opt->zero_grad();
  }
  EXPECT_NEAR(first, ln_v, 0.1) << "the initial loss should be about ln V";
  EXPECT_LT(last, 0.3 * ln_v) << "random targets can only be learned by memorising the batch";
}

TEST(Training, DefaultRunDirIsOutDirSlashName) {
  Config cfg;
  cfg.train.out_dir = "/tmp/runs";
  cfg.train.name = "quickstart";
  EXPECT_EQ(default_run_dir(cfg), "/tmp/runs/quickstart");
}

}  // namespace
}  // namespace sl

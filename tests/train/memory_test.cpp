// The memory estimate (train/memory.h): the parameter count matches the model the config builds
// for every wiring, the estimate grows with the sizes, and a config that cannot fit is refused
// with its estimate and the available memory in the message.
#include "train/memory.h"

#include <gtest/gtest.h>

#include "nn/model.h"
#include "support/wirings.h"

namespace sl {
namespace {

Config tiny() {
  Config c;
  c.model.n_layer = 2;
  c.model.n_embd = 16;
  c.model.n_head = 2;
  c.model.block_size = 8;
  c.model.vocab_size = 11;
  return c;
}

// Every wiring of the registries, each with every position embedding and with the switches
// that change the parameter set (bias, tying, attention or MLP off).
TEST(MemoryEstimate, ParameterCountMatchesTheBuiltModelForEveryWiring) {
  int checked = 0;
  for (const ModelConfig& w : testing::every_wiring(tiny().model))
    for (PosEmb pos : all_choices<PosEmb>())
      for (int variant = 0; variant < 4; ++variant) {
        ModelConfig m = w;
        m.pos_emb = pos;
        m.bias = variant != 1;
        m.tie_weights = variant == 2;
        m.mlp = variant != 3;
        if (!testing::valid(m)) continue;
        Model model(m);
        EXPECT_EQ(count_parameters(m), static_cast<double>(model.num_parameters()))
            << testing::label(m) << " pos " << name_of(pos) << " variant " << variant;
        ++checked;
      }
  EXPECT_GT(checked, 100);
}

TEST(MemoryEstimate, GrowsWithDepthWidthAndBatch) {
  const Config base = tiny();
  Config deeper = base, wider = base, bigger_batch = base;
  deeper.model.n_layer *= 2;
  wider.model.n_embd *= 2;
  bigger_batch.train.batch_size *= 2;
  const double b = estimate_memory_bytes(base);
  EXPECT_GT(b, 0);
  EXPECT_GT(estimate_memory_bytes(deeper), b);
  EXPECT_GT(estimate_memory_bytes(wider), b);
  EXPECT_GT(estimate_memory_bytes(bigger_batch), b);
}

TEST(MemoryEstimate, AtLeastWeightsGradsAndAdamMomentsInFloat32) {
  const Config c = tiny();
  EXPECT_GE(estimate_memory_bytes(c), 16.0 * count_parameters(c.model));
}

TEST(MemoryEstimate, AnAbsurdConfigIsRefusedWithTheEstimateAndTheAvailableMemory) {
  Config c = tiny();
  c.model.n_layer = 4096;
  c.model.n_embd = 65536;
  c.model.n_head = 64;
  try {
    check_memory_fits(c, 8.0 * (1ull << 30));
    FAIL() << "a 4096 x 65536 model was accepted with 8 GB";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("needs about"), std::string::npos) << msg;
    EXPECT_NE(msg.find("PB"), std::string::npos) << msg;  // ~3 PB: orders of magnitude, visibly
    EXPECT_NE(msg.find("8.0 GB is available"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model.n_layer=4096"), std::string::npos) << msg;
  }
}

TEST(MemoryEstimate, ASmallConfigFitsAndUnknownAvailableMemorySkipsTheCheck) {
  EXPECT_NO_THROW(check_memory_fits(tiny(), 1e9));
  EXPECT_THROW(check_memory_fits(tiny(), 1000.0), Error);
  EXPECT_NO_THROW(check_memory_fits(tiny(), std::nullopt));
}

TEST(MemoryEstimate, ThisMachineReportsItsAvailableMemory) {
  const auto avail = available_memory_bytes();
  ASSERT_TRUE(avail.has_value()) << "/proc/meminfo has no MemAvailable";
  EXPECT_GT(*avail, 0);
}

TEST(MemoryEstimate, FormatsBytesWithBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KB");
  EXPECT_EQ(format_bytes(3.0 * (1ull << 30)), "3.0 GB");
}

}  // namespace
}  // namespace sl

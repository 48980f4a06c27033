// Tests for train/probe: every metric the registry sends to probes appears per seed and as the
// seed mean with its documented length, the mean is the entry-wise mean of the seeds, metrics
// that need an optimizer step are left out, and the output carries the metric descriptors.
#include "train/probe.h"

#include <cmath>

#include <gtest/gtest.h>

#include "core/blas.h"
#include "core/fpmode.h"
#include "train/layer_stats.h"

namespace sl {
namespace {

Config tiny(int n_layer, bool attention) {
  set_num_threads(1);
  Config c;
  c.model.n_layer = n_layer;
  c.model.n_embd = 16;
  c.model.n_head = 2;
  c.model.block_size = 8;
  c.model.attention = attention;
  c.train.batch_size = 2;
  return c;
}

TEST(RunProbe, EveryProbedMetricHasItsLengthPerSeedAndInTheMean) {
  for (const Config& cfg : {tiny(3, true), tiny(2, false)}) {
    const nlohmann::json r = run_probe(cfg, {4, 9});
    ASSERT_EQ(r.at("seeds").size(), 2u);
    for (const LayerMetric& m : layer_metrics()) {
      const auto want = static_cast<size_t>(axis_length(m.axis, cfg.model.n_layer));
      if (m.probe == ProbeReduce::kSkip) {
        EXPECT_FALSE(r.at("mean").contains(m.name)) << m.name;
        for (const auto& s : r.at("seeds")) EXPECT_FALSE(s.at("layers").contains(m.name)) << m.name;
        continue;
      }
      ASSERT_TRUE(r.at("mean").contains(m.name)) << m.name;
      EXPECT_EQ(r.at("mean").at(m.name).size(), want) << m.name;
      for (const auto& s : r.at("seeds"))
        EXPECT_EQ(s.at("layers").at(m.name).size(), want) << m.name;
    }
    EXPECT_EQ(r.at("layer_metrics"), layer_metrics_json());
  }
}

TEST(RunProbe, MeanIsTheEntryWiseMeanOfTheSeedsAndNullWithoutAttention) {
  const nlohmann::json r = run_probe(tiny(2, true), {1, 2, 3});
  for (const char* key : {"attn_entropy", "attn_logit_max", "stream_cos", "grad_norm"})
    for (size_t l = 0; l < 2; ++l) {
      double sum = 0.0;
      for (const auto& s : r.at("seeds")) sum += s.at("layers").at(key).at(l).get<double>();
      EXPECT_NEAR(r.at("mean").at(key).at(l).get<double>(), sum / 3.0, 1e-12) << key << " " << l;
    }
  EXPECT_NE(r.at("seeds")[0].at("layers").at("attn_entropy"),
            r.at("seeds")[1].at("layers").at("attn_entropy"))
      << "different seeds should give different attention";
  const nlohmann::json off = run_probe(tiny(2, false), {1});
  for (const auto& v : off.at("mean").at("attn_entropy")) EXPECT_TRUE(v.is_null());
}

// model.emb_scale "unit" starts the stream (boundary 0, the embedding) at unit scale: sqrt(2)
// with a learned position table, where N(0, 0.02) tables give about 0.02 sqrt(2). The probe
// reports the branch / stream ratio and the first / last ratio under either.
TEST(RunProbe, UnitEmbScaleStartsTheStreamAtUnitScale) {
  Config cfg = tiny(2, true);
  cfg.model.n_embd = 64;
  cfg.model.n_head = 4;
  const nlohmann::json small = run_probe(cfg, {1});
  cfg.model.emb_scale = EmbScale::Unit;
  const nlohmann::json unit = run_probe(cfg, {1});
  EXPECT_NEAR(small.at("mean").at("act_rms").at(0).get<double>(), 0.02 * std::sqrt(2.0), 0.006);
  EXPECT_NEAR(unit.at("mean").at("act_rms").at(0).get<double>(), std::sqrt(2.0), 0.3);
  for (const nlohmann::json* r : {&small, &unit}) {
    EXPECT_TRUE(r->at("ratio_first_last").is_number());
    for (const auto& v : r->at("mean").at("branch_ratio")) EXPECT_TRUE(v.is_number());
  }
  EXPECT_LT(unit.at("mean").at("branch_ratio").at(0).get<double>(),
            small.at("mean").at("branch_ratio").at(0).get<double>())
      << "the same branches next to a larger stream";
}

TEST(RunProbe, FlushesSubnormalsAsTrainFlushSubnormalsSays) {
  if (!can_flush_subnormals())
    GTEST_SKIP() << "this build has no flush-to-zero control for this CPU";
  Config cfg = tiny(2, true);
  cfg.train.flush_subnormals = false;
  run_probe(cfg, {1});
  EXPECT_FALSE(flush_subnormals_on());
  cfg.train.flush_subnormals = true;
  run_probe(cfg, {1});
  EXPECT_TRUE(flush_subnormals_on());
}

}  // namespace
}  // namespace sl

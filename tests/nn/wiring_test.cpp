// The wiring registries (nn/wiring.h): the printed formula of every wiring, run ids, derived
// values, the registry listing, and each entry's choice spelled in config/choices.h.
#include "nn/wiring.h"

#include <gtest/gtest.h>

#include <set>

#include "support/wirings.h"

namespace sl {
namespace {
using json = nlohmann::json;

ModelConfig wiring(const std::string& pos, const std::string& norm, bool residual,
                   const std::string& scale = "none") {
  ModelConfig m;
  m.norm_position = parse_choice<NormPosition>(pos).value();
  m.norm = parse_choice<NormKind>(norm).value();
  m.residual = residual;
  m.residual_scale = parse_choice<ResidualScale>(scale).value();
  return m;
}

TEST(Wiring, WiringIsDescribedByItsFormula) {
  EXPECT_EQ(describe_wiring(wiring("pre", "layernorm", true)),
            "pre-norm residual: x + f(layernorm(x))");
  EXPECT_EQ(describe_wiring(wiring("post", "layernorm", true)),
            "post-norm residual: layernorm(x + f(x))");
  EXPECT_EQ(describe_wiring(wiring("sandwich", "rmsnorm", true)),
            "sandwich residual: x + rmsnorm2(f(rmsnorm1(x)))");
  EXPECT_EQ(describe_wiring(wiring("pre", "rmsnorm", false)),
            "pre-norm, no residual: f(rmsnorm(x))");
  EXPECT_EQ(describe_wiring(wiring("post", "layernorm", false)),
            "post-norm, no residual: layernorm(f(x))");
  EXPECT_EQ(describe_wiring(wiring("sandwich", "layernorm", false)),
            "sandwich, no residual: layernorm2(f(layernorm1(x)))");
  EXPECT_EQ(describe_wiring(wiring("pre", "none", true)), "no-norm residual: x + f(x)");
  EXPECT_EQ(describe_wiring(wiring("post", "none", false)), "no-norm, no residual: f(x)");
  EXPECT_EQ(describe_wiring(wiring("pre", "layernorm", true, "rezero")),
            "pre-norm residual (rezero): x + a*f(layernorm(x)), a=0 at init");
}

TEST(Wiring, DeepnormDescriptionShowsItsAlpha) {
  ModelConfig m = wiring("post", "layernorm", true, "deepnorm");
  m.n_layer = 8;  // (2 * 8)^(1/4) = 2
  EXPECT_EQ(
      describe_wiring(m),
      "post-norm residual (deepnorm): layernorm(alpha*x + f(x)), alpha=(2N)^(1/4)=2.000 for N=8");
}

TEST(Wiring, WiringIdsAreShortAndDistinct) {
  EXPECT_EQ(wiring_id(wiring("pre", "layernorm", true)), "pre-layernorm-res");
  EXPECT_EQ(wiring_id(wiring("post", "rmsnorm", false)), "post-rmsnorm-nores");
  EXPECT_EQ(wiring_id(wiring("pre", "none", true)), "none-res");
  EXPECT_EQ(wiring_id(wiring("pre", "layernorm", true, "rezero")), "pre-layernorm-res-rezero");
  EXPECT_EQ(wiring_id(wiring("post", "layernorm", true, "deepnorm")),
            "post-layernorm-res-deepnorm");
}

TEST(Wiring, DerivedValuesAreReportedApartFromTheKeys) {
  Config c;
  c.train.max_iters = 500;
  const json d = derived_json(c);
  EXPECT_EQ(d["final_norm"], true);
  EXPECT_EQ(d["wiring"], "pre-layernorm-res");
  EXPECT_EQ(d["lr_decay_iters"], 500);
}

TEST(Wiring, NewWiringsAreDescribedByTheirFormula) {
  ModelConfig m = wiring("pre", "dyt", true, "layerscale");
  EXPECT_EQ(describe_wiring(m),
            "pre-norm residual (layerscale): x + diag(lambda)*f(dyt(x)), lambda=0.1 at init");
  EXPECT_EQ(wiring_id(m), "pre-dyt-res-layerscale");
  m = wiring("pre", "rmsnorm", true);
  m.qk_norm = true;
  m.norm_scaling = NormScaling::Depth;
  EXPECT_EQ(describe_wiring(m),
            "pre-norm residual: x + f(rmsnorm(x)), norm outputs norm(x) / sqrt(l), l the 1-based "
            "block index, "
            "qk-norm: rmsnorm on q and k per head");
  EXPECT_EQ(wiring_id(m), "pre-rmsnorm-res-lns-qknorm");
}

// The default attention kind adds nothing to a name (run names made before the key stay the
// same); shaped attention and its control add their name and their formula.
TEST(Wiring, ShapedAttentionIsNamedInTheIdAndTheFormulaAndTheDefaultIsNot) {
  ModelConfig m = wiring("pre", "layernorm", false);
  EXPECT_EQ(wiring_id(m), "pre-layernorm-nores");
  EXPECT_EQ(describe_wiring(m), "pre-norm, no residual: f(layernorm(x))");
  m.attention_kind = AttentionKind::Shaped;
  EXPECT_EQ(wiring_id(m), "pre-layernorm-nores-shaped");
  EXPECT_EQ(describe_wiring(m),
            "pre-norm, no residual: f(layernorm(x)), attention shaped: A = alpha I + beta "
            "softmax(q k^T / sqrt(HS) + causal mask) - gamma C, C_ts = 1/(t+1) for s <= t "
            "(uniform causal); alpha, beta, gamma learnable per head, 1 at init, query weights 0 "
            "at init: A = I at init (He & Hofmann 2024)");
  m.attention_kind = AttentionKind::ShapedNoIdentity;
  EXPECT_EQ(wiring_id(m), "pre-layernorm-nores-shaped_no_identity");
  const json r = registry_json();
  EXPECT_EQ(r["attention_kind"][0]["params"], json::array());
  EXPECT_EQ(r["attention_kind"][1]["params"].size(), 3u);
  EXPECT_EQ(r["attention_kind"][1]["params"][0]["name"], "alpha");
  EXPECT_EQ(r["attention_kind"][1]["params"][0]["shape"], json::array({ModelConfig{}.n_head}));
  EXPECT_EQ(r["attention_kind"][2]["params"][0]["name"], "beta");
}

TEST(Wiring, EveryWiringHasADistinctIdAndAFormula) {
  std::set<std::string> ids;
  for (const ModelConfig& m : testing::every_wiring(ModelConfig{})) {
    EXPECT_TRUE(ids.insert(wiring_id(m)).second) << "two wirings share the id " << wiring_id(m);
    EXPECT_NE(describe_wiring(m).find(": "), std::string::npos) << wiring_id(m);
  }
}

TEST(Wiring, EveryChoiceHasASpellingAndARegistryEntry) {
  const json r = registry_json();
  auto listed = [&](const char* axis, const std::vector<std::string>& names) {
    ASSERT_TRUE(r.contains(axis)) << axis;
    std::vector<std::string> got;
    for (const auto& e : r[axis]) {
      got.push_back(e["name"]);
      EXPECT_FALSE(e["formula"].get<std::string>().empty()) << axis << " " << e["name"];
    }
    EXPECT_EQ(got, names) << axis;
  };
  listed("norm", choice_names<NormKind>());
  listed("norm_position", choice_names<NormPosition>());
  listed("residual_scale", choice_names<ResidualScale>());
  listed("norm_scaling", choice_names<NormScaling>());
  listed("activation", choice_names<Activation>());
  listed("pos_emb", choice_names<PosEmb>());
  listed("emb_scale", choice_names<EmbScale>());
  listed("attention_kind", choice_names<AttentionKind>());
  for (NormKind k : all_choices<NormKind>()) EXPECT_EQ(parse_choice<NormKind>(name_of(k)), k);
  EXPECT_EQ(parse_choice<NormKind>("batchnorm"), std::nullopt);
}

}  // namespace
}  // namespace sl

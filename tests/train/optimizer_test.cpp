// Tests for train/optimizer: AdamW and SGD against numbers printed by PyTorch 1.13
// (tests/parity/optim_reference.py, whose fixture this file repeats), decoupled vs coupled weight
// decay, gradient norms and clipping, update norms, and checkpoint state round trips.
#include "train/optimizer.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace sl {
namespace {

// ---- the fixture of tests/parity/optim_reference.py ------------------------------------
const std::vector<float> kW0 = {0.5f, -1.25f, 2.0f, 0.75f, -0.1f, 0.0f};  // "w", (2,3), decay
const std::vector<float> kB0 = {0.3f, -0.6f, 1.1f};                       // "b", (3), exempt
const std::vector<std::vector<float>> kGradsW = {{0.1f, -0.2f, 0.3f, 1e-4f, 2.0f, -0.5f},
                                                 {-0.3f, 0.05f, 0.3f, 2e-4f, -1.0f, 0.25f},
                                                 {0.2f, 0.2f, -0.1f, -1e-4f, 3.0f, 0.0f}};
const std::vector<std::vector<float>> kGradsB = {
    {0.01f, -0.02f, 0.5f}, {0.02f, 0.04f, -0.5f}, {-0.01f, 0.0f, 0.25f}};
const float kLrs[3] = {0.1f, 0.05f, 0.025f};

struct Expected {
  std::vector<float> w, b;
};

std::vector<ParamRef> fixture_params() {
  return {{"w", Tensor::from(Shape{2, 3}, kW0, true), true},
          {"b", Tensor::from(Shape{3}, kB0, true), false}};
}

void set_grad(Tensor& t, const std::vector<float>& g) {
  float* d = t.grad_data();
  for (size_t i = 0; i < g.size(); ++i) d[i] = g[i];
}

void expect_values(const Tensor& t, const std::vector<float>& want, float tol,
                   const std::string& what) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.data()[i], want[i], tol) << what << " element " << i;
}

// Runs three steps of the reference fixture and compares with torch after each. With GCC the
// results are bit-identical; the tolerance (about 2 ulp at 2.0) allows a compiler that contracts
// a*b + c into an fma where torch does not.
void run_against_torch(const OptimConfig& cfg, const std::vector<Expected>& torch_values) {
  auto opt = make_optimizer(cfg, fixture_params());
  auto params = opt->params();
  for (int k = 0; k < 3; ++k) {
    set_grad(params[0].tensor, kGradsW[k]);
    set_grad(params[1].tensor, kGradsB[k]);
    opt->step(kLrs[k]);
    const std::string when = name_of(cfg.name) + " after step " + std::to_string(k + 1);
    expect_values(params[0].tensor, torch_values[k].w, 3e-7f, when + ", w");
    expect_values(params[1].tensor, torch_values[k].b, 3e-7f, when + ", b");
  }
  EXPECT_EQ(opt->steps(), 3);
}

OptimConfig adamw_config() {
  OptimConfig c;
  c.name = OptimizerKind::AdamW;
  c.beta1 = 0.9;
  c.beta2 = 0.95;
  c.eps = 1e-3;  // large, so that eps inside vs outside the sqrt would show
  c.weight_decay = 0.1;
  return c;
}

OptimConfig sgd_config(bool nesterov) {
  OptimConfig c;
  c.name = OptimizerKind::Sgd;
  c.momentum = 0.9;
  c.nesterov = nesterov;
  c.weight_decay = 0.1;
  return c;
}

TEST(AdamW, ThreeStepsMatchTorchAdamWWithDecayOnlyOnDecayParams) {
  // /usr/bin/python3 tests/parity/optim_reference.py, section "AdamW".
  run_against_torch(
      adamw_config(),
      {{{0.395990103f, -1.13799751f, 1.88033223f, 0.733409107f, -0.198950022f, 0.0998004004f},
        {0.209090918f, -0.504761934f, 1.00019968f}},
       {{0.418367118f, -1.10873282f, 1.82109666f, 0.723159254f, -0.211365208f, 0.112685747f},
        {0.164020449f, -0.522377789f, 1.00282598f}},
       {{0.41685608f, -1.11054957f, 1.80129838f, 0.720050156f, -0.226569295f, 0.117640786f},
        {0.154209793f, -0.529224217f, 0.998430669f}}});
}

TEST(AdamW, WeightDecayShrinksOnlyDecayParamsByOneMinusLrTimesDecay) {
  OptimConfig cfg = adamw_config();
  cfg.weight_decay = 0.5;
  auto opt = make_optimizer(cfg, fixture_params());
  auto params = opt->params();
  set_grad(params[0].tensor, std::vector<float>(6, 0.0f));  // zero grads: Adam's own update is 0
  set_grad(params[1].tensor, std::vector<float>(3, 0.0f));
  opt->step(0.2f);
  std::vector<float> shrunk;
  for (float x : kW0) shrunk.push_back(x * 0.9f);  // 1 - 0.2*0.5
  expect_values(params[0].tensor, shrunk, 1e-7f, "decayed w");
  expect_values(params[1].tensor, kB0, 0.0f, "exempt b");
}

TEST(Sgd, MomentumThreeStepsMatchTorchSgd) {
  // /usr/bin/python3 tests/parity/optim_reference.py, section "SGD ... nesterov False".
  run_against_torch(
      sgd_config(false),
      {{{0.484999985f, -1.21749997f, 1.95000005f, 0.742489994f, -0.298999995f, 0.0500000007f},
        {0.299000025f, -0.59800005f, 1.05000007f}},
       {{0.490824997f, -1.19928741f, 1.90275002f, 0.735388041f, -0.337054998f, 0.0597500019f},
        {0.297550023f, -0.599100053f, 1.05250013f}},
       {{0.487219185f, -1.19309354f, 1.87923062f, 0.730356216f, -0.428337127f, 0.0639881268f},
        {0.297147512f, -0.59959507f, 1.04737508f}}});
}

TEST(Sgd, NesterovThreeStepsMatchTorchSgd) {
  // /usr/bin/python3 tests/parity/optim_reference.py, section "SGD ... nesterov True".
  run_against_torch(
      sgd_config(true),
      {{{0.471500009f, -1.18824995f, 1.90499997f, 0.735731006f, -0.478100002f, 0.0949999988f},
        {0.298100024f, -0.596200049f, 1.005f}},
       {{0.489445746f, -1.16854906f, 1.83815253f, 0.725681007f, -0.459153056f, 0.0905974954f},
        {0.295795023f, -0.599190056f, 1.03225005f}},
       {{0.48000735f, -1.16518164f, 1.81512618f, 0.719376147f, -0.614521682f, 0.0940247849f},
        {0.295682788f, -0.599635541f, 1.02138758f}}});
}

TEST(Optimizer, ParamsWithoutGradAreSkippedAndReportZeroUpdate) {
  auto opt = make_optimizer(adamw_config(), fixture_params());
  auto params = opt->params();
  set_grad(params[0].tensor, kGradsW[0]);  // b gets no gradient at all
  opt->step(0.1f);
  expect_values(params[1].tensor, kB0, 0.0f, "b without grad");
  EXPECT_GT(opt->last_update_norms()[0], 0.0);
  EXPECT_EQ(opt->last_update_norms()[1], 0.0);
}

TEST(Optimizer, LastUpdateNormsEqualTheNormOfTheParameterChange) {
  for (const std::string name : {"adamw", "sgd"}) {
    OptimConfig cfg = name == "adamw" ? adamw_config() : sgd_config(false);
    auto opt = make_optimizer(cfg, fixture_params());
    auto params = opt->params();
    for (int k = 0; k < 2; ++k) {
      std::vector<std::vector<float>> before = {params[0].tensor.to_vector(),
                                                params[1].tensor.to_vector()};
      set_grad(params[0].tensor, kGradsW[k]);
      set_grad(params[1].tensor, kGradsB[k]);
      opt->step(kLrs[k]);
      ASSERT_EQ(opt->last_update_norms().size(), 2u);
      for (size_t p = 0; p < 2; ++p) {
        double s = 0.0;
        for (size_t i = 0; i < before[p].size(); ++i) {
          const double d = static_cast<double>(params[p].tensor.data()[i]) - before[p][i];
          s += d * d;
        }
        EXPECT_GT(s, 0.0);
        EXPECT_DOUBLE_EQ(opt->last_update_norms()[p], std::sqrt(s)) << name << " param " << p;
      }
    }
  }
}

TEST(Optimizer, ZeroGradZeroesEveryGradientInPlace) {
  auto opt = make_optimizer(adamw_config(), fixture_params());
  auto params = opt->params();
  set_grad(params[0].tensor, kGradsW[0]);
  set_grad(params[1].tensor, kGradsB[0]);
  opt->zero_grad();
  EXPECT_EQ(global_grad_norm(params), 0.0);
  EXPECT_TRUE(params[0].tensor.has_grad());
}

// ---- gradient norms and clipping ----------------------------------------------------------

TEST(GradNorm, GlobalNormIsTheRootOfSummedSquaresOverParamsWithGrads) {
  std::vector<ParamRef> params = {{"a", Tensor::zeros(Shape{2}, true), true},
                                  {"b", Tensor::zeros(Shape{1}, true), true},
                                  {"c", Tensor::zeros(Shape{3}, true), false}};
  set_grad(params[0].tensor, {3.0f, 0.0f});
  set_grad(params[1].tensor, {4.0f});  // c has no gradient
  EXPECT_DOUBLE_EQ(global_grad_norm(params), 5.0);
  const std::vector<double> per = grad_norms(params);
  ASSERT_EQ(per.size(), 3u);
  EXPECT_DOUBLE_EQ(per[0], 3.0);
  EXPECT_DOUBLE_EQ(per[1], 4.0);
  EXPECT_DOUBLE_EQ(per[2], 0.0);
}

TEST(GradNorm, ParamNormsAreThePerParamEuclideanNorms) {
  std::vector<ParamRef> params = {{"a", Tensor::from(Shape{2}, {3.0f, 4.0f}), true},
                                  {"b", Tensor::from(Shape{1}, {-2.0f}), false}};
  EXPECT_EQ(param_norms(params), (std::vector<double>{5.0, 2.0}));
}

TEST(ClipGradNorm, ReturnsThePreClipNormAndScalesLikeTorch) {
  // /usr/bin/python3 tests/parity/optim_reference.py, section "clip_grad_norm_", step-1 gradients.
  std::vector<ParamRef> params = fixture_params();
  set_grad(params[0].tensor, kGradsW[0]);
  set_grad(params[1].tensor, kGradsB[0]);
  EXPECT_NEAR(clip_grad_norm(params, 1.0), 2.1541822, 1e-6);
  expect_values(
      params[0].tensor.grad(),
      {0.0464213081f, -0.0928426161f, 0.139263928f, 4.64213044e-05f, 0.928426147f, -0.232106537f},
      2.5e-7f, "clipped w.grad");
  expect_values(params[1].tensor.grad(), {0.00464213081f, -0.00928426161f, 0.232106537f}, 1e-7f,
                "clipped b.grad");
  EXPECT_NEAR(global_grad_norm(params), 1.0, 1e-5);
}

TEST(ClipGradNorm, LeavesGradientsAloneWhenTheNormIsWithinTheLimit) {
  std::vector<ParamRef> params = fixture_params();
  set_grad(params[0].tensor, kGradsW[0]);
  set_grad(params[1].tensor, kGradsB[0]);
  const double norm = global_grad_norm(params);
  EXPECT_EQ(clip_grad_norm(params, 10.0), norm);
  expect_values(params[0].tensor.grad(), kGradsW[0], 0.0f, "unclipped w.grad");
}

TEST(ClipGradNorm, ReturnsANonFiniteNormAsIsWithoutTouchingGradients) {
  std::vector<ParamRef> params = fixture_params();
  set_grad(params[0].tensor, kGradsW[0]);
  params[0].tensor.grad_data()[1] = std::numeric_limits<float>::infinity();
  set_grad(params[1].tensor, kGradsB[0]);
  EXPECT_TRUE(std::isinf(clip_grad_norm(params, 1.0)));
  EXPECT_EQ(params[0].tensor.grad().data()[0], kGradsW[0][0]);
  params[0].tensor.grad_data()[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(clip_grad_norm(params, 1.0)));
}

TEST(ClipGradNorm, RejectsANonPositiveMaxNorm) {
  std::vector<ParamRef> params = fixture_params();
  EXPECT_THROW(clip_grad_norm(params, 0.0), Error);
}

// ---- state round trip ---------------------------------------------------------------------

std::vector<ParamRef> clone_params(const std::vector<ParamRef>& params) {
  std::vector<ParamRef> out;
  for (const ParamRef& p : params) {
    Tensor t = p.tensor.clone();
    t.set_requires_grad(true);
    if (p.tensor.has_grad()) set_grad(t, p.tensor.grad().to_vector());
    out.push_back({p.name, t, p.decay});
  }
  return out;
}

void expect_round_trip_is_bit_exact(const OptimConfig& cfg) {
  auto uninterrupted = make_optimizer(cfg, fixture_params());
  auto params = uninterrupted->params();
  for (int k = 0; k < 2; ++k) {
    set_grad(params[0].tensor, kGradsW[k]);
    set_grad(params[1].tensor, kGradsB[k]);
    uninterrupted->step(kLrs[k]);
  }
  const StateTensors saved = uninterrupted->state_tensors();
  auto resumed = make_optimizer(cfg, clone_params(params));
  resumed->load_state_tensors(saved, uninterrupted->steps());
  EXPECT_EQ(resumed->steps(), 2);

  for (auto* opt : {uninterrupted.get(), resumed.get()}) {
    auto ps = opt->params();
    set_grad(ps[0].tensor, kGradsW[2]);
    set_grad(ps[1].tensor, kGradsB[2]);
    opt->step(kLrs[2]);
  }
  for (size_t p = 0; p < 2; ++p) {
    const std::vector<float> a = uninterrupted->params()[p].tensor.to_vector();
    const std::vector<float> b = resumed->params()[p].tensor.to_vector();
    EXPECT_EQ(a, b) << cfg.name << " param " << p << " differs after resuming";
  }
  EXPECT_EQ(uninterrupted->last_update_norms(), resumed->last_update_norms());
}

TEST(OptimizerState, AdamWResumedFromSavedStateStepsBitForBitLikeTheUninterruptedRun) {
  expect_round_trip_is_bit_exact(adamw_config());
}

TEST(OptimizerState, SgdResumedFromSavedStateStepsBitForBitLikeTheUninterruptedRun) {
  expect_round_trip_is_bit_exact(sgd_config(true));
}

TEST(OptimizerState, StateTensorsAreNamedByOptimizerKindAndParam) {
  auto adam = make_optimizer(adamw_config(), fixture_params());
  std::vector<std::string> names;
  for (const auto& [name, t] : adam->state_tensors()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"adamw.m.w", "adamw.v.w", "adamw.step.w", "adamw.m.b",
                                             "adamw.v.b", "adamw.step.b"}));
  auto sgd = make_optimizer(sgd_config(false), fixture_params());
  ASSERT_EQ(sgd->state_tensors().size(), 2u);
  EXPECT_EQ(sgd->state_tensors()[0].first, "sgd.momentum.w");
}

// Expects load_state_tensors to throw an sl::Error whose message contains `needle`.
void expect_load_error(Optimizer& opt, const StateTensors& state, const std::string& needle) {
  try {
    opt.load_state_tensors(state, 2);
    FAIL() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(OptimizerState, LoadingWithAMissingEntryThrowsNamingIt) {
  auto opt = make_optimizer(adamw_config(), fixture_params());
  StateTensors state = opt->state_tensors();
  state.erase(state.begin() + 4);  // adamw.v.b
  expect_load_error(*opt, state, "'adamw.v.b'");
}

TEST(OptimizerState, LoadingAnEntryOfTheWrongShapeThrowsNamingItAndBothShapes) {
  auto opt = make_optimizer(sgd_config(false), fixture_params());
  StateTensors state = opt->state_tensors();
  state[0].second = Tensor::zeros(Shape{3, 2});
  expect_load_error(*opt, state, "'sgd.momentum.w' has shape (3,2), expected (2,3)");
}

TEST(OptimizerState, LoadingAnUnexpectedEntryThrowsNamingIt) {
  auto opt = make_optimizer(sgd_config(false), fixture_params());
  StateTensors state = opt->state_tensors();
  state.emplace_back("sgd.momentum.extra", Tensor::zeros(Shape{1}));
  expect_load_error(*opt, state, "'sgd.momentum.extra'");
}

TEST(OptimizerState, AFailedLoadLeavesTheOptimizerUnchanged) {
  auto opt = make_optimizer(adamw_config(), fixture_params());
  StateTensors state = opt->state_tensors();
  for (auto& [name, t] : state) t.data()[0] = 7.0f;
  state.pop_back();  // adamw.step.b missing: found only after the w entries were checked
  EXPECT_THROW(opt->load_state_tensors(state, 2), Error);
  EXPECT_EQ(opt->state_tensors()[0].second.data()[0], 0.0f);
  EXPECT_EQ(opt->steps(), 0);
}

TEST(MakeOptimizer, RejectsDuplicatedParams) {
  std::vector<ParamRef> dup = fixture_params();
  dup[1].name = "w";
  EXPECT_THROW(make_optimizer(adamw_config(), dup), Error);
}

// Which roles weight decay touches: the default decays only Linear weights; decay_embeddings adds
// the embedding tables (nanoGPT's every-2-D-parameter rule); decay_exempt off decays everything.
TEST(ParamDecays, DefaultDecaysOnlyWeightsAndDecayEmbeddingsAddsTheTablesAsNanoGptDoes) {
  const ParamRole roles[] = {ParamRole::Weight,   ParamRole::Bias,      ParamRole::Embedding,
                             ParamRole::NormGain, ParamRole::NormBias,  ParamRole::NormScalar,
                             ParamRole::Gate,     ParamRole::AttnScalar};
  OptimConfig exempt;  // decay_exempt true, decay_embeddings false
  OptimConfig nanogpt;
  nanogpt.decay_embeddings = true;
  OptimConfig all;
  all.decay_exempt = false;
  for (ParamRole role : roles) {
    ParamInfo info;
    info.role = role;
    EXPECT_EQ(param_decays(info, exempt), role == ParamRole::Weight);
    EXPECT_EQ(param_decays(info, nanogpt),
              role == ParamRole::Weight || role == ParamRole::Embedding);
    EXPECT_TRUE(param_decays(info, all));
  }
}

}  // namespace
}  // namespace sl

// LayerNorm and RMSNorm: hand-checkable reference values, gradient checks, and the vector kernels
// against the plain reference pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/ops.h"
#include "support/gradcheck.h"

namespace sl {
namespace {
using testing::grad_check;
using testing::randn;

TEST(LayerNorm, TwoAndFourNormalizeToAboutMinusOneAndOne) {
  std::vector<float> y =
      layer_norm(Tensor::from({2}, {2, 4}), Tensor(), Tensor(), 1e-5f).to_vector();
  EXPECT_NEAR(y[0], -1.0f, 1e-4);  // eps pulls it just inside: -0.999995
  EXPECT_NEAR(y[1], 1.0f, 1e-4);
  EXPECT_GT(y[0], -1.0f);
}

TEST(LayerNorm, TwentyAndFortyNormalizeToTheSameAsTwoAndFour) {
  std::vector<float> small =
      layer_norm(Tensor::from({2}, {2, 4}), Tensor(), Tensor(), 1e-5f).to_vector();
  std::vector<float> big =
      layer_norm(Tensor::from({2}, {20, 40}), Tensor(), Tensor(), 1e-5f).to_vector();
  EXPECT_NEAR(big[0], -1.0f, 1e-6);
  EXPECT_NEAR(big[1], 1.0f, 1e-6);
  EXPECT_NEAR(big[0], small[0], 1e-4);
}

TEST(LayerNorm, OutputHasZeroMeanAndUnitVariancePerPositionNotPerBatch) {
  Tensor x = randn({3, 5, 16}, 1, 4.0f, false);
  for (int64_t i = 0; i < 3 * 5; ++i) x.data()[i * 16] += static_cast<float>(i);  // rows differ
  Tensor y = layer_norm(x, Tensor(), Tensor(), 1e-5f);
  for (int64_t r = 0; r < 15; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < 16; ++i) m += y.data()[r * 16 + i];
    m /= 16;
    for (int i = 0; i < 16; ++i) v += (y.data()[r * 16 + i] - m) * (y.data()[r * 16 + i] - m);
    EXPECT_NEAR(m, 0.0, 1e-5);
    EXPECT_NEAR(v / 16, 1.0, 1e-3);
  }
}

// Rows whose squares overflow a float sum (the statistics are float vectors; such a row has them
// again in double): [-a, a] repeated, over 64 values and over 100 (vectors and a tail), still
// normalises to about -1 and 1, by LayerNorm and by RMSNorm.
TEST(LayerNorm, ARowTooLargeToSquareInFloatStillNormalizesToAboutMinusOneAndOne) {
  for (const int64_t C : {int64_t{64}, int64_t{100}}) {
    std::vector<float> v(static_cast<size_t>(C));
    for (int64_t i = 0; i < C; ++i) v[static_cast<size_t>(i)] = i % 2 ? 3e19f : -3e19f;
    const Tensor x = Tensor::from({C}, v);
    const std::vector<float> y = layer_norm(x, Tensor(), Tensor(), 1e-5f).to_vector();
    const std::vector<float> r = rms_norm(x, Tensor(), 1e-5f).to_vector();
    for (int64_t i = 0; i < C; ++i) {
      EXPECT_NEAR(y[static_cast<size_t>(i)], i % 2 ? 1.0f : -1.0f, 1e-5)
          << "C " << C << ", i " << i;
      EXPECT_NEAR(r[static_cast<size_t>(i)], i % 2 ? 1.0f : -1.0f, 1e-5)
          << "C " << C << ", i " << i;
    }
  }
}

TEST(LayerNorm, AppliesGammaAndBeta) {
  Tensor y = layer_norm(Tensor::from({2}, {2, 4}), Tensor::from({2}, {2, 3}),
                        Tensor::from({2}, {1, -1}), 1e-5f);
  EXPECT_NEAR(y.data()[0], -1.0f, 1e-4);  // 2 * -1 + 1
  EXPECT_NEAR(y.data()[1], 2.0f, 1e-4);   // 3 * 1 - 1
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  for (Shape s : {Shape{2, 3, 8}, Shape{5, 4}, Shape{1, 7}}) {
    Tensor x = randn(s, 2), g = randn({s.back()}, 3), b = randn({s.back()}, 4);
    EXPECT_TRUE(grad_check(
        [](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], 1e-5f); },
        {x, g, b}))
        << s.str();
  }
}

TEST(LayerNorm, BackwardWithoutAffineParametersMatchesFiniteDifferences) {
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) { return layer_norm(in[0], Tensor(), Tensor(), 1e-5f); },
      {randn({4, 6}, 5)}));
}

TEST(RmsNorm, ScalesTwoAndFourWithoutSubtractingTheMean) {
  // rms([2, 4]) = sqrt(10): both stay positive, unlike LayerNorm.
  std::vector<float> y = rms_norm(Tensor::from({2}, {2, 4}), Tensor(), 1e-5f).to_vector();
  EXPECT_NEAR(y[0], 2.0 / std::sqrt(10.0 + 1e-5), 1e-6);
  EXPECT_NEAR(y[1], 4.0 / std::sqrt(10.0 + 1e-5), 1e-6);
  EXPECT_GT(y[0], 0.0f);
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  Tensor x = randn({3, 2, 8}, 6), g = randn({8}, 7);
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) { return rms_norm(in[0], in[1], 1e-5f); }, {x, g}));
}

// Within this fraction of its row's largest entry: the kernels sum in float (up to 768 terms
// here); they came within 1e-6 on an AVX-512 machine.
constexpr double kNormTol = 1e-5;

struct NormCase {
  int64_t rows, C;
  bool affine;
};

// |got - want| <= tol * (largest |want| of its row) for each entry, row by row of C: the kernels
// sum in float, so an entry's error scales with its row, not with itself.
void expect_rows_close(const std::vector<float>& got, const std::vector<float>& want, int64_t C,
                       double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t r = 0; r < want.size(); r += static_cast<size_t>(C)) {
    double scale = 0.0;
    for (size_t i = r; i < r + static_cast<size_t>(C); ++i)
      scale = std::max(scale, std::abs(static_cast<double>(want[i])));
    for (size_t i = r; i < r + static_cast<size_t>(C); ++i)
      ASSERT_LE(std::abs(static_cast<double>(got[i]) - want[i]), tol * scale)
          << what << ", row " << r / static_cast<size_t>(C) << ", entry " << i - r << ": " << got[i]
          << " vs " << want[i];
  }
}

// The vector kernels held to the plain reference pair (norm_reference.cpp: every sum in double)
// on random rows: more rows than one parallel chunk of 32, widths with and without a tail past
// the 16 lanes, with and without gamma and beta, and every 5th row scaled by 1e19, where the
// float statistics overflow and the kernels take them again in double.
TEST(NormKernels, MatchThePlainReferenceOnRandomRowsAndRowsThatOverflowInFloat) {
  for (const NormCase c : {NormCase{70, 64, true}, NormCase{70, 100, false}, NormCase{33, 7, true},
                           NormCase{40, 768, true}}) {
    const std::string at = " (rows " + std::to_string(c.rows) + ", C " + std::to_string(c.C) + ")";
    const size_t n = static_cast<size_t>(c.rows * c.C), R = static_cast<size_t>(c.rows);
    const size_t C = static_cast<size_t>(c.C);
    std::vector<float> x = randn({c.rows, c.C}, 20, 1.0f, false).to_vector();
    for (size_t r = 0; r < R; r += 5)
      for (size_t i = 0; i < C; ++i) x[r * C + i] *= 1e19f;
    const std::vector<float> dy = randn({c.rows, c.C}, 21, 1.0f, false).to_vector();
    const std::vector<float> gamma = randn({c.C}, 22, 1.0f, false).to_vector();
    const std::vector<float> beta = randn({c.C}, 23, 1.0f, false).to_vector();
    const float* g = c.affine ? gamma.data() : nullptr;
    const float* b = c.affine ? beta.data() : nullptr;

    // LayerNorm: the kernels, then the reference, from the same x and dy.
    std::vector<float> y(n), mean(R), rstd(R), dx(n), dg(C), db(C);
    std::vector<float> y_ref(n), mean_ref(R), rstd_ref(R), dx_ref(n), dg_ref(C), db_ref(C);
    layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), g, b, c.rows, c.C, 1e-5f);
    layer_norm_forward_reference(y_ref.data(), mean_ref.data(), rstd_ref.data(), x.data(), g, b,
                                 c.rows, c.C, 1e-5f);
    layer_norm_backward(dx.data(), dg.data(), db.data(), dy.data(), x.data(), mean.data(),
                        rstd.data(), g, c.rows, c.C);
    layer_norm_backward_reference(dx_ref.data(), dg_ref.data(), db_ref.data(), dy.data(), x.data(),
                                  mean_ref.data(), rstd_ref.data(), g, c.rows, c.C);
    expect_rows_close(y, y_ref, c.C, kNormTol, "layer_norm y" + at);
    expect_rows_close(rstd, rstd_ref, 1, kNormTol, "layer_norm rstd" + at);
    expect_rows_close(dx, dx_ref, c.C, kNormTol, "layer_norm dx" + at);
    expect_rows_close(dg, dg_ref, c.C, kNormTol, "layer_norm dgamma" + at);
    expect_rows_close(db, db_ref, c.C, kNormTol, "layer_norm dbeta" + at);

    // RMSNorm, the same way.
    std::fill(dx.begin(), dx.end(), 0.0f), std::fill(dg.begin(), dg.end(), 0.0f);
    std::fill(dx_ref.begin(), dx_ref.end(), 0.0f), std::fill(dg_ref.begin(), dg_ref.end(), 0.0f);
    rms_norm_forward(y.data(), rstd.data(), x.data(), g, c.rows, c.C, 1e-5f);
    rms_norm_forward_reference(y_ref.data(), rstd_ref.data(), x.data(), g, c.rows, c.C, 1e-5f);
    rms_norm_backward(dx.data(), dg.data(), dy.data(), x.data(), rstd.data(), g, c.rows, c.C);
    rms_norm_backward_reference(dx_ref.data(), dg_ref.data(), dy.data(), x.data(), rstd_ref.data(),
                                g, c.rows, c.C);
    expect_rows_close(y, y_ref, c.C, kNormTol, "rms_norm y" + at);
    expect_rows_close(rstd, rstd_ref, 1, kNormTol, "rms_norm rstd" + at);
    expect_rows_close(dx, dx_ref, c.C, kNormTol, "rms_norm dx" + at);
    expect_rows_close(dg, dg_ref, c.C, kNormTol, "rms_norm dgamma" + at);
  }
}

TEST(DyT, MatchesGammaTanhOfAlphaXPlusBetaWithoutStatistics) {
  // Unlike LayerNorm, DyT keeps the scale: [2, 4] and [20, 40] give different outputs.
  Tensor alpha = Tensor::from({1}, {0.5f}), g = Tensor::from({2}, {2.0f, 1.0f}),
         b = Tensor::from({2}, {0.1f, 0.0f});
  std::vector<float> small = dyt(Tensor::from({2}, {2, 4}), alpha, g, b).to_vector();
  std::vector<float> large = dyt(Tensor::from({2}, {20, 40}), alpha, g, b).to_vector();
  EXPECT_NEAR(small[0], 2.0 * std::tanh(1.0) + 0.1, 1e-6);
  EXPECT_NEAR(small[1], std::tanh(2.0), 1e-6);
  EXPECT_NEAR(large[1], 1.0, 1e-6) << "tanh saturates at 1";
  // Relative accuracy also near 0, where 1 - 2 / (exp(2u) + 1) cancels: u from 1e-6 to 9.
  std::vector<float> u;
  for (double v = 1e-6; v < 9; v *= 1.01)
    u.insert(u.end(), {static_cast<float>(v), static_cast<float>(-v)});
  Tensor x = Tensor::from({static_cast<int64_t>(u.size())}, u);
  Tensor y = dyt(x, Tensor::from({1}, {1.0f}), Tensor(), Tensor());
  for (size_t i = 0; i < u.size(); ++i) {
    const double want = std::tanh(static_cast<double>(u[i]));
    EXPECT_NEAR(y.data()[i], want, 5e-7 * std::abs(want) + 1e-12) << "tanh(" << u[i] << ")";
  }
}

TEST(DyT, BackwardMatchesFiniteDifferencesForXAlphaGammaAndBeta) {
  Tensor x = randn({3, 2, 8}, 6), a = Tensor::from({1}, {0.7f}, true), g = randn({8}, 7),
         b = randn({8}, 8);
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) { return dyt(in[0], in[1], in[2], in[3]); }, {x, a, g, b}));
  EXPECT_TRUE(grad_check(
      [](const std::vector<Tensor>& in) { return dyt(in[0], in[1], Tensor(), Tensor()); },
      {randn({40, 8}, 9), Tensor::from({1}, {0.4f}, true)}))
      << "more rows than one parallel chunk";
}

TEST(DyT, RejectsAnAlphaThatIsNotOneElement) {
  EXPECT_THROW(dyt(Tensor::zeros({2, 4}), Tensor::zeros({2}), Tensor(), Tensor()), ShapeError);
}

TEST(LayerNorm, RejectsGammaOfTheWrongSize) {
  EXPECT_THROW(layer_norm(Tensor::zeros({2, 4}), Tensor::zeros({3}), Tensor(), 1e-5f), ShapeError);
}

}  // namespace
}  // namespace sl

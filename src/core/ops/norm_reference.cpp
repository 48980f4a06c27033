// The plain LayerNorm / RMSNorm pair: one row at a time, every sum in double, no vectors, no
// threads, no per-CPU clones. It computes what the kernels of norm.cpp compute, written to be
// read, and the tests hold those kernels to it (tests/core/norm_test.cpp). This file leaves out
// norm.cpp's fp-contract pragma: nothing here is fused into an FMA the source does not write.
//   forward   mu = mean(x) (0 for RMSNorm), rstd = 1 / sqrt(mean((x - mu)^2) + eps),
//             xhat = (x - mu) rstd, y = gamma xhat + beta
//   backward  g = dy gamma: dx += rstd (g - mean(g) - xhat mean(g xhat)) (RMSNorm: no mean(g)
//             term, as mu is no statistic there); dgamma += sum over rows of dy xhat;
//             dbeta += sum over rows of dy
#include "core/ops/norm.h"

#include <cmath>
#include <vector>

namespace sl {
namespace {

double wide(float v) { return static_cast<double>(v); }
// p[i], or `none` where the parameter is absent (gamma 1, beta 0).
double param(const float* p, int64_t i, double none) { return p ? wide(p[i]) : none; }

// One row x (C): its mean (0 when not `centred`) and rstd, in double.
void row_stats(const float* x, int64_t C, float eps, bool centred, double& mu, double& rstd) {
  double sum = 0.0;
  if (centred)
    for (int64_t i = 0; i < C; ++i) sum += wide(x[i]);
  mu = sum / static_cast<double>(C);
  double sq = 0.0;
  for (int64_t i = 0; i < C; ++i) sq += (wide(x[i]) - mu) * (wide(x[i]) - mu);
  rstd = 1.0 / std::sqrt(sq / static_cast<double>(C) + wide(eps));
}

// y, mean, rstd (rows * C, rows, rows; mean may be null) from x (rows * C); gamma, beta (C) or
// null.
void norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                  const float* beta, int64_t rows, int64_t C, float eps, bool centred) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    double mu, rs;
    row_stats(xr, C, eps, centred, mu, rs);
    for (int64_t i = 0; i < C; ++i) {
      const double xhat = (wide(xr[i]) - mu) * rs;
      y[r * C + i] = static_cast<float>(param(gamma, i, 1.0) * xhat + param(beta, i, 0.0));
    }
    if (mean) mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
  }
}

// dx (rows * C) += ..., dgamma, dbeta (C; null: not wanted) += ..., from dy, x (rows * C) and the
// forward's mean (rows) and rstd (rows). A null mean is RMSNorm: mu = 0 and no mean(g) term.
void norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                   const float* mean, const float* rstd, const float* gamma, int64_t rows,
                   int64_t C) {
  std::vector<double> dg(static_cast<size_t>(C), 0.0), db(static_cast<size_t>(C), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const double mu = param(mean, r, 0.0), rs = wide(rstd[r]);
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t i = 0; i < C; ++i) {
      const double xhat = (wide(xr[i]) - mu) * rs, g = wide(dyr[i]) * param(gamma, i, 1.0);
      sum_g += g;
      sum_gx += g * xhat;
      dg[static_cast<size_t>(i)] += wide(dyr[i]) * xhat;
      db[static_cast<size_t>(i)] += wide(dyr[i]);
    }
    const double mean_g = mean ? sum_g / static_cast<double>(C) : 0.0;
    const double mean_gx = sum_gx / static_cast<double>(C);
    for (int64_t i = 0; i < C; ++i) {
      const double xhat = (wide(xr[i]) - mu) * rs, g = wide(dyr[i]) * param(gamma, i, 1.0);
      dx[r * C + i] += static_cast<float>(rs * (g - mean_g - xhat * mean_gx));
    }
  }
  for (int64_t i = 0; i < C; ++i) {
    if (dgamma) dgamma[i] += static_cast<float>(dg[static_cast<size_t>(i)]);
    if (dbeta) dbeta[i] += static_cast<float>(db[static_cast<size_t>(i)]);
  }
}

}  // namespace

void layer_norm_forward_reference(float* y, float* mean, float* rstd, const float* x,
                                  const float* gamma, const float* beta, int64_t rows, int64_t C,
                                  float eps) {
  norm_forward(y, mean, rstd, x, gamma, beta, rows, C, eps, /*centred=*/true);
}

void layer_norm_backward_reference(float* dx, float* dgamma, float* dbeta, const float* dy,
                                   const float* x, const float* mean, const float* rstd,
                                   const float* gamma, int64_t rows, int64_t C) {
  norm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, C);
}

void rms_norm_forward_reference(float* y, float* rstd, const float* x, const float* gamma,
                                int64_t rows, int64_t C, float eps) {
  norm_forward(y, nullptr, rstd, x, gamma, nullptr, rows, C, eps, /*centred=*/false);
}

void rms_norm_backward_reference(float* dx, float* dgamma, const float* dy, const float* x,
                                 const float* rstd, const float* gamma, int64_t rows, int64_t C) {
  norm_backward(dx, dgamma, nullptr, dy, x, nullptr, rstd, gamma, rows, C);
}

}  // namespace sl

// LayerNorm / RMSNorm kernels. Backward, with xhat = (x - mu) * rstd and g = dy * gamma:
//   layer_norm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma += dy xhat; dbeta += dy
//   rms_norm:   xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat)); dgamma += dy xhat
//   dyt:        u = dy gamma (1 - t^2), t = tanh(alpha x): dx = alpha u; dalpha += sum(u x); dgamma
//   += dy t
// Row statistics are float sums of 16-float vectors, their lanes added in core/simd.h's fixed tree
// and the row's last C % 16 values after them: one order whatever the clone (the FMA clones
// contract the products into their sums, so they round differently from the baseline one).
// Rows run in parallel in fixed chunks of kRows;
// dgamma/dbeta are summed per chunk and the chunk partials added in order (deterministic).
// The same four kernels, plain (one row at a time, sums in double): norm_reference.cpp.
#include "core/ops/norm.h"

// The kernels contract a * b + c into an FMA where the clone has one (SL_SIMD_CLONES).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/fastmath.h"
#include "core/parallel.h"
#include "core/simd.h"
#include "util/error.h"

namespace sl {
namespace {

constexpr int64_t kRows = 32;  // rows per parallel chunk

// Runs body(lo, hi, dg, db) over row chunks, each with its own zeroed partial dgamma/dbeta (C
// each; null when the caller's is null), then adds the partials into dgamma/dbeta in order.
template <typename Body>
void rows_with_param_grads(int64_t rows, int64_t C, float* dgamma, float* dbeta, Body body) {
  const int64_t chunks = (rows + kRows - 1) / kRows;
  auto part = make_buffer(static_cast<size_t>(chunks * 2 * C), /*zero=*/true);  // (chunks, 2, C)
  parallel_chunks(
      rows, kRows,
      [&](int64_t lo, int64_t hi) {
        float* p = part->data() + (lo / kRows) * 2 * C;
        body(lo, hi, dgamma ? p : nullptr, dbeta ? p + C : nullptr);
      },
      C);
  for (int64_t c = 0; c < chunks; ++c) {
    const float* p = part->data() + c * 2 * C;
    if (dgamma)
      for (int64_t i = 0; i < C; ++i) dgamma[i] += p[i];
    if (dbeta)
      for (int64_t i = 0; i < C; ++i) dbeta[i] += p[C + i];
  }
}

}  // namespace

namespace {

// One chunk of rows [lo, hi) of each kernel, as plain functions cloned per vector width
// (core/fastmath.h). The per-element loops have no branch inside, so they vectorise.

// sum_i x_i over one row of C.
SL_VINLINE float row_sum(const float* x, int64_t C) {
  v16 acc = v16{};
  int64_t i = 0;
  for (; i + kLanes <= C; i += kLanes) acc += vload(x + i);
  float s = hsum(acc);
  for (; i < C; ++i) s += x[i];
  return s;
}
// sum_i (x_i - m)^2 over one row of C.
SL_VINLINE float row_sq_dev(const float* x, float m, int64_t C) {
  const v16 mv = vsplat(m);
  v16 acc = v16{};
  int64_t i = 0;
  for (; i + kLanes <= C; i += kLanes) {
    const v16 d = vload(x + i) - mv;
    acc += d * d;
  }
  float s = hsum(acc);
  for (; i < C; ++i) s += (x[i] - m) * (x[i] - m);
  return s;
}
// sum_i a_i b_i over one row of C.
SL_VINLINE float row_dot(const float* a, const float* b, int64_t C) {
  v16 acc = v16{};
  int64_t i = 0;
  for (; i + kLanes <= C; i += kLanes) acc += vload(a + i) * vload(b + i);
  float s = hsum(acc);
  for (; i < C; ++i) s += a[i] * b[i];
  return s;
}
// sum_i a_i and sum_i a_i b_i over one row of C.
SL_VINLINE void row_sum_dot(const float* a, const float* b, int64_t C, float& sa, float& sab) {
  v16 acc = v16{}, accd = v16{};
  int64_t i = 0;
  for (; i + kLanes <= C; i += kLanes) {
    const v16 av = vload(a + i);
    acc += av;
    accd += av * vload(b + i);
  }
  sa = hsum(acc);
  sab = hsum(accd);
  for (; i < C; ++i) sa += a[i], sab += a[i] * b[i];
}

// A row whose float statistics overflow (|x| near 1e19 at C = 64) has them again in double, so
// that it normalises as before instead of to beta. Rare; cold.
__attribute__((noinline, cold)) void row_stats_double(const float* x, int64_t C, float eps,
                                                      bool centred, float& m, float& rs) {
  double s = 0.0, v = 0.0;
  if (centred)
    for (int64_t i = 0; i < C; ++i) s += static_cast<double>(x[i]);
  const double mu = s / static_cast<double>(C);
  for (int64_t i = 0; i < C; ++i)
    v += (static_cast<double>(x[i]) - mu) * (static_cast<double>(x[i]) - mu);
  m = static_cast<float>(mu);
  rs = static_cast<float>(1.0 / std::sqrt(v / static_cast<double>(C) + static_cast<double>(eps)));
}

SL_SIMD_CLONES void layer_norm_rows(float* y, float* mean, float* rstd, const float* x,
                                    const float* gamma, const float* beta, int64_t lo, int64_t hi,
                                    int64_t C, float eps) {
  const float inv_c = 1.0f / static_cast<float>(C);
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    float m = row_sum(xr, C) * inv_c;
    const float var = row_sq_dev(xr, m, C) * inv_c;
    float rs = 1.0f / std::sqrt(var + eps);
    if (!(var <= 3.0e38f)) row_stats_double(xr, C, eps, true, m, rs);  // overflow (or NaN input)
    float* yr = y + r * C;                                             // one write of the row
    if (gamma && beta)
      for (int64_t i = 0; i < C; ++i) yr[i] = gamma[i] * ((xr[i] - m) * rs) + beta[i];
    else if (gamma)
      for (int64_t i = 0; i < C; ++i) yr[i] = gamma[i] * ((xr[i] - m) * rs);
    else if (beta)
      for (int64_t i = 0; i < C; ++i) yr[i] = (xr[i] - m) * rs + beta[i];
    else
      for (int64_t i = 0; i < C; ++i) yr[i] = (xr[i] - m) * rs;
    mean[r] = m;
    rstd[r] = rs;
  }
}

// g = dy * gamma into `g` (C), or dy itself when there is no gamma.
inline const float* scaled_grad(float* g, const float* dyr, const float* gamma, int64_t C) {
  if (!gamma) return dyr;
  for (int64_t i = 0; i < C; ++i) g[i] = dyr[i] * gamma[i];
  return g;
}

SL_SIMD_CLONES void layer_norm_backward_rows(float* dx, float* dg, float* db, float* scratch,
                                             const float* dy, const float* x, const float* mean,
                                             const float* rstd, const float* gamma, int64_t lo,
                                             int64_t hi, int64_t C, bool overwrite) {
  float* xh = scratch;  // (C) xhat of the row
  const float inv_c = 1.0f / static_cast<float>(C);
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float m = mean[r], rs = rstd[r];
    for (int64_t i = 0; i < C; ++i) xh[i] = (xr[i] - m) * rs;
    const float* g = scaled_grad(scratch + C, dyr, gamma, C);
    float sg, sgx;
    row_sum_dot(g, xh, C, sg, sgx);
    if (dg)
      for (int64_t i = 0; i < C; ++i) dg[i] += dyr[i] * xh[i];
    if (db)
      for (int64_t i = 0; i < C; ++i) db[i] += dyr[i];
    if (!dx) continue;
    const float mg = sg * inv_c, mgx = sgx * inv_c;
    float* dxr = dx + r * C;
    if (overwrite)
      for (int64_t i = 0; i < C; ++i) dxr[i] = rs * (g[i] - mg - xh[i] * mgx);
    else
      for (int64_t i = 0; i < C; ++i) dxr[i] += rs * (g[i] - mg - xh[i] * mgx);
  }
}

SL_SIMD_CLONES void rms_norm_rows(float* y, float* rstd, const float* x, const float* gamma,
                                  int64_t lo, int64_t hi, int64_t C, float eps) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float ms = row_sq_dev(xr, 0.0f, C) / static_cast<float>(C);
    float rs = 1.0f / std::sqrt(ms + eps), m0;
    if (!(ms <= 3.0e38f)) row_stats_double(xr, C, eps, false, m0, rs);  // overflow (or NaN input)
    float* yr = y + r * C;
    if (gamma)
      for (int64_t i = 0; i < C; ++i) yr[i] = gamma[i] * xr[i] * rs;
    else
      for (int64_t i = 0; i < C; ++i) yr[i] = xr[i] * rs;
    rstd[r] = rs;
  }
}

SL_SIMD_CLONES void rms_norm_backward_rows(float* dx, float* dg, float* scratch, const float* dy,
                                           const float* x, const float* rstd, const float* gamma,
                                           int64_t lo, int64_t hi, int64_t C, bool overwrite) {
  float* xh = scratch;  // (C)
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float rs = rstd[r];
    for (int64_t i = 0; i < C; ++i) xh[i] = xr[i] * rs;
    const float* g = scaled_grad(scratch + C, dyr, gamma, C);
    const float sgx = row_dot(g, xh, C);
    if (dg)
      for (int64_t i = 0; i < C; ++i) dg[i] += dyr[i] * xh[i];
    if (!dx) continue;
    const float mgx = sgx / static_cast<float>(C);
    float* dxr = dx + r * C;
    if (overwrite)
      for (int64_t i = 0; i < C; ++i) dxr[i] = rs * (g[i] - xh[i] * mgx);
    else
      for (int64_t i = 0; i < C; ++i) dxr[i] += rs * (g[i] - xh[i] * mgx);
  }
}

}  // namespace

void layer_norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                        const float* beta, int64_t rows, int64_t C, float eps) {
  parallel_chunks(
      rows, kRows,
      [=](int64_t lo, int64_t hi) {
        layer_norm_rows(y, mean, rstd, x, gamma, beta, lo, hi, C, eps);
      },
      C);
}

void layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                         const float* mean, const float* rstd, const float* gamma, int64_t rows,
                         int64_t C, bool overwrite_dx) {
  auto scratch = make_buffer(static_cast<size_t>(num_threads() * 2 * C));  // xhat and g per thread
  rows_with_param_grads(
      rows, C, dgamma, dbeta, [=, &scratch](int64_t lo, int64_t hi, float* dg, float* db) {
        layer_norm_backward_rows(dx, dg, db, scratch->data() + thread_index() * 2 * C, dy, x, mean,
                                 rstd, gamma, lo, hi, C, overwrite_dx);
      });
}

void rms_norm_forward(float* y, float* rstd, const float* x, const float* gamma, int64_t rows,
                      int64_t C, float eps) {
  parallel_chunks(
      rows, kRows,
      [=](int64_t lo, int64_t hi) { rms_norm_rows(y, rstd, x, gamma, lo, hi, C, eps); }, C);
}

void rms_norm_backward(float* dx, float* dgamma, const float* dy, const float* x, const float* rstd,
                       const float* gamma, int64_t rows, int64_t C, bool overwrite_dx) {
  auto scratch = make_buffer(static_cast<size_t>(num_threads() * 2 * C));
  rows_with_param_grads(rows, C, dgamma, nullptr,
                        [=, &scratch](int64_t lo, int64_t hi, float* dg, float*) {
                          rms_norm_backward_rows(dx, dg, scratch->data() + thread_index() * 2 * C,
                                                 dy, x, rstd, gamma, lo, hi, C, overwrite_dx);
                        });
}

// ---- Dynamic Tanh ------------------------------------------------------------------------------

namespace {

// tanh(u) = 1 - 2 / (exp(2u) + 1), which cancels for small |u| (relative error 8e-5 at
// u = 1e-3), so below |u| = 0.3 the Taylor series through u^13 (its next term is 2e-11 there).
// Both computed and one selected: no branch, the loop vectorises. Measured over [-9, 9]:
// absolute error <= 1.9e-7, relative <= 4.4e-7.
inline float fast_tanh_accurate(float u) {
  const float far = 1.0f - 2.0f / (fast_exp(2.0f * u) + 1.0f);
  const float s = u * u;
  const float near =
      u *
      (1.0f + s * (-1.0f / 3 +
                   s * (2.0f / 15 +
                        s * (-17.0f / 315 + s * (62.0f / 2835 + s * (-1382.0f / 155925 +
                                                                     s * (21844.0f / 6081075)))))));
  return __builtin_fabsf(u) < 0.3f ? near : far;
}

SL_SIMD_CLONES void dyt_rows(float* y, float* t, const float* x, float alpha, const float* gamma,
                             const float* beta, int64_t lo, int64_t hi, int64_t C) {
  for (int64_t r = lo; r < hi; ++r)
    for (int64_t i = 0; i < C; ++i) {
      const int64_t k = r * C + i;
      const float ti = fast_tanh_accurate(alpha * x[k]);
      t[k] = ti;
      y[k] = (gamma ? gamma[i] : 1.0f) * ti + (beta ? beta[i] : 0.0f);
    }
}

// Rows [lo, hi): dx, the chunk's partial dgamma/dbeta (may be null), and its sum(u x) in double.
SL_SIMD_CLONES double dyt_backward_rows(float* dx, float* dg, float* db, const float* dy,
                                        const float* x, const float* t, float alpha,
                                        const float* gamma, int64_t lo, int64_t hi, int64_t C,
                                        bool overwrite) {
  double sx = 0.0;
  for (int64_t r = lo; r < hi; ++r) {
    double row = 0.0;
#pragma omp simd reduction(+ : row)
    for (int64_t i = 0; i < C; ++i) {
      const int64_t k = r * C + i;
      const float u = dy[k] * (gamma ? gamma[i] : 1.0f) * (1.0f - t[k] * t[k]);
      row += static_cast<double>(u) * static_cast<double>(x[k]);
      if (dx) dx[k] = (overwrite ? 0.0f : dx[k]) + alpha * u;
    }
    sx += row;
    if (dg)
      for (int64_t i = 0; i < C; ++i) dg[i] += dy[r * C + i] * t[r * C + i];
    if (db)
      for (int64_t i = 0; i < C; ++i) db[i] += dy[r * C + i];
  }
  return sx;
}

}  // namespace

void dyt_forward(float* y, float* t, const float* x, float alpha, const float* gamma,
                 const float* beta, int64_t rows, int64_t C) {
  parallel_chunks(
      rows, kRows,
      [&](int64_t lo, int64_t hi) { dyt_rows(y, t, x, alpha, gamma, beta, lo, hi, C); }, C);
}

void dyt_backward(float* dx, float* dalpha, float* dgamma, float* dbeta, const float* dy,
                  const float* x, const float* t, float alpha, const float* gamma, int64_t rows,
                  int64_t C, bool overwrite_dx) {
  const int64_t chunks = (rows + kRows - 1) / kRows;
  std::vector<double> sx(static_cast<size_t>(chunks),
                         0.0);  // per chunk, added in order: deterministic
  rows_with_param_grads(rows, C, dgamma, dbeta, [&](int64_t lo, int64_t hi, float* dg, float* db) {
    sx[static_cast<size_t>(lo / kRows)] =
        dyt_backward_rows(dx, dg, db, dy, x, t, alpha, gamma, lo, hi, C, overwrite_dx);
  });
  if (dalpha) {
    double s = 0.0;
    for (double v : sx) s += v;
    *dalpha += static_cast<float>(s);
  }
}

namespace {
void check_param(const char* op, const char* what, const Tensor& p, int64_t C, const Tensor& x) {
  if (p.defined() && (p.ndim() != 1 || p.size(0) != C))
    throw ShapeError(std::string("[") + op + "] " + what + " " + p.shape().str() +
                     " does not match input " + x.shape().str());
}
const float* ptr(const Tensor& t) { return t.defined() ? t.data() : nullptr; }
}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  if (x.ndim() < 1 || x.size(-1) == 0)
    throw ShapeError("[layer_norm] needs a non-empty last dim, got " + x.shape().str());
  const int64_t C = x.size(-1), rows = x.numel() / C;
  check_param("layer_norm", "gamma", gamma, C, x);
  check_param("layer_norm", "beta", beta, C, x);
  Tensor y = Tensor::empty(x.shape());
  auto stats = make_buffer(static_cast<size_t>(2 * rows));  // mean (rows), rstd (rows)
  layer_norm_forward(y.data(), stats->data(), stats->data() + rows, x.data(), ptr(gamma), ptr(beta),
                     rows, C, eps);
  if (needs_grad(x, gamma, beta))
    attach(y, "layer_norm", {x, gamma, beta}, [x, gamma, beta, stats, rows, C](TensorImpl& o) {
      const GradSlot dx = grad_slot(x);
      layer_norm_backward(dx.data, grad_of(gamma), grad_of(beta), o.grad->data(), x.data(),
                          stats->data(), stats->data() + rows, ptr(gamma), rows, C, dx.fresh);
    });
  return y;
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, float eps) {
  if (x.ndim() < 1 || x.size(-1) == 0)
    throw ShapeError("[rms_norm] needs a non-empty last dim, got " + x.shape().str());
  const int64_t C = x.size(-1), rows = x.numel() / C;
  check_param("rms_norm", "gamma", gamma, C, x);
  Tensor y = Tensor::empty(x.shape());
  auto rstd = make_buffer(static_cast<size_t>(rows));
  rms_norm_forward(y.data(), rstd->data(), x.data(), ptr(gamma), rows, C, eps);
  if (needs_grad(x, gamma))
    attach(y, "rms_norm", {x, gamma}, [x, gamma, rstd, rows, C](TensorImpl& o) {
      const GradSlot dx = grad_slot(x);
      rms_norm_backward(dx.data, grad_of(gamma), o.grad->data(), x.data(), rstd->data(), ptr(gamma),
                        rows, C, dx.fresh);
    });
  return y;
}

Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& gamma, const Tensor& beta) {
  if (x.ndim() < 1 || x.size(-1) == 0)
    throw ShapeError("[dyt] needs a non-empty last dim, got " + x.shape().str());
  if (!alpha.defined() || alpha.numel() != 1)
    throw ShapeError("[dyt] alpha must hold one element, got " +
                     (alpha.defined() ? alpha.shape().str() : "none"));
  const int64_t C = x.size(-1), rows = x.numel() / C;
  check_param("dyt", "gamma", gamma, C, x);
  check_param("dyt", "beta", beta, C, x);
  Tensor y = Tensor::empty(x.shape());
  auto t = make_buffer(static_cast<size_t>(rows * C));  // tanh(alpha x), for backward
  const float a = alpha.data()[0];
  dyt_forward(y.data(), t->data(), x.data(), a, ptr(gamma), ptr(beta), rows, C);
  if (needs_grad({&x, &alpha, &gamma, &beta}))
    attach(y, "dyt", {x, alpha, gamma, beta},
           [x, alpha, gamma, beta, t, a, rows, C](TensorImpl& o) {
             const GradSlot dx = grad_slot(x);
             dyt_backward(dx.data, grad_of(alpha), grad_of(gamma), grad_of(beta), o.grad->data(),
                          x.data(), t->data(), a, ptr(gamma), rows, C, dx.fresh);
           });
  return y;
}

}  // namespace sl

// LayerNorm / RMSNorm kernels. Backward, with xhat = (x - mu) * rstd and g = dy * gamma:
//   layer_norm: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma += dy xhat; dbeta += dy
//   rms_norm:   xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat)); dgamma += dy xhat
// Row statistics are accumulated in double. Rows run in parallel in fixed chunks of kRows;
// dgamma/dbeta are summed per chunk and the chunk partials added in order (deterministic).
#include "core/ops/norm.h"

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "core/error.h"
#include "core/fastmath.h"
#include "core/parallel.h"

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

// One chunk of rows [lo, hi) of each kernel, as plain functions cloned for AVX2 (core/fastmath.h).
// Row sums run in double under `omp simd` (lanes of partial sums, added at the end); the
// per-element loops have no branch inside, so both vectorise.

SL_SIMD_CLONES void layer_norm_rows(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                                    const float* beta, int64_t lo, int64_t hi, int64_t C, float eps) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < C; ++i) s += static_cast<double>(xr[i]);
    const double mu = s / static_cast<double>(C);
    double v = 0.0;
#pragma omp simd reduction(+ : v)
    for (int64_t i = 0; i < C; ++i) v += (static_cast<double>(xr[i]) - mu) * (static_cast<double>(xr[i]) - mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(v / static_cast<double>(C) + static_cast<double>(eps)));
    const float m = static_cast<float>(mu);
    float* yr = y + r * C;
    for (int64_t i = 0; i < C; ++i) yr[i] = (xr[i] - m) * rs;
    if (gamma)
      for (int64_t i = 0; i < C; ++i) yr[i] = gamma[i] * yr[i];
    if (beta)
      for (int64_t i = 0; i < C; ++i) yr[i] = yr[i] + beta[i];
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

SL_SIMD_CLONES void layer_norm_backward_rows(float* dx, float* dg, float* db, float* scratch, const float* dy,
                                             const float* x, const float* mean, const float* rstd,
                                             const float* gamma, int64_t lo, int64_t hi, int64_t C, bool overwrite) {
  float* xh = scratch;  // (C) xhat of the row
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float m = mean[r], rs = rstd[r];
    for (int64_t i = 0; i < C; ++i) xh[i] = (xr[i] - m) * rs;
    const float* g = scaled_grad(scratch + C, dyr, gamma, C);
    double sg = 0.0, sgx = 0.0;
#pragma omp simd reduction(+ : sg, sgx)
    for (int64_t i = 0; i < C; ++i) {
      sg += static_cast<double>(g[i]);
      sgx += static_cast<double>(g[i] * xh[i]);
    }
    if (dg)
      for (int64_t i = 0; i < C; ++i) dg[i] += dyr[i] * xh[i];
    if (db)
      for (int64_t i = 0; i < C; ++i) db[i] += dyr[i];
    if (!dx) continue;
    const float mg = static_cast<float>(sg / static_cast<double>(C));
    const float mgx = static_cast<float>(sgx / static_cast<double>(C));
    float* dxr = dx + r * C;
    if (overwrite)
      for (int64_t i = 0; i < C; ++i) dxr[i] = rs * (g[i] - mg - xh[i] * mgx);
    else
      for (int64_t i = 0; i < C; ++i) dxr[i] += rs * (g[i] - mg - xh[i] * mgx);
  }
}

SL_SIMD_CLONES void rms_norm_rows(float* y, float* rstd, const float* x, const float* gamma, int64_t lo, int64_t hi,
                                  int64_t C, float eps) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    double ss = 0.0;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < C; ++i) ss += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
    const float rs = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(C) + static_cast<double>(eps)));
    float* yr = y + r * C;
    if (gamma)
      for (int64_t i = 0; i < C; ++i) yr[i] = gamma[i] * xr[i] * rs;
    else
      for (int64_t i = 0; i < C; ++i) yr[i] = xr[i] * rs;
    rstd[r] = rs;
  }
}

SL_SIMD_CLONES void rms_norm_backward_rows(float* dx, float* dg, float* scratch, const float* dy, const float* x,
                                           const float* rstd, const float* gamma, int64_t lo, int64_t hi, int64_t C,
                                           bool overwrite) {
  float* xh = scratch;  // (C)
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float rs = rstd[r];
    for (int64_t i = 0; i < C; ++i) xh[i] = xr[i] * rs;
    const float* g = scaled_grad(scratch + C, dyr, gamma, C);
    double sgx = 0.0;
#pragma omp simd reduction(+ : sgx)
    for (int64_t i = 0; i < C; ++i) sgx += static_cast<double>(g[i] * xh[i]);
    if (dg)
      for (int64_t i = 0; i < C; ++i) dg[i] += dyr[i] * xh[i];
    if (!dx) continue;
    const float mgx = static_cast<float>(sgx / static_cast<double>(C));
    float* dxr = dx + r * C;
    if (overwrite)
      for (int64_t i = 0; i < C; ++i) dxr[i] = rs * (g[i] - xh[i] * mgx);
    else
      for (int64_t i = 0; i < C; ++i) dxr[i] += rs * (g[i] - xh[i] * mgx);
  }
}

}  // namespace

void layer_norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                        int64_t rows, int64_t C, float eps) {
  parallel_chunks(
      rows, kRows, [=](int64_t lo, int64_t hi) { layer_norm_rows(y, mean, rstd, x, gamma, beta, lo, hi, C, eps); }, C);
}

void layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* mean,
                         const float* rstd, const float* gamma, int64_t rows, int64_t C, bool overwrite_dx) {
  auto scratch = make_buffer(static_cast<size_t>(num_threads() * 2 * C));  // xhat and g per thread
  rows_with_param_grads(rows, C, dgamma, dbeta, [=, &scratch](int64_t lo, int64_t hi, float* dg, float* db) {
    layer_norm_backward_rows(dx, dg, db, scratch->data() + thread_index() * 2 * C, dy, x, mean, rstd, gamma, lo, hi,
                             C, overwrite_dx);
  });
}

void rms_norm_forward(float* y, float* rstd, const float* x, const float* gamma, int64_t rows, int64_t C, float eps) {
  parallel_chunks(rows, kRows, [=](int64_t lo, int64_t hi) { rms_norm_rows(y, rstd, x, gamma, lo, hi, C, eps); }, C);
}

void rms_norm_backward(float* dx, float* dgamma, const float* dy, const float* x, const float* rstd,
                       const float* gamma, int64_t rows, int64_t C, bool overwrite_dx) {
  auto scratch = make_buffer(static_cast<size_t>(num_threads() * 2 * C));
  rows_with_param_grads(rows, C, dgamma, nullptr, [=, &scratch](int64_t lo, int64_t hi, float* dg, float*) {
    rms_norm_backward_rows(dx, dg, scratch->data() + thread_index() * 2 * C, dy, x, rstd, gamma, lo, hi, C,
                           overwrite_dx);
  });
}

namespace {
void check_param(const char* op, const char* what, const Tensor& p, int64_t C, const Tensor& x) {
  if (p.defined() && (p.ndim() != 1 || p.size(0) != C))
    throw ShapeError(std::string("[") + op + "] " + what + " " + p.shape().str() + " does not match input " +
                     x.shape().str());
}
const float* ptr(const Tensor& t) { return t.defined() ? t.data() : nullptr; }
}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
  if (x.ndim() < 1 || x.size(-1) == 0) throw ShapeError("[layer_norm] needs a non-empty last dim, got " + x.shape().str());
  const int64_t C = x.size(-1), rows = x.numel() / C;
  check_param("layer_norm", "gamma", gamma, C, x);
  check_param("layer_norm", "beta", beta, C, x);
  Tensor y = Tensor::empty(x.shape());
  auto stats = make_buffer(static_cast<size_t>(2 * rows));  // mean (rows), rstd (rows)
  layer_norm_forward(y.data(), stats->data(), stats->data() + rows, x.data(), ptr(gamma), ptr(beta), rows, C, eps);
  if (needs_grad(x, gamma, beta))
    attach(y, "layer_norm", {x, gamma, beta}, [x, gamma, beta, stats, rows, C](TensorImpl& o) {
      const GradSlot dx = grad_slot(x);
      layer_norm_backward(dx.data, grad_of(gamma), grad_of(beta), o.grad->data(), x.data(), stats->data(),
                          stats->data() + rows, ptr(gamma), rows, C, dx.fresh);
    });
  return y;
}

Tensor rms_norm(const Tensor& x, const Tensor& gamma, float eps) {
  if (x.ndim() < 1 || x.size(-1) == 0) throw ShapeError("[rms_norm] needs a non-empty last dim, got " + x.shape().str());
  const int64_t C = x.size(-1), rows = x.numel() / C;
  check_param("rms_norm", "gamma", gamma, C, x);
  Tensor y = Tensor::empty(x.shape());
  auto rstd = make_buffer(static_cast<size_t>(rows));
  rms_norm_forward(y.data(), rstd->data(), x.data(), ptr(gamma), rows, C, eps);
  if (needs_grad(x, gamma))
    attach(y, "rms_norm", {x, gamma}, [x, gamma, rstd, rows, C](TensorImpl& o) {
      const GradSlot dx = grad_slot(x);
      rms_norm_backward(dx.data, grad_of(gamma), o.grad->data(), x.data(), rstd->data(), ptr(gamma), rows, C, dx.fresh);
    });
  return y;
}

}  // namespace sl

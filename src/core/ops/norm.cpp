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

void layer_norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                        int64_t rows, int64_t C, float eps) {
  parallel_chunks(rows, kRows, [=](int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    double s = 0.0;
    for (int64_t i = 0; i < C; ++i) s += static_cast<double>(xr[i]);
    const double mu = s / static_cast<double>(C);
    double v = 0.0;
    for (int64_t i = 0; i < C; ++i) v += (static_cast<double>(xr[i]) - mu) * (static_cast<double>(xr[i]) - mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(v / static_cast<double>(C) + static_cast<double>(eps)));
    const float m = static_cast<float>(mu);
    float* yr = y + r * C;
    for (int64_t i = 0; i < C; ++i) {
      const float xh = (xr[i] - m) * rs;
      yr[i] = (gamma ? gamma[i] : 1.0f) * xh + (beta ? beta[i] : 0.0f);
    }
    mean[r] = m;
    rstd[r] = rs;
  }
  }, C);
}

void layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* mean,
                         const float* rstd, const float* gamma, int64_t rows, int64_t C) {
  rows_with_param_grads(rows, C, dgamma, dbeta, [=](int64_t lo, int64_t hi, float* dg, float* db) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float m = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;
    for (int64_t i = 0; i < C; ++i) {
      const float xh = (xr[i] - m) * rs;
      const float g = dyr[i] * (gamma ? gamma[i] : 1.0f);
      sg += static_cast<double>(g);
      sgx += static_cast<double>(g * xh);
      if (dg) dg[i] += dyr[i] * xh;
      if (db) db[i] += dyr[i];
    }
    if (!dx) continue;
    const float mg = static_cast<float>(sg / static_cast<double>(C));
    const float mgx = static_cast<float>(sgx / static_cast<double>(C));
    float* dxr = dx + r * C;
    for (int64_t i = 0; i < C; ++i) {
      const float xh = (xr[i] - m) * rs;
      const float g = dyr[i] * (gamma ? gamma[i] : 1.0f);
      dxr[i] += rs * (g - mg - xh * mgx);
    }
  }
  });
}

void rms_norm_forward(float* y, float* rstd, const float* x, const float* gamma, int64_t rows, int64_t C, float eps) {
  parallel_chunks(rows, kRows, [=](int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    double ss = 0.0;
    for (int64_t i = 0; i < C; ++i) ss += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
    const float rs = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(C) + static_cast<double>(eps)));
    float* yr = y + r * C;
    for (int64_t i = 0; i < C; ++i) yr[i] = (gamma ? gamma[i] : 1.0f) * xr[i] * rs;
    rstd[r] = rs;
  }
  }, C);
}

void rms_norm_backward(float* dx, float* dgamma, const float* dy, const float* x, const float* rstd,
                       const float* gamma, int64_t rows, int64_t C) {
  rows_with_param_grads(rows, C, dgamma, nullptr, [=](int64_t lo, int64_t hi, float* dg, float*) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* xr = x + r * C;
    const float* dyr = dy + r * C;
    const float rs = rstd[r];
    double sgx = 0.0;
    for (int64_t i = 0; i < C; ++i) {
      const float xh = xr[i] * rs;
      sgx += static_cast<double>(dyr[i] * (gamma ? gamma[i] : 1.0f) * xh);
      if (dg) dg[i] += dyr[i] * xh;
    }
    if (!dx) continue;
    const float mgx = static_cast<float>(sgx / static_cast<double>(C));
    float* dxr = dx + r * C;
    for (int64_t i = 0; i < C; ++i) {
      const float xh = xr[i] * rs;
      dxr[i] += rs * (dyr[i] * (gamma ? gamma[i] : 1.0f) - xh * mgx);
    }
  }
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
      layer_norm_backward(grad_of(x), grad_of(gamma), grad_of(beta), o.grad->data(), x.data(), stats->data(),
                          stats->data() + rows, ptr(gamma), rows, C);
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
      rms_norm_backward(grad_of(x), grad_of(gamma), o.grad->data(), x.data(), rstd->data(), ptr(gamma), rows, C);
    });
  return y;
}

}  // namespace sl

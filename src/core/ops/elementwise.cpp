// Elementwise kernels and their autograd wrappers.
//
// Derivatives: tanh' = 1 - y^2; relu' = [x > 0];
// exact GELU g = x Phi(x), g' = Phi(x) + x phi(x);
// tanh GELU g = 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3), c = sqrt(2/pi),
//   g' = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) c (1 + 3 * 0.044715 x^2).
// GELU's erf, exp and tanh are core/fastmath.h's vectorisable versions (tanh(u) =
// 1 - 2 / (e^(2u) + 1)); the loops run over chunks in parallel (core/parallel.h).
#include "core/ops/elementwise.h"

// GCC if-converts (and so vectorises) the clamps and selects of core/fastmath.h only when FP
// exceptions need not be preserved; stacklab never inspects FP exception flags. These kernels
// also contract a * b + c into an FMA where the clone has one (core/fastmath.h, SL_SIMD_CLONES).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "fp-contract=fast")
#endif

#include <algorithm>
#include <cmath>
#include <string>

#include "core/autograd.h"
#include "core/fastmath.h"
#include "core/parallel.h"
#include "util/error.h"

namespace sl {

namespace {
constexpr int64_t kChunk = 1 << 14;  // elements per parallel chunk

SL_SIMD_CLONES void add_span(float* out, const float* a, const float* b, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) out[i] = a[i] + b[i];
}
SL_SIMD_CLONES void accumulate_span(float* acc, const float* x, int64_t lo, int64_t hi,
                                    bool overwrite) {
  if (overwrite)
    for (int64_t i = lo; i < hi; ++i) acc[i] = x[i];
  else
    for (int64_t i = lo; i < hi; ++i) acc[i] += x[i];
}
}  // namespace

void add_forward(float* out, const float* a, const float* b, int64_t n, int64_t nb) {
  if (nb == n) {
    parallel_chunks(n, kChunk, [=](int64_t lo, int64_t hi) { add_span(out, a, b, lo, hi); });
    return;
  }
  for (int64_t i = 0; i < n; i += nb)
    for (int64_t j = 0; j < nb; ++j) out[i + j] = a[i + j] + b[j];
}
void add_backward(float* da, float* db, const float* dout, int64_t n, int64_t nb, bool overwrite_a,
                  bool overwrite_b) {
  if (da)
    parallel_chunks(
        n, kChunk, [=](int64_t lo, int64_t hi) { accumulate_span(da, dout, lo, hi, overwrite_a); });
  if (db && nb == n)
    parallel_chunks(
        n, kChunk, [=](int64_t lo, int64_t hi) { accumulate_span(db, dout, lo, hi, overwrite_b); });
  else if (db) {
    if (overwrite_b) std::fill(db, db + nb, 0.0f);
    for (int64_t i = 0; i < n; i += nb)
      for (int64_t j = 0; j < nb; ++j) db[j] += dout[i + j];
  }
}

void mul_forward(float* out, const float* a, const float* b, int64_t n, int64_t nb) {
  for (int64_t i = 0; i < n; i += nb)
    for (int64_t j = 0; j < nb; ++j) out[i + j] = a[i + j] * b[j];
}
void mul_backward(float* da, float* db, const float* dout, const float* a, const float* b,
                  int64_t n, int64_t nb) {
  for (int64_t i = 0; i < n; i += nb)
    for (int64_t j = 0; j < nb; ++j) {
      if (da) da[i + j] += dout[i + j] * b[j];
      if (db) db[j] += dout[i + j] * a[i + j];
    }
}

void tanh_forward(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

void relu_forward(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
void relu_backward(float* dx, const float* dy, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
}

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;
}  // namespace

namespace {
inline float fast_tanh(float u) { return 1.0f - 2.0f / (fast_exp(2.0f * u) + 1.0f); }

// Exact GELU with one exponential for value and slope: Phi(v) = (1 + erf(v / sqrt(2))) / 2, with
// A&S 7.1.26's erf(a) = 1 - poly(a) e^(-a^2) at a = |v| / sqrt(2), and e^(-a^2) = e^(-v^2 / 2) is
// also phi's exponential: so g = v Phi(v) and g' = Phi(v) + v phi(v) share e and poly. Every
// exact-GELU kernel below computes Phi as gelu_parts does, so a value has the same bits whichever
// kernel (plain, fused with its derivative, or the derivative alone) produced it.
struct GeluParts {
  float e, cdf;
};
inline GeluParts gelu_parts(float v) {
  const float e = fast_exp(-0.5f * v * v);
  const float erf_abs = 1.0f - erf_poly(__builtin_fabsf(v) * kInvSqrt2) * e;
  // Phi as an add, not a product: then g' = Phi + v (phi's factor) has one product to contract
  // into its add, the same in every kernel (GCC contracts a product whose only use is an add).
  return {e, 0.5f + 0.5f * __builtin_copysignf(erf_abs, v)};
}
inline float gelu_grad(float v) {
  const GeluParts g = gelu_parts(v);
  return g.cdf + v * (kInvSqrt2Pi * g.e);
}

// The loops over one chunk [lo, hi), as plain functions: GCC vectorises these, not the same
// loops written inside the OpenMP lambdas.
SL_SIMD_CLONES void gelu_forward_span(float* y, const float* x, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) y[i] = x[i] * gelu_parts(x[i]).cdf;
}
SL_SIMD_CLONES void gelu_tanh_forward_span(float* y, const float* x, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + fast_tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
  }
}
inline float gelu_tanh_grad(float v) {
  const float t = fast_tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
  return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
}
// y = g(x), and in place over x, g'(x): the forward of a GELU whose backward is then a product
// (linear_gelu keeps g'(x) instead of x). Each value has the bits of gelu_forward_span and of
// gelu_grad: the exact form shares e and Phi (gelu_parts), the tanh form tanh(u).
SL_SIMD_CLONES void gelu_forward_grad_span(float* y, float* xg, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    const float v = xg[i];
    const GeluParts g = gelu_parts(v);
    y[i] = v * g.cdf;
    xg[i] = g.cdf + v * (kInvSqrt2Pi * g.e);
  }
}
SL_SIMD_CLONES void gelu_tanh_forward_grad_span(float* y, float* xg, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) {
    const float v = xg[i];
    const float t = fast_tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
    y[i] = 0.5f * v * (1.0f + t);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    xg[i] = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
  }
}
// dg = dy * g in place over g: the backward of gelu_forward_grad_span, which left g'(x) in g.
SL_SIMD_CLONES void mul_in_place_span(float* g, const float* dy, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) g[i] = dy[i] * g[i];
}
// dx = or += dy * g'(x): the branch is outside the loops, each of which vectorises.
SL_SIMD_CLONES void gelu_backward_span(float* dx, const float* dy, const float* x, int64_t lo,
                                       int64_t hi, bool overwrite) {
  if (overwrite)
    for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * gelu_grad(x[i]);
  else
    for (int64_t i = lo; i < hi; ++i) dx[i] += dy[i] * gelu_grad(x[i]);
}
SL_SIMD_CLONES void gelu_tanh_backward_span(float* dx, const float* dy, const float* x, int64_t lo,
                                            int64_t hi, bool overwrite) {
  if (overwrite)
    for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * gelu_tanh_grad(x[i]);
  else
    for (int64_t i = lo; i < hi; ++i) dx[i] += dy[i] * gelu_tanh_grad(x[i]);
}
}  // namespace

void gelu_forward(float* y, const float* x, int64_t n, bool tanh_approx) {
  parallel_chunks(n, kChunk, [=](int64_t lo, int64_t hi) {
    tanh_approx ? gelu_tanh_forward_span(y, x, lo, hi) : gelu_forward_span(y, x, lo, hi);
  });
}
void gelu_forward_serial(float* y, const float* x, int64_t n, bool tanh_approx) {
  tanh_approx ? gelu_tanh_forward_span(y, x, 0, n) : gelu_forward_span(y, x, 0, n);
}
void gelu_forward_grad_serial(float* y, float* xg, int64_t n, bool tanh_approx) {
  tanh_approx ? gelu_tanh_forward_grad_span(y, xg, 0, n) : gelu_forward_grad_span(y, xg, 0, n);
}
void gelu_backward_from_grad_serial(float* g, const float* dy, int64_t n) {
  mul_in_place_span(g, dy, 0, n);
}
void gelu_backward_from_grad(float* g, const float* dy, int64_t n) {
  parallel_chunks(n, kChunk, [=](int64_t lo, int64_t hi) { mul_in_place_span(g, dy, lo, hi); });
}
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, bool tanh_approx,
                   bool overwrite) {
  parallel_chunks(n, kChunk, [=](int64_t lo, int64_t hi) {
    tanh_approx ? gelu_tanh_backward_span(dx, dy, x, lo, hi, overwrite)
                : gelu_backward_span(dx, dy, x, lo, hi, overwrite);
  });
}

namespace {

// Number of b elements repeated across a, or a ShapeError naming the op.
int64_t broadcast_width(const char* op, const Tensor& a, const Tensor& b) {
  if (b.numel() == 1) return 1;
  const int na = a.ndim(), nb = b.ndim();
  bool suffix = nb <= na;
  for (int i = 1; suffix && i <= nb; ++i) suffix = a.size(-i) == b.size(-i);
  if (!suffix)
    throw ShapeError(std::string("[") + op + "] cannot broadcast " + b.shape().str() + " onto " +
                     a.shape().str() +
                     " (b must match a, a suffix of a's shape, or have one element)");
  return b.numel();
}

template <typename Fwd, typename Bwd>
Tensor unary(const char* op, const Tensor& x, Fwd fwd, Bwd bwd) {
  Tensor y = Tensor::empty(x.shape());
  fwd(y.data(), x.data(), x.numel());
  if (needs_grad(x)) attach(y, op, {x}, [x, bwd](TensorImpl& o) { bwd(o, x); });
  return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  const int64_t nb = broadcast_width("add", a, b);
  Tensor out = Tensor::empty(a.shape());
  add_forward(out.data(), a.data(), b.data(), a.numel(), nb);
  if (needs_grad(a, b))
    attach(out, "add", {a, b}, [a, b, nb](TensorImpl& o) {
      const GradSlot da = grad_slot(a), db = grad_slot(b);
      add_backward(da.data, db.data, o.grad->data(), a.numel(), nb, da.fresh, db.fresh);
    });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw ShapeError("[sub] shapes differ: " + a.shape().str() + " vs " + b.shape().str());
  Tensor out = Tensor::empty(a.shape());
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) out.data()[i] = a.data()[i] - b.data()[i];
  if (needs_grad(a, b))
    attach(out, "sub", {a, b}, [a, b, n](TensorImpl& o) {
      const float* d = o.grad->data();
      if (float* da = grad_of(a))
        for (int64_t i = 0; i < n; ++i) da[i] += d[i];
      if (float* db = grad_of(b))
        for (int64_t i = 0; i < n; ++i) db[i] -= d[i];
    });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  const int64_t nb = broadcast_width("mul", a, b);
  Tensor out = Tensor::empty(a.shape());
  mul_forward(out.data(), a.data(), b.data(), a.numel(), nb);
  if (needs_grad(a, b))
    attach(out, "mul", {a, b}, [a, b, nb](TensorImpl& o) {
      mul_backward(grad_of(a), grad_of(b), o.grad->data(), a.data(), b.data(), a.numel(), nb);
    });
  return out;
}

Tensor scale(const Tensor& x, float s) {
  Tensor y = Tensor::empty(x.shape());
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) y.data()[i] = s * x.data()[i];
  if (needs_grad(x))
    attach(y, "scale", {x}, [x, s, n](TensorImpl& o) {
      float* dx = grad_of(x);
      const float* d = o.grad->data();
      for (int64_t i = 0; i < n; ++i) dx[i] += s * d[i];
    });
  return y;
}

Tensor tanh(const Tensor& x) {
  return unary("tanh", x, tanh_forward, [](TensorImpl& o, const Tensor& in) {
    tanh_backward(grad_of(in), o.grad->data(), o.data->data(), o.shape.numel());
  });
}

Tensor relu(const Tensor& x) {
  return unary("relu", x, relu_forward, [](TensorImpl& o, const Tensor& in) {
    relu_backward(grad_of(in), o.grad->data(), in.data(), in.numel());
  });
}

Tensor gelu(const Tensor& x, bool tanh_approx) {
  return unary(
      tanh_approx ? "gelu_tanh" : "gelu", x,
      [tanh_approx](float* y, const float* in, int64_t n) { gelu_forward(y, in, n, tanh_approx); },
      [tanh_approx](TensorImpl& o, const Tensor& in) {
        const GradSlot dx = grad_slot(in);
        gelu_backward(dx.data, o.grad->data(), in.data(), in.numel(), tanh_approx, dx.fresh);
      });
}

}  // namespace sl

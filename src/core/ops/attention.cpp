// Fused causal attention, per (batch b, head h), with Q, K, V (T, HS) the column blocks of qkv
// (row stride 3C) and s = 1/sqrt(HS):
//   forward:  S = s Q K^T;  P = softmax(S) over keys j <= i (P_ij = 0 for j > i);  Y = P V
//   backward: dV += P^T dY;  dP = dY V^T;  dS = P * (dP - rowsum(dP * P));
//             dQ += s dS K;  dK += s dS^T Q
// With attention dropout, a fixed mask M (entries 0 or 1/(1-p)) scales the probabilities:
//   forward Y = (P * M) V;  backward dV += (P * M)^T dY,  dP = (dY V^T) * M, the rest unchanged.
// The rows of P above the diagonal are 0, so dS is 0 there too and the full-square gemms add
// nothing from the future. Y and dY are (T, HS) column blocks of (B, T, C) (row stride C).
#include "core/ops/attention.h"

// GCC if-converts (and so vectorises) the clamps and selects of core/fastmath.h only when FP
// exceptions need not be preserved; stacklab never inspects FP exception flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "core/blas.h"
#include "core/error.h"
#include "core/fastmath.h"
#include "core/parallel.h"

namespace sl {
namespace {

// Causal softmax of one (T, T) block in place: row i over columns 0..i, zeros after. The max
// and the sum are `omp simd` reductions (lane partials, combined at the end: a fixed order, so
// still deterministic), which lets the exp loop vectorise too.
SL_SIMD_CLONES void causal_softmax_rows(float* p, int64_t T) {
  for (int64_t i = 0; i < T; ++i) {
    float* row = p + i * T;
    float mx = row[0];
#pragma omp simd reduction(max : mx)
    for (int64_t j = 1; j <= i; ++j) mx = row[j] > mx ? row[j] : mx;
    for (int64_t j = 0; j <= i; ++j) row[j] = fast_exp(row[j] - mx);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j <= i; ++j) sum += row[j];
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    for (int64_t j = i + 1; j < T; ++j) row[j] = 0.0f;
  }
}

// dS = P * (dP - rowsum(dP * P)) of one causal (T, T) block, in place over dP.
SL_SIMD_CLONES void causal_softmax_backward_rows(float* dp, const float* p, int64_t T) {
  for (int64_t i = 0; i < T; ++i) {
    const float* pr = p + i * T;
    float* dr = dp + i * T;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j <= i; ++j) dot += dr[j] * pr[j];
    for (int64_t j = 0; j <= i; ++j) dr[j] = pr[j] * (dr[j] - dot);
    for (int64_t j = i + 1; j < T; ++j) dr[j] = 0.0f;
  }
}

// out = p * m over one (T, T) block (the dropped-out probabilities).
void masked_copy(float* out, const float* p, const float* m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = p[i] * m[i];
}

}  // namespace

void attention_forward(float* y, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                       int64_t NH, const float* drop, bool keep_att) {
  const int64_t HS = C / NH, C3 = 3 * C;
  const float s = 1.0f / std::sqrt(static_cast<float>(HS));
  auto scratch =
      drop ? make_buffer(static_cast<size_t>(num_threads() * T * T)) : nullptr;  // P * M per thread
  blas_serial_for(B * NH, [&](int64_t bh) {
    const int64_t b = bh / NH, h = bh % NH;
    const float* q = qkv + b * T * C3 + h * HS;  // (T, HS), row stride 3C
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* p = att + (keep_att ? bh : thread_index()) * T * T;  // (T, T)
    gemm_ld(false, true, T, T, HS, s, q, C3, k, C3, 0.0f, p, T);
    causal_softmax_rows(p, T);
    const float* pv = p;
    if (drop) {
      float* pm = scratch->data() + thread_index() * T * T;  // (T, T)
      masked_copy(pm, p, drop + bh * T * T, T * T);
      pv = pm;
    }
    gemm_ld(false, false, T, HS, T, 1.0f, pv, T, v, C3, 0.0f, y + b * T * C + h * HS, C);
  });
}

void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int64_t B,
                        int64_t T, int64_t C, int64_t NH, bool overwrite, const float* drop) {
  const int64_t HS = C / NH, C3 = 3 * C;
  const float s = 1.0f / std::sqrt(static_cast<float>(HS));
  const float beta = overwrite ? 0.0f : 1.0f;  // each head's dQ, dK, dV columns are written once
  const int64_t per_thread = (drop ? 2 : 1) * T * T;  // dP, and P * M with dropout
  auto scratch = make_buffer(static_cast<size_t>(num_threads() * per_thread));
  blas_serial_for(B * NH, [&](int64_t bh) {
    const int64_t b = bh / NH, h = bh % NH;
    const int64_t off = b * T * C3 + h * HS;
    const float* q = qkv + off;
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* dq = dqkv + off;
    float* dk = dq + C;
    float* dv = dq + 2 * C;
    const float* p = att + bh * T * T;                          // (T, T)
    const float* dyb = dy + b * T * C + h * HS;                 // (T, HS), row stride C
    float* dp = scratch->data() + thread_index() * per_thread;  // (T, T)
    const float* m = drop ? drop + bh * T * T : nullptr;        // (T, T)
    const float* pv = p;
    if (m) {
      float* pm = dp + T * T;
      masked_copy(pm, p, m, T * T);
      pv = pm;
    }
    gemm_ld(true, false, T, HS, T, 1.0f, pv, T, dyb, C, beta, dv, C3);  // dV += (P M)^T dY
    gemm_ld(false, true, T, T, HS, 1.0f, dyb, C, v, C3, 0.0f, dp, T);   // dP = dY V^T
    if (m)
      for (int64_t i = 0; i < T * T; ++i) dp[i] *= m[i];             // through the mask
    causal_softmax_backward_rows(dp, p, T);                          // dS = P (dP - <dP, P>)
    gemm_ld(false, false, T, HS, T, s, dp, T, k, C3, beta, dq, C3);  // dQ += s dS K
    gemm_ld(true, false, T, HS, T, s, dp, T, q, C3, beta, dk, C3);   // dK += s dS^T Q
  });
}

Tensor causal_attention(const Tensor& qkv, int64_t n_head, const Tensor& drop_mask) {
  if (qkv.ndim() != 3 || n_head <= 0 || qkv.size(2) % (3 * n_head) != 0)
    throw ShapeError("[causal_attention] needs qkv (B, T, 3C) with C divisible by n_head=" +
                     std::to_string(n_head) + ", got " + qkv.shape().str());
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3;
  if (drop_mask.defined() && drop_mask.shape() != Shape{B, n_head, T, T})
    throw ShapeError("[causal_attention] dropout mask must be (B, NH, T, T) = " +
                     Shape{B, n_head, T, T}.str() + ", got " + drop_mask.shape().str());
  const float* drop = drop_mask.defined() ? drop_mask.data() : nullptr;
  Tensor y = Tensor::empty(Shape{B, T, C});
  const bool grad = needs_grad(qkv);
  auto att = make_buffer(static_cast<size_t>((grad ? B * n_head : num_threads()) * T *
                                             T));  // (B, NH, T, T), or (threads, T, T)
  attention_forward(y.data(), att->data(), qkv.data(), B, T, C, n_head, drop, grad);
  if (grad)
    attach(y, "causal_attention", {qkv}, [qkv, att, drop_mask, B, T, C, n_head](TensorImpl& o) {
      const GradSlot dqkv = grad_slot(qkv);
      attention_backward(dqkv.data, o.grad->data(), att->data(), qkv.data(), B, T, C, n_head,
                         dqkv.fresh, drop_mask.defined() ? drop_mask.data() : nullptr);
    });
  return y;
}

}  // namespace sl

// Fused causal attention, per (batch b, head h), with Q, K, V (T, HS) the column blocks of qkv
// (row stride 3C) and s = 1/sqrt(HS):
//   forward:  S = s Q K^T;  P = softmax(S) over keys j <= i (P_ij = 0 for j > i);  Y = P V
//   backward: dV += P^T dY;  dP = dY V^T;  dS = P * (dP - rowsum(dP * P));
//             dQ += s dS K;  dK += s dS^T Q
// With attention dropout, a fixed mask M (entries 0 or 1/(1-p)) scales the probabilities:
//   forward Y = (P * M) V;  backward dV += (P * M)^T dY,  dP = (dY V^T) * M, the rest unchanged.
// The rows of P above the diagonal are 0, so dS is 0 there too and the full-square gemms add
// nothing from the future. Y and dY are (T, HS) column blocks of (B, T, C) (row stride C).
//
// Two paths compute this. The reference one (attention_*_gemm) is a few strided sgemms over the
// full (T, T) square plus the causal softmax. The tiled one (attention_head_*), taken when HS is
// a multiple of 16 and there is no dropout mask, runs each (batch, head) as one loop over the
// query rows with 16-float vectors: the scores of row i only over the key chunks that reach i,
// the softmax, and P V, in one pass while the row is in registers and cache; backward likewise
// (dP, dS, dQ for row i, dK and dV accumulated in a (T, HS) scratch). At T = 64, HS = 16 the
// per-head sgemms are too small for BLAS to reach its speed, and half their work is above the
// diagonal. Both paths give the same values to float rounding (tests/core/attention_test.cpp).
#include "core/ops/attention.h"

// GCC if-converts (and so vectorises) the clamps and selects of core/fastmath.h only when FP
// exceptions need not be preserved; stacklab never inspects FP exception flags. These kernels
// also contract a * b + c into an FMA where the clone has one (core/fastmath.h, SL_SIMD_CLONES).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "fp-contract=fast")
#endif

#include <cmath>
#include <string>

#include "core/autograd.h"
#include "core/blas.h"
#include "core/parallel.h"
#include "core/simd.h"
#include "util/error.h"

namespace sl {
namespace {

int64_t padded(int64_t T) { return (T + kLanes - 1) / kLanes * kLanes; }

// Where row i of one (batch, head)'s P starts. The tiled path with T % 16 == 0 keeps P packed by
// bands of 16 rows: the rows of band c = i / 16 reach only the key chunks 0..c (the tiled kernels
// neither write nor read the chunks after a row's own), so each holds 16 (c + 1) floats, and P
// takes 16 * 16 * n (n + 1) / 2 floats for n = T / 16 bands instead of T^2 (0.625 of it at T = 64,
// about half at large T). Every other case: the full (T, T) square, row i at i T.
bool packed_probs(int64_t T, bool tiled) { return tiled && T % kLanes == 0; }
SL_VINLINE int64_t probs_row(int64_t i, int64_t T) {
  if (T % kLanes != 0) return i * T;
  const int64_t c = i / kLanes;
  return kLanes * kLanes * (c * (c + 1) / 2) + (i % kLanes) * kLanes * (c + 1);
}

// xt (HS, Tp) = X^T for the (T, HS) rows of x (row stride ld), zero past T. HS is a multiple of
// 16 (the tiled path's condition): whole 16 x 16 blocks in registers, the last T % 16 rows one
// by one.
SL_VINLINE void transpose_rows(float* xt, const float* x, int64_t ld, int64_t T, int64_t HS) {
  const int64_t Tp = padded(T);
  int64_t j0 = 0;
  for (; j0 + kLanes <= T; j0 += kLanes)
    for (int64_t d0 = 0; d0 < HS; d0 += kLanes) {
      v16 r[kLanes];
      for (int k = 0; k < kLanes; ++k) r[k] = vload(x + (j0 + k) * ld + d0);
      transpose16(r);
      for (int k = 0; k < kLanes; ++k) vstore(xt + (d0 + k) * Tp + j0, r[k]);
    }
  for (int64_t d = 0; d < HS; ++d) {
    for (int64_t j = j0; j < T; ++j) xt[d * Tp + j] = x[j * ld + d];
    for (int64_t j = T; j < Tp; ++j) xt[d * Tp + j] = 0.0f;
  }
}

// The kernels below take the query rows R at a time (R = 8 forward and 4 backward, and 1 for the
// last rows): each vector of K^T, V or K loaded once serves R independent sums, whose chains of
// FMAs then overlap. Forward, 8 chains hide the FMA's latency (b3's forward attention 12.1 -> 10.3
// ms on a Xeon model 207); backward keeps three vectors per row live, so 4 rows fill AVX-512's
// registers (8 rows for its dP sums alone measured no faster). Rows i0..i0+R-1 (i0 a multiple
// of R, R dividing 16) reach the same key chunks. Every element's sum still runs in one fixed
// order (over d, or over j), whatever R.
constexpr int kForwardRows = 8;
constexpr int kRowBlock = 4;
static_assert(kLanes % kForwardRows == 0 && kLanes % kRowBlock == 0,
              "a block of query rows must lie within one 16-key chunk");

// Causal softmax of row i's scores sc[0..i] into out (T): the probabilities, zeros after i; sc
// is overwritten with the exponentials (out may be sc: the gemm path works in place). The max and
// the sum are `omp simd` reductions (lane partials, combined at the end: a fixed order, so still
// deterministic), which lets the exp loop vectorise too. Both paths' rows when T % 16 != 0.
SL_VINLINE void causal_softmax_row(float* out, float* sc, int64_t i, int64_t T) {
  float mx = sc[0];
#pragma omp simd reduction(max : mx)
  for (int64_t j = 1; j <= i; ++j) mx = sc[j] > mx ? sc[j] : mx;
  for (int64_t j = 0; j <= i; ++j) sc[j] = fast_exp(sc[j] - mx);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j <= i; ++j) sum += sc[j];
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j <= i; ++j) out[j] = sc[j] * inv;
  for (int64_t j = i + 1; j < T; ++j) out[j] = 0.0f;
}

// The tiled path's causal softmax of row i, sc[0..i] into pi (T). When T is a multiple of 16,
// whole 16-key chunks (the lanes past i masked out), with no scalar tail, and the chunks past
// i's own are not written: the tiled kernels read row i of an R-row block only up to the block's
// last row, which lies in i's chunk (a block starts at a multiple of R, which divides 16), so
// storing their zeros would only write a third of P to memory for nothing (T = 64). Otherwise
// causal_softmax_row.
SL_VINLINE void softmax_row(float* pi, float* sc, int64_t i, int64_t T) {
  if (T % kLanes == 0) {
    const int64_t chunks = i / kLanes + 1, last = chunks - 1;
    const v16i past = lane_index() > static_cast<float>(i - last * kLanes);  // of the last chunk
    const v16 minus_inf = vsplat(-__builtin_inff());
    v16 m = minus_inf;
    for (int64_t c = 0; c < chunks; ++c) {
      v16 x = vload(sc + c * kLanes);
      if (c == last) x = past ? minus_inf : x;
      m = x > m ? x : m;
    }
    const float mx = hmax(m);
    v16 sum = v16{};
    for (int64_t c = 0; c < chunks; ++c) {
      v16 e = fast_exp(vload(sc + c * kLanes) - mx);
      if (c == last) e = past ? v16{} : e;
      vstore(pi + c * kLanes, e);
      sum += e;
    }
    const float inv = 1.0f / hsum(sum);
    for (int64_t c = 0; c < chunks; ++c) vstore(pi + c * kLanes, vload(pi + c * kLanes) * inv);
    return;
  }
  causal_softmax_row(pi, sc, i, T);
}

// out (R, Tp) row r, chunks 0..i_last/16: scale * (x_{i0+r} . Y_j), with yt (HS, Tp) = Y^T and
// x rows of stride ldx.
template <int R>
SL_VINLINE void row_dots(float* out, const float* x, int64_t ldx, const float* yt, int64_t i0,
                         int64_t Tp, int64_t HS, float scale) {
  const int64_t chunks = (i0 + R - 1) / kLanes + 1;
  for (int64_t c = 0; c < chunks; ++c) {
    v16 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = v16{};
    for (int64_t d = 0; d < HS; ++d) {
      const v16 yv = vload(yt + d * Tp + c * kLanes);
      for (int r = 0; r < R; ++r) acc[r] += vsplat(x[(i0 + r) * ldx + d]) * yv;
    }
    for (int r = 0; r < R; ++r) vstore(out + r * Tp + c * kLanes, acc[r] * scale);
  }
}

// Forward of rows i0..i0+R-1 of one (batch, head); see attention_head_forward.
template <int R>
SL_VINLINE void forward_rows(float* y, int64_t ldy, float* p, const float* q, const float* v,
                             int64_t ld, int64_t i0, int64_t T, int64_t HS, float s,
                             const float* kt, float* sc) {
  const int64_t Tp = padded(T), last = i0 + R - 1;
  row_dots<R>(sc, q, ld, kt, i0, Tp, HS, s);  // sc[r][j] = s q_{i0+r} . k_j
  for (int r = 0; r < R; ++r) softmax_row(p + probs_row(i0 + r, T), sc + r * Tp, i0 + r, T);
  for (int64_t c = 0; c < HS; c += kLanes) {  // y_i = sum_{j <= i} p_ij v_j (p_ij = 0 past i)
    v16 acc[R];
    const float* pr[R];
    for (int r = 0; r < R; ++r) acc[r] = v16{}, pr[r] = p + probs_row(i0 + r, T);
    for (int64_t j = 0; j <= last; ++j) {
      const v16 vj = vload(v + j * ld + c);
      for (int r = 0; r < R; ++r) acc[r] += vsplat(pr[r][j]) * vj;
    }
    for (int r = 0; r < R; ++r) vstore(y + (i0 + r) * ldy + c, acc[r]);
  }
}

// Forward of one (batch, head): p the probabilities, row i at probs_row(i, T) (0 above the
// diagonal within the diagonal's 16-key chunk; packed, without the chunks after it, when
// T % 16 == 0), y (T, HS).
// q, k, v (T, HS) rows of stride ld; y rows of stride ldy. kt: (HS, Tp) scratch, sc: (8, Tp).
SL_SIMD_CLONES void attention_head_forward(float* y, int64_t ldy, float* p, const float* q,
                                           const float* k, const float* v, int64_t ld, int64_t T,
                                           int64_t HS, float s, float* kt, float* sc) {
  transpose_rows(kt, k, ld, T, HS);
  int64_t i0 = 0;
  for (; i0 + kForwardRows <= T; i0 += kForwardRows)
    forward_rows<kForwardRows>(y, ldy, p, q, v, ld, i0, T, HS, s, kt, sc);
  for (; i0 < T; ++i0) forward_rows<1>(y, ldy, p, q, v, ld, i0, T, HS, s, kt, sc);
}

// Backward of rows i0..i0+R-1 of one (batch, head); see attention_head_backward.
template <int R>
SL_VINLINE void backward_rows(float* dq, float* dk_acc, float* dv_acc, const float* dy, int64_t ldy,
                              const float* p, const float* q, const float* k, int64_t ld,
                              int64_t i0, int64_t T, int64_t HS, float s, bool accumulate,
                              const float* vt, float* ds) {
  const int64_t Tp = padded(T), last = i0 + R - 1;
  row_dots<R>(ds, dy, ldy, vt, i0, Tp, HS, 1.0f);  // ds[r][j] = dP_ij = dy_i . v_j
  for (int r = 0; r < R; ++r) {  // ds[r][j] = s dS_ij = s P_ij (dP_ij - <dP_i, P_i>), 0 past i
    const int64_t i = i0 + r;
    const float* pi = p + probs_row(i, T);
    float* dsr = ds + r * Tp;
    if (T % kLanes == 0) {  // whole chunks: P_ij = 0 past i, so those lanes add 0 and give 0
      const int64_t chunks = i / kLanes + 1;
      v16 acc = v16{};
      for (int64_t c = 0; c < chunks; ++c) acc += vload(dsr + c * kLanes) * vload(pi + c * kLanes);
      const float dot = hsum(acc);
      for (int64_t c = 0; c < chunks; ++c)
        vstore(dsr + c * kLanes, s * (vload(pi + c * kLanes) * (vload(dsr + c * kLanes) - dot)));
      continue;
    }
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j <= i; ++j) dot += dsr[j] * pi[j];
    for (int64_t j = 0; j <= i; ++j) dsr[j] = s * (pi[j] * (dsr[j] - dot));
    for (int64_t j = i + 1; j <= last; ++j) dsr[j] = 0.0f;
  }
  for (int64_t c = 0; c < HS; c += kLanes) {
    v16 dyc[R], qc[R], acc[R];
    const float* pr[R];
    for (int r = 0; r < R; ++r) {
      pr[r] = p + probs_row(i0 + r, T);
      dyc[r] = vload(dy + (i0 + r) * ldy + c);
      qc[r] = vload(q + (i0 + r) * ld + c);
      acc[r] = v16{};
    }
    for (int64_t j = 0; j <= last; ++j) {
      const v16 kj = vload(k + j * ld + c);
      v16 gk = vload(dk_acc + j * HS + c), gv = vload(dv_acc + j * HS + c);
      for (int r = 0; r < R; ++r) {
        const v16 dsj = vsplat(ds[r * Tp + j]);
        acc[r] += dsj * kj;               // dq_i += s dS_ij k_j
        gk += dsj * qc[r];                // dk_j += s dS_ij q_i
        gv += vsplat(pr[r][j]) * dyc[r];  // dv_j += P_ij dy_i
      }
      vstore(dk_acc + j * HS + c, gk);
      vstore(dv_acc + j * HS + c, gv);
    }
    for (int r = 0; r < R; ++r) {
      float* dqi = dq + (i0 + r) * ld + c;
      vstore(dqi, accumulate ? vload(dqi) + acc[r] : acc[r]);
    }
  }
}

// Backward of one (batch, head): dq, dk, dv (T, HS) rows of stride ld, = (beta 0) or += (beta 1)
// the gradients, given p (rows at probs_row, as the forward wrote them) and dy (T, HS) rows of
// stride ldy.
// scratch: 2 T HS + HS Tp + 4 Tp floats.
SL_SIMD_CLONES void attention_head_backward(float* dq, float* dk, float* dv, const float* dy,
                                            int64_t ldy, const float* p, const float* q,
                                            const float* k, const float* v, int64_t ld, int64_t T,
                                            int64_t HS, float s, bool accumulate, float* scratch) {
  const int64_t Tp = padded(T);
  float* dk_acc = scratch;          // (T, HS): sum_i s dS_ij q_i
  float* dv_acc = dk_acc + T * HS;  // (T, HS): sum_i P_ij dy_i
  float* vt = dv_acc + T * HS;      // (HS, Tp): V^T
  float* ds = vt + HS * Tp;         // (4, Tp): dP, then s dS, of the block's rows
  transpose_rows(vt, v, ld, T, HS);
  for (int64_t n = 0; n < 2 * T * HS; ++n) scratch[n] = 0.0f;
  int64_t i0 = 0;
  for (; i0 + kRowBlock <= T; i0 += kRowBlock)
    backward_rows<kRowBlock>(dq, dk_acc, dv_acc, dy, ldy, p, q, k, ld, i0, T, HS, s, accumulate, vt,
                             ds);
  for (; i0 < T; ++i0)
    backward_rows<1>(dq, dk_acc, dv_acc, dy, ldy, p, q, k, ld, i0, T, HS, s, accumulate, vt, ds);
  for (int64_t j = 0; j < T; ++j)
    for (int64_t c = 0; c < HS; c += kLanes) {
      float* dkj = dk + j * ld + c;
      float* dvj = dv + j * ld + c;
      const v16 gk = vload(dk_acc + j * HS + c), gv = vload(dv_acc + j * HS + c);
      vstore(dkj, accumulate ? vload(dkj) + gk : gk);
      vstore(dvj, accumulate ? vload(dvj) + gv : gv);
    }
}

// Causal softmax of one (T, T) block in place: row i over columns 0..i, zeros after.
SL_SIMD_CLONES void causal_softmax_rows(float* p, int64_t T) {
  for (int64_t i = 0; i < T; ++i) causal_softmax_row(p + i * T, p + i * T, i, T);
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

bool& attention_force_gemm() {
  static bool force = false;
  return force;
}

bool attention_tiled(int64_t HS, const float* drop) {
  return HS % kLanes == 0 && drop == nullptr && !attention_force_gemm();
}

int64_t attention_probs_size(int64_t T, int64_t HS, const float* drop) {
  if (!packed_probs(T, attention_tiled(HS, drop))) return T * T;
  const int64_t n = T / kLanes;
  return kLanes * kLanes * (n * (n + 1) / 2);
}

void attention_forward(float* y, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                       int64_t NH, const float* drop, bool keep_att) {
  const int64_t HS = C / NH, C3 = 3 * C;
  const float s = 1.0f / std::sqrt(static_cast<float>(HS));
  const int64_t PS = attention_probs_size(T, HS, drop);  // floats of one (batch, head)'s P
  if (attention_tiled(HS, drop)) {
    const int64_t per_thread = (HS + kForwardRows) * padded(T);  // K^T and 8 score rows
    auto scratch = make_buffer(static_cast<size_t>(num_threads() * per_thread));
    parallel_for(B * NH, B * NH * T * T * HS, [&](int64_t bh) {
      const int64_t b = bh / NH, h = bh % NH;
      const float* q = qkv + b * T * C3 + h * HS;
      float* kt = scratch->data() + thread_index() * per_thread;  // (HS, Tp), then sc (8, Tp)
      attention_head_forward(y + b * T * C + h * HS, C, att + (keep_att ? bh : thread_index()) * PS,
                             q, q + C, q + 2 * C, C3, T, HS, s, kt, kt + HS * padded(T));
    });
    return;
  }
  auto scratch =
      drop ? make_buffer(static_cast<size_t>(num_threads() * T * T)) : nullptr;  // P * M per thread
  blas_serial_for(B * NH, [&](int64_t bh) {
    const int64_t b = bh / NH, h = bh % NH;
    const float* q = qkv + b * T * C3 + h * HS;  // (T, HS), row stride 3C
    const float* k = q + C;
    const float* v = q + 2 * C;
    float* p = att + (keep_att ? bh : thread_index()) * PS;  // (T, T)
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
  const int64_t PS = attention_probs_size(T, HS, drop);  // floats of one (batch, head)'s P
  if (attention_tiled(HS, drop)) {
    const int64_t per_thread = 2 * T * HS + (HS + kRowBlock) * padded(T);
    auto scratch = make_buffer(static_cast<size_t>(num_threads() * per_thread));
    parallel_for(B * NH, B * NH * T * T * HS, [&](int64_t bh) {
      const int64_t b = bh / NH, h = bh % NH;
      const int64_t off = b * T * C3 + h * HS;
      attention_head_backward(dqkv + off, dqkv + off + C, dqkv + off + 2 * C,
                              dy + b * T * C + h * HS, C, att + bh * PS, qkv + off, qkv + off + C,
                              qkv + off + 2 * C, C3, T, HS, s, !overwrite,
                              scratch->data() + thread_index() * per_thread);
    });
    return;
  }
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
    const float* p = att + bh * PS;                             // (T, T)
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
  auto att = make_buffer(static_cast<size_t>(
      (grad ? B * n_head : num_threads()) *
      attention_probs_size(T, C / n_head, drop)));  // per (batch, head), or per thread
  attention_forward(y.data(), att->data(), qkv.data(), B, T, C, n_head, drop, grad);
  // The tiled forward leaves P's chunks past the diagonal's unwritten, which only the tiled
  // backward does not read: both must take the same path (they can differ only through the
  // tests' attention_force_gemm()).
  const bool tiled = attention_tiled(C / n_head, drop);
  if (grad)
    attach(
        y, "causal_attention", {qkv}, [qkv, att, drop_mask, B, T, C, n_head, tiled](TensorImpl& o) {
          SL_CHECK(attention_tiled(C / n_head, drop_mask.defined() ? drop_mask.data() : nullptr) ==
                       tiled,
                   "causal_attention: backward would take another path than its forward");
          const GradSlot dqkv = grad_slot(qkv);
          attention_backward(dqkv.data, o.grad->data(), att->data(), qkv.data(), B, T, C, n_head,
                             dqkv.fresh, drop_mask.defined() ? drop_mask.data() : nullptr);
        });
  return y;
}

}  // namespace sl

// Fused causal multi-head self-attention on a packed qkv tensor: (B, T, 3C) -> (B, T, C), the
// composition split(q|k|v) -> heads -> softmax(q k^T / sqrt(HS), causal) v -> merge heads in one
// op, without the slice/permute copies. Each (batch, head) is a few strided gemms plus a causal
// softmax, run in parallel over (batch, head). Attention dropout takes a fixed mask (drawn by the
// caller, entries 0 or 1/(1-p)) applied to the probabilities. Not here: masks other than causal.
#pragma once
#include "core/tensor.h"

namespace sl {

// qkv (B, T, 3C), columns q | k | v, head h owning columns [h*HS, (h+1)*HS) of each; HS = C/NH.
// y (B, T, C) (heads merged), att the attention probabilities kept for backward: B * NH blocks
// of attention_probs_size(T, HS, drop) floats, (b, h) at block b NH + h, in a layout of the
// kernels' own (the (T, T) square, 0 above the diagonal, or the tiled path's packed rows).
// drop (B, NH, T, T) or nullptr: the dropout mask multiplied into the probabilities before V.
// With keep_att false, att is only num_threads() such blocks of scratch, one per thread, and the
// probabilities are not kept (a forward pass without the tape: an evaluation).
void attention_forward(float* y, float* att, const float* qkv, int64_t B, int64_t T, int64_t C,
                       int64_t NH, const float* drop = nullptr, bool keep_att = true);
// dqkv (B, T, 3C) += the gradient through attention_forward, given dy (B, T, C); with overwrite,
// dqkv = it (dqkv's old contents are ignored).
void attention_backward(float* dqkv, const float* dy, const float* att, const float* qkv, int64_t B,
                        int64_t T, int64_t C, int64_t NH, bool overwrite = false,
                        const float* drop = nullptr);

// Whether attention_forward / attention_backward run the tiled kernels (core/ops/attention.cpp:
// HS a multiple of 16, no dropout mask) rather than the per-head sgemms. Setting
// attention_force_gemm() to true sends every call down the sgemm path, the reference that the
// tests compare the tiled one with.
bool attention_tiled(int64_t HS, const float* drop);
bool& attention_force_gemm();

// Floats of one (batch, head)'s block of att: T^2, or 16 * 16 * n (n + 1) / 2 (n = T / 16) when
// the tiled path keeps only the 16-key chunks each row reaches (T a multiple of 16): 0.625 of
// T^2 at T = 64, towards half at large T, and so that much less of a deep stack's peak memory.
int64_t attention_probs_size(int64_t T, int64_t HS, const float* drop);

// drop_mask: undefined (no dropout) or a constant (B, NH, T, T) mask. When no gradient is recorded
// the probabilities live in per-thread scratch instead of a (B, NH, T, T) buffer.
Tensor causal_attention(const Tensor& qkv, int64_t n_head, const Tensor& drop_mask = Tensor());

}  // namespace sl

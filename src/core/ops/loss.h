// Fused log-softmax + cross-entropy over (N, V) logits with integer targets, mean over rows.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sl {

// Kernel pair. Forward writes probs (N, V) (kept for backward) and returns the mean loss
// (accumulated in double). Backward: dlogits += dloss * (probs - onehot(target)) / N.
double cross_entropy_forward(float* probs, const float* logits, const int32_t* targets, int64_t N,
                             int64_t V);
void cross_entropy_backward(float* dlogits, float dloss, const float* probs, const int32_t* targets,
                            int64_t N, int64_t V);

// logits (N, V) or (B, T, V) flattened to rows; targets one per row, each in [0, V).
Tensor cross_entropy(const Tensor& logits, const std::vector<int32_t>& targets);

}  // namespace sl

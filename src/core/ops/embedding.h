// Embedding lookup: rows of a (V, C) table gathered by integer ids; backward scatter-adds.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace sl {

void embedding_forward(float* out, const float* weight, const int32_t* ids, int64_t n, int64_t C);
void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t n,
                        int64_t C);

// weight (V, C); ids laid out as ids_shape (e.g. (B, T)) -> ids_shape + (C).
Tensor embedding(const Tensor& weight, const std::vector<int32_t>& ids, const Shape& ids_shape);

}  // namespace sl

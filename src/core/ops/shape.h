// Reshapes and the permutes that split and merge attention heads.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace sl {

// Same data, new shape (a view: shares storage; numel must match).
Tensor reshape(const Tensor& x, const Shape& shape);
// x (..., N) -> (..., len): entries [start, start + len) of the last dim (a copy).
Tensor slice_last(const Tensor& x, int64_t start, int64_t len);
// parts (..., N_i), equal leading dims -> (..., sum N_i): the inverse of slice_last (a copy).
Tensor concat_last(const std::vector<Tensor>& parts);
// x (B, T, C) -> (B, NH, T, HS) with HS = C / NH, and back.
Tensor split_heads(const Tensor& x, int64_t n_head);
Tensor merge_heads(const Tensor& x);

}  // namespace sl

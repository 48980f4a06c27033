// Gather forward, scatter-add backward (repeated ids accumulate).
#include "core/ops/embedding.h"

#include <algorithm>
#include <string>

#include "core/autograd.h"
#include "util/error.h"

namespace sl {

void embedding_forward(float* out, const float* weight, const int32_t* ids, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i)
    std::copy(weight + ids[i] * C, weight + (ids[i] + 1) * C, out + i * C);
}

void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t n,
                        int64_t C) {
  for (int64_t i = 0; i < n; ++i) {
    float* dw = dweight + ids[i] * C;
    const float* d = dout + i * C;
    for (int64_t j = 0; j < C; ++j) dw[j] += d[j];
  }
}

Tensor embedding(const Tensor& weight, const std::vector<int32_t>& ids, const Shape& ids_shape) {
  if (weight.ndim() != 2)
    throw ShapeError("[embedding] weight must be (V, C), got " + weight.shape().str());
  if (ids_shape.numel() != static_cast<int64_t>(ids.size()) || ids_shape.ndim() >= Shape::kMaxDims)
    throw ShapeError("[embedding] " + std::to_string(ids.size()) + " ids do not fit shape " +
                     ids_shape.str());
  const int64_t V = weight.size(0), C = weight.size(1), n = static_cast<int64_t>(ids.size());
  for (int64_t i = 0; i < n; ++i)
    if (ids[static_cast<size_t>(i)] < 0 || ids[static_cast<size_t>(i)] >= V)
      throw ShapeError("[embedding] id " + std::to_string(ids[static_cast<size_t>(i)]) +
                       " at position " + std::to_string(i) + " is outside the table of " +
                       std::to_string(V) + " rows");
  std::vector<int64_t> dims = ids_shape.to_vector();
  dims.push_back(C);
  Tensor out = Tensor::empty(Shape(dims));
  embedding_forward(out.data(), weight.data(), ids.data(), n, C);
  if (needs_grad(weight))
    attach(out, "embedding", {weight}, [weight, ids, n, C](TensorImpl& o) {
      embedding_backward(grad_of(weight), o.grad->data(), ids.data(), n, C);
    });
  return out;
}

}  // namespace sl

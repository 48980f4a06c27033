// View and permute ops; their backward moves gradients back to the input's layout.
#include "core/ops/shape.h"

#include <algorithm>
#include <string>

#include "core/autograd.h"
#include "util/error.h"

namespace sl {

Tensor reshape(const Tensor& x, const Shape& shape) {
  if (shape.numel() != x.numel())
    throw ShapeError("[reshape] cannot view " + x.shape().str() + " as " + shape.str());
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->data = x.impl()->data;
  Tensor y(std::move(impl));
  if (needs_grad(x))
    attach(y, "reshape", {x}, [x](TensorImpl& o) {
      float* dx = grad_of(x);
      const float* d = o.grad->data();
      for (int64_t i = 0, n = x.numel(); i < n; ++i) dx[i] += d[i];
    });
  return y;
}

Tensor slice_last(const Tensor& x, int64_t start, int64_t len) {
  const int64_t N = x.size(-1);
  if (start < 0 || len < 0 || start + len > N)
    throw ShapeError("[slice_last] range [" + std::to_string(start) + ", " +
                     std::to_string(start + len) + ") is outside the last dim of " +
                     x.shape().str());
  const int64_t rows = x.numel() / N;
  std::vector<int64_t> dims = x.shape().to_vector();
  dims.back() = len;
  Tensor y = Tensor::empty(Shape(dims));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < len; ++j) y.data()[r * len + j] = x.data()[r * N + start + j];
  if (needs_grad(x))
    attach(y, "slice_last", {x}, [x, start, len, rows, N](TensorImpl& o) {
      float* dx = grad_of(x);
      const float* d = o.grad->data();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < len; ++j) dx[r * N + start + j] += d[r * len + j];
    });
  return y;
}

Tensor concat_last(const std::vector<Tensor>& parts) {
  if (parts.empty()) throw ShapeError("[concat_last] needs at least one tensor");
  const int64_t rows = parts[0].numel() / parts[0].size(-1);
  std::vector<int64_t> dims = parts[0].shape().to_vector();
  int64_t N = 0;
  for (const Tensor& p : parts) {
    std::vector<int64_t> d = p.shape().to_vector();
    if (d.size() != dims.size() || !std::equal(d.begin(), d.end() - 1, dims.begin()))
      throw ShapeError("[concat_last] leading dims differ: " + parts[0].shape().str() + " vs " +
                       p.shape().str());
    N += d.back();
  }
  dims.back() = N;
  Tensor y = Tensor::empty(Shape(dims));
  bool grad = false;
  for (int64_t r = 0, at = 0; r < rows; ++r)
    for (const Tensor& p : parts) {
      const int64_t n = p.size(-1);
      std::copy(p.data() + r * n, p.data() + (r + 1) * n, y.data() + at);
      at += n;
    }
  for (const Tensor& p : parts) grad = grad || needs_grad(p);
  if (grad)
    attach(y, "concat_last", parts, [parts, rows, N](TensorImpl& o) {
      const float* d = o.grad->data();
      for (int64_t off = 0; const Tensor& p : parts) {
        const int64_t n = p.size(-1);
        if (float* dp = grad_of(p)) {
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) dp[r * n + j] += d[r * N + off + j];
        }
        off += n;
      }
    });
  return y;
}

namespace {
// (B, T, NH, HS) <-> (B, NH, T, HS): one permute; `to_heads` picks the direction.
void permute_heads(float* dst, const float* src, int64_t B, int64_t T, int64_t NH, int64_t HS,
                   bool to_heads, bool accumulate) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < NH; ++h) {
        const int64_t btc = ((b * T + t) * NH + h) * HS;  // (B, T, NH, HS)
        const int64_t bht = ((b * NH + h) * T + t) * HS;  // (B, NH, T, HS)
        const float* s = src + (to_heads ? btc : bht);
        float* d = dst + (to_heads ? bht : btc);
        if (accumulate)
          for (int64_t i = 0; i < HS; ++i) d[i] += s[i];
        else
          for (int64_t i = 0; i < HS; ++i) d[i] = s[i];
      }
}
}  // namespace

Tensor split_heads(const Tensor& x, int64_t n_head) {
  if (x.ndim() != 3 || n_head <= 0 || x.size(2) % n_head != 0)
    throw ShapeError("[split_heads] needs (B, T, C) with C divisible by n_head=" +
                     std::to_string(n_head) + ", got " + x.shape().str());
  const int64_t B = x.size(0), T = x.size(1), HS = x.size(2) / n_head;
  Tensor y = Tensor::empty(Shape{B, n_head, T, HS});
  permute_heads(y.data(), x.data(), B, T, n_head, HS, true, false);
  if (needs_grad(x))
    attach(y, "split_heads", {x}, [x, B, T, n_head, HS](TensorImpl& o) {
      permute_heads(grad_of(x), o.grad->data(), B, T, n_head, HS, false, true);
    });
  return y;
}

Tensor merge_heads(const Tensor& x) {
  if (x.ndim() != 4) throw ShapeError("[merge_heads] needs (B, NH, T, HS), got " + x.shape().str());
  const int64_t B = x.size(0), NH = x.size(1), T = x.size(2), HS = x.size(3);
  Tensor y = Tensor::empty(Shape{B, T, NH * HS});
  permute_heads(y.data(), x.data(), B, T, NH, HS, false, false);
  if (needs_grad(x))
    attach(y, "merge_heads", {x}, [x, B, T, NH, HS](TensorImpl& o) {
      permute_heads(grad_of(x), o.grad->data(), B, T, NH, HS, true, true);
    });
  return y;
}

}  // namespace sl

// Elementwise ops: add and mul with trailing broadcast, sub of equal shapes, scale, and the
// activations. Broadcast rule of add and mul: b has a's shape, or b's shape is a suffix of a's
// (a bias (C) or a position table (T, C) added to (B, T, C)), or b has one element (a learnable
// gate). Nothing else; sub needs equal shapes and throws otherwise.
#pragma once
#include "core/tensor.h"

namespace sl {

// Kernel pairs over n elements of a and nb elements of b (b indexed i % nb).
void add_forward(float* out, const float* a, const float* b, int64_t n, int64_t nb);
void add_backward(float* da, float* db, const float* dout, int64_t n, int64_t nb,
                  bool overwrite_a = false, bool overwrite_b = false);
void mul_forward(float* out, const float* a, const float* b, int64_t n, int64_t nb);
void mul_backward(float* da, float* db, const float* dout, const float* a, const float* b,
                  int64_t n, int64_t nb);
void tanh_forward(float* y, const float* x, int64_t n);
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n);
void relu_forward(float* y, const float* x, int64_t n);
void relu_backward(float* dx, const float* dy, const float* x, int64_t n);
void gelu_forward(float* y, const float* x, int64_t n, bool tanh_approx);
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n, bool tanh_approx,
                   bool overwrite = false);
// The forward on the calling thread only, for kernels that run it inside their own parallel
// blocks (the Linear + GELU epilogue of core/ops/matmul.h). y may be x (in place).
void gelu_forward_serial(float* y, const float* x, int64_t n, bool tanh_approx);
// GELU with its derivative kept for backward: y = g(x) and g'(x) in place over xg; backward is
// then g = dy * g in place (g becomes dL/dx). The values are gelu_forward's and
// gelu_backward's to the bit. The _serial forms run on the calling thread only.
void gelu_forward_grad_serial(float* y, float* xg, int64_t n, bool tanh_approx);
void gelu_backward_from_grad_serial(float* g, const float* dy, int64_t n);
void gelu_backward_from_grad(float* g, const float* dy, int64_t n);

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, float s);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
// GELU: exact x * Phi(x) (erf form), or the tanh approximation of GPT-2 when tanh_approx.
Tensor gelu(const Tensor& x, bool tanh_approx = false);

}  // namespace sl

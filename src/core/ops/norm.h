// LayerNorm, RMSNorm and Dynamic Tanh over the last dimension, per position (no batch statistics).
//   layer_norm: y_i = gamma_i (x_i - mu) / sqrt(sigma^2 + eps) + beta_i   (sigma^2 biased)
//   rms_norm:   y_i = gamma_i x_i / sqrt(mean(x^2) + eps)                 (no mean subtracted)
//   dyt:        y_i = gamma_i tanh(alpha x_i) + beta_i                    (alpha one scalar; no
//   statistics)
#pragma once
#include "core/tensor.h"

namespace sl {

// Kernel pairs over `rows` rows of C entries. gamma/beta may be null (1 and 0). Forward saves
// per-row mean (layer_norm only) and rstd = 1/sqrt(var + eps) for backward.
void layer_norm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                        const float* beta, int64_t rows, int64_t C, float eps);
void layer_norm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                         const float* mean, const float* rstd, const float* gamma, int64_t rows,
                         int64_t C, bool overwrite_dx = false);
void rms_norm_forward(float* y, float* rstd, const float* x, const float* gamma, int64_t rows,
                      int64_t C, float eps);
void rms_norm_backward(float* dx, float* dgamma, const float* dy, const float* x, const float* rstd,
                       const float* gamma, int64_t rows, int64_t C, bool overwrite_dx = false);

// The plain reference pair of the four kernels above (norm_reference.cpp): one row at a time,
// every sum in double (the outputs float), no vectors, threads or per-CPU clones. Same arguments;
// backward accumulates into dx as well. The tests hold the kernels to it.
void layer_norm_forward_reference(float* y, float* mean, float* rstd, const float* x,
                                  const float* gamma, const float* beta, int64_t rows, int64_t C,
                                  float eps);
void layer_norm_backward_reference(float* dx, float* dgamma, float* dbeta, const float* dy,
                                   const float* x, const float* mean, const float* rstd,
                                   const float* gamma, int64_t rows, int64_t C);
void rms_norm_forward_reference(float* y, float* rstd, const float* x, const float* gamma,
                                int64_t rows, int64_t C, float eps);
void rms_norm_backward_reference(float* dx, float* dgamma, const float* dy, const float* x,
                                 const float* rstd, const float* gamma, int64_t rows, int64_t C);

// DyT: forward saves t = tanh(alpha x) (rows * C) for backward. With u = dy gamma (1 - t^2):
//   dx = alpha u; dalpha += sum(u x); dgamma += dy t; dbeta += dy. gamma/beta may be null.
void dyt_forward(float* y, float* t, const float* x, float alpha, const float* gamma,
                 const float* beta, int64_t rows, int64_t C);
void dyt_backward(float* dx, float* dalpha, float* dgamma, float* dbeta, const float* dy,
                  const float* x, const float* t, float alpha, const float* gamma, int64_t rows,
                  int64_t C, bool overwrite_dx = false);

// x (..., C); gamma, beta (C) or undefined; alpha (1).
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps = 1e-5f);
Tensor rms_norm(const Tensor& x, const Tensor& gamma, float eps = 1e-5f);
Tensor dyt(const Tensor& x, const Tensor& alpha, const Tensor& gamma, const Tensor& beta);

}  // namespace sl

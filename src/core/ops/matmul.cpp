// matmul, bmm and linear: forward and backward through sgemm.
//
// For C = op(A) op(B): d op(A) = dC op(B)^T and d op(B) = op(A)^T dC. When A is stored
// transposed (trans_a) its gradient is the transpose of d op(A), i.e. op(B) dC^T; likewise for B.
// Each case is one gemm call with beta = 1, so gradients accumulate in place.
#include "core/ops/matmul.h"

#include <algorithm>
#include <string>

#include "core/autograd.h"
#include "core/blas.h"
#include "core/fastmath.h"
#include "core/ops/elementwise.h"
#include "core/parallel.h"
#include "util/error.h"

namespace sl {

void matmul_forward(float* C, const float* A, const float* B, int64_t M, int64_t N, int64_t K,
                    bool trans_a, bool trans_b) {
  gemm(trans_a, trans_b, M, N, K, 1.0f, A, B, 0.0f, C);
}

void matmul_backward(float* dA, float* dB, const float* dC, const float* A, const float* B,
                     int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b) {
  if (dA) {
    if (!trans_a)
      gemm(false, !trans_b, M, K, N, 1.0f, dC, B, 1.0f, dA);  // dA (M,K) = dC op(B)^T
    else
      gemm(trans_b, true, K, M, N, 1.0f, B, dC, 1.0f, dA);  // dA (K,M) = op(B) dC^T
  }
  if (dB) {
    if (!trans_b)
      gemm(!trans_a, false, K, N, M, 1.0f, A, dC, 1.0f, dB);  // dB (K,N) = op(A)^T dC
    else
      gemm(true, trans_a, N, K, M, 1.0f, dC, A, 1.0f, dB);  // dB (N,K) = dC^T op(A)
  }
}

namespace {

struct Dims {
  int64_t batch, M, N, K;
};

Dims check_matmul(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb,
                  bool batched) {
  const int nd = a.ndim();
  if (!batched && (nd != 2 || b.ndim() != 2))
    throw ShapeError(std::string("[") + op + "] expects 2-D inputs, got " + a.shape().str() +
                     " and " + b.shape().str());
  if (batched && (nd < 3 || b.ndim() != nd))
    throw ShapeError(std::string("[") + op + "] expects inputs of equal rank >= 3, got " +
                     a.shape().str() + " and " + b.shape().str());
  int64_t batch = 1;
  for (int i = 0; i < nd - 2; ++i) {
    if (a.size(i) != b.size(i))
      throw ShapeError(std::string("[") + op + "] batch dims differ: " + a.shape().str() + " vs " +
                       b.shape().str());
    batch *= a.size(i);
  }
  const int64_t M = ta ? a.size(-1) : a.size(-2), Ka = ta ? a.size(-2) : a.size(-1);
  const int64_t Kb = tb ? b.size(-1) : b.size(-2), N = tb ? b.size(-2) : b.size(-1);
  if (Ka != Kb)
    throw ShapeError(std::string("[") + op + "] inner dims differ: " + a.shape().str() +
                     (ta ? "^T" : "") + " vs " + b.shape().str() + (tb ? "^T" : ""));
  return {batch, M, N, Ka};
}

Tensor batched_product(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb,
                       bool batched) {
  const Dims d = check_matmul(op, a, b, ta, tb, batched);
  std::vector<int64_t> out_dims = a.shape().to_vector();
  out_dims[out_dims.size() - 2] = d.M;
  out_dims[out_dims.size() - 1] = d.N;
  Tensor out = Tensor::empty(Shape(out_dims));
  const int64_t sa = d.M * d.K, sb = d.K * d.N, sc = d.M * d.N;
  for (int64_t i = 0; i < d.batch; ++i)
    matmul_forward(out.data() + i * sc, a.data() + i * sa, b.data() + i * sb, d.M, d.N, d.K, ta,
                   tb);
  if (needs_grad(a, b)) {
    attach(out, op, {a, b}, [a, b, d, ta, tb](TensorImpl& o) {
      float* da = grad_of(a);
      float* db = grad_of(b);
      const float* dc = o.grad->data();
      const int64_t sa_ = d.M * d.K, sb_ = d.K * d.N, sc_ = d.M * d.N;
      for (int64_t i = 0; i < d.batch; ++i)
        matmul_backward(da ? da + i * sa_ : nullptr, db ? db + i * sb_ : nullptr, dc + i * sc_,
                        a.data() + i * sa_, b.data() + i * sb_, d.M, d.N, d.K, ta, tb);
    });
  }
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  return batched_product("matmul", a, b, trans_a, trans_b, false);
}

Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  return batched_product("bmm", a, b, trans_a, trans_b, true);
}

namespace {

// (rows, in, out) of linear(x, w, b), or a ShapeError naming `op`.
struct LinearDims {
  int64_t rows, in, out;
};
LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  if (w.ndim() != 2 || x.ndim() < 1 || x.size(-1) != w.size(1))
    throw ShapeError(std::string("[") + op + "] input " + x.shape().str() +
                     " does not match weight (out,in) " + w.shape().str());
  if (b.defined() && (b.ndim() != 1 || b.size(0) != w.size(0)))
    throw ShapeError(std::string("[") + op + "] bias " + b.shape().str() +
                     " does not match weight " + w.shape().str());
  return {x.numel() / w.size(1), w.size(1), w.size(0)};
}

Shape linear_out_shape(const Tensor& x, int64_t out) {
  std::vector<int64_t> dims = x.shape().to_vector();
  dims.back() = out;
  return Shape(dims);
}

// db[lo..hi) (out) += the column sums of dy (rows, out), the rows added in order, so that every
// column's sum is the same whatever the thread count. (A gemm against a ones vector did this
// before: OpenBLAS packed all of dy for a product with one column.)
SL_SIMD_CLONES void column_sums(float* db, const float* dy, int64_t rows, int64_t out, int64_t lo,
                                int64_t hi) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = lo; j < hi; ++j) db[j] += dy[r * out + j];
}

// dw (out, in) = or += dy^T x;  db (out) = or += dy^T 1.
void linear_param_grads(const Tensor& x, const Tensor& w, const Tensor& b, const float* dy,
                        LinearDims d) {
  if (const GradSlot dw = grad_slot(w); dw.data)
    gemm(true, false, d.out, d.in, d.rows, 1.0f, dy, x.data(), dw.beta(), dw.data);
  if (const GradSlot db = grad_slot(b); db.data) {
    if (db.fresh) std::fill(db.data, db.data + d.out, 0.0f);
    float* dbp = db.data;
    parallel_chunks(
        d.out, 64, [=](int64_t lo, int64_t hi) { column_sums(dbp, dy, d.rows, d.out, lo, hi); },
        d.rows);
  }
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const LinearDims d = check_linear("linear", x, w, b);
  const int64_t rows = d.rows, in = d.in, outf = d.out;
  Tensor y = Tensor::empty(linear_out_shape(x, outf));
  // y (rows, out) = x (rows, in) w^T (in, out) [+ b], the bias written tile by tile
  gemm_rows(true, rows, outf, in, x.data(), w.data(), 0.0f, y.data(), nullptr, nullptr, nullptr,
            b.defined() ? b.data() : nullptr);
  if (needs_grad(x, w, b)) {
    attach(y, "linear", {x, w, b}, [x, w, b, d](TensorImpl& o) {
      const float* dy = o.grad->data();
      if (const GradSlot dx = grad_slot(x); dx.data)
        gemm(false, false, d.rows, d.in, d.out, 1.0f, dy, w.data(), dx.beta(), dx.data);
      linear_param_grads(x, w, b, dy, d);
    });
  }
  return y;
}

namespace {

// The row-block callbacks of linear_gelu (core/blas.h gemm_rows, which writes the bias into each
// tile of the product): GELU right after a block's product, while the block is in cache; with a
// tape that pass also leaves GELU's derivative g'(pre) in place of pre, so that backward is a
// product: dpre = dh * g'(pre), in place over the kept g'(pre) on a block of rows right before the
// product dx = dpre w reads it. Backward so evaluates no erf or exp, and writes no new (rows, out)
// buffer.
struct LinearGeluRows {
  float* pre;         // (rows, out): x w^T + b, then g'(pre) (with a tape), then dpre
  float* h;           // (rows, out): gelu(pre); the same buffer when there is no tape
  const float* bias;  // (out) or null
  const float* dh;    // backward: (rows, out)
  int64_t out;
  bool tanh_approx;
  bool keep_grad;  // a tape: pre becomes g'(pre)
};

void gelu_rows(void* ctx, int64_t lo, int64_t hi) {
  const auto& k = *static_cast<const LinearGeluRows*>(ctx);
  float* pre = k.pre + lo * k.out;
  float* h = k.h + lo * k.out;
  if (k.keep_grad)
    gelu_forward_grad_serial(h, pre, (hi - lo) * k.out, k.tanh_approx);
  else
    gelu_forward_serial(h, pre, (hi - lo) * k.out, k.tanh_approx);
}
void gelu_grad_rows(void* ctx, int64_t lo, int64_t hi) {
  const auto& k = *static_cast<const LinearGeluRows*>(ctx);
  gelu_backward_from_grad_serial(k.pre + lo * k.out, k.dh + lo * k.out, (hi - lo) * k.out);
}

}  // namespace

Tensor linear_gelu(const Tensor& x, const Tensor& w, const Tensor& b, bool tanh_approx) {
  const char* op = tanh_approx ? "linear_gelu_tanh" : "linear_gelu";
  const LinearDims d = check_linear(op, x, w, b);
  const bool grad = needs_grad(x, w, b);
  Tensor h = Tensor::empty(linear_out_shape(x, d.out));
  // With a tape, gprime (rows, out) holds the product, then g'(product) for backward; without
  // one GELU runs in place over the product.
  std::shared_ptr<Buffer> gprime =
      grad ? make_buffer(static_cast<size_t>(d.rows * d.out)) : nullptr;
  LinearGeluRows k{gprime ? gprime->data() : h.data(),
                   h.data(),
                   b.defined() ? b.data() : nullptr,
                   nullptr,
                   d.out,
                   tanh_approx,
                   grad};
  // pre (rows, out) = x (rows, in) w^T (in, out) [+ b];  h = gelu(pre), block by block
  gemm_rows(true, d.rows, d.out, d.in, x.data(), w.data(), 0.0f, k.pre, nullptr, gelu_rows, &k,
            k.bias);
  if (grad) {
    attach(h, op, {x, w, b}, [x, w, b, d, gprime, tanh_approx](TensorImpl& o) {
      // dpre (rows, out) = dh * g'(pre), over gprime: the graph runs backward once
      float* dpre = gprime->data();
      LinearGeluRows g{dpre, nullptr, nullptr, o.grad->data(), d.out, tanh_approx, true};
      if (const GradSlot dx = grad_slot(x);
          dx.data)  // dx (rows, in) = dpre (rows, out) w (out, in)
        gemm_rows(false, d.rows, d.in, d.out, dpre, w.data(), dx.beta(), dx.data, gelu_grad_rows,
                  nullptr, &g);
      else
        gelu_backward_from_grad(dpre, g.dh, d.rows * d.out);
      linear_param_grads(x, w, b, dpre, d);
    });
  }
  return h;
}

}  // namespace sl

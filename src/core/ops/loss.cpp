// Cross-entropy: -log softmax(logits)[target], with the log-sum-exp computed stably. Rows run in
// parallel; the per-row losses are summed in row order (deterministic for any thread count).
#include "core/ops/loss.h"

// GCC if-converts (and so vectorises) the clamps and selects of core/fastmath.h only when FP
// exceptions need not be preserved; stacklab never inspects FP exception flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <cmath>
#include <memory>
#include <string>

#include "core/autograd.h"
#include "core/fastmath.h"
#include "core/parallel.h"
#include "util/error.h"

namespace sl {

double cross_entropy_forward(float* probs, const float* logits, const int32_t* targets, int64_t N,
                             int64_t V) {
  auto row_loss = make_buffer(static_cast<size_t>(N));  // (N)
  float* rl = row_loss->data();
  parallel_chunks(
      N, 16,
      [=](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const float* lr = logits + r * V;
          float* pr = probs + r * V;
          float mx = lr[0];
          for (int64_t j = 1; j < V; ++j) mx = lr[j] > mx ? lr[j] : mx;
          float s = 0.0f;
          for (int64_t j = 0; j < V; ++j) {
            pr[j] = fast_exp(lr[j] - mx);
            s += pr[j];
          }
          const float inv = 1.0f / s;
          for (int64_t j = 0; j < V; ++j) pr[j] *= inv;
          // -log p_t = log(sum) + mx - l_t, computed from the logits, not from a rounded
          // probability
          rl[r] = std::log(s) + mx - lr[targets[r]];
        }
      },
      V);
  double total = 0.0;
  for (int64_t r = 0; r < N; ++r) total += static_cast<double>(rl[r]);
  return N ? total / static_cast<double>(N) : 0.0;
}

void cross_entropy_backward(float* dlogits, float dloss, const float* probs, const int32_t* targets,
                            int64_t N, int64_t V) {
  const float g = dloss / static_cast<float>(N);
  parallel_chunks(
      N, 16,
      [=](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          float* dr = dlogits + r * V;
          const float* pr = probs + r * V;
          for (int64_t j = 0; j < V; ++j) dr[j] += g * pr[j];
          dr[targets[r]] -= g;
        }
      },
      V);
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int32_t>& targets) {
  if (logits.ndim() < 2)
    throw ShapeError("[cross_entropy] logits must be (N, V), got " + logits.shape().str());
  const int64_t V = logits.size(-1), N = logits.numel() / V;
  if (static_cast<int64_t>(targets.size()) != N)
    throw ShapeError("[cross_entropy] " + std::to_string(targets.size()) + " targets for " +
                     std::to_string(N) + " rows of logits " + logits.shape().str());
  for (size_t i = 0; i < targets.size(); ++i)
    if (targets[i] < 0 || targets[i] >= V)
      throw ShapeError("[cross_entropy] target " + std::to_string(targets[i]) + " at row " +
                       std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(V) +
                       ")");
  auto probs = make_buffer(static_cast<size_t>(N * V));
  const double loss = cross_entropy_forward(probs->data(), logits.data(), targets.data(), N, V);
  Tensor out = Tensor::scalar(static_cast<float>(loss));
  if (needs_grad(logits))
    attach(out, "cross_entropy", {logits}, [logits, targets, probs, N, V](TensorImpl& o) {
      cross_entropy_backward(grad_of(logits), o.grad->data()[0], probs->data(), targets.data(), N,
                             V);
    });
  return out;
}

}  // namespace sl

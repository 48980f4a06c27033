// Autograd: reverse mode over the graph that ops record as they run.
//
// Each op that produces a tensor from inputs requiring grad attaches a Node to its output: the
// inputs (to walk the graph) and a closure that reads the output's gradient and accumulates
// (+=) into the inputs' gradients. backward() on a one-element tensor:
//   1. sorts the graph topologically with an explicit stack (no recursion: a 96-layer stack
//      records thousands of nodes),
//   2. seeds d(root)/d(root) = 1 and runs the closures in reverse order; a tensor's hooks run
//      once its gradient is complete, before its own closure,
//   3. releases the graph as it goes: each node drops its inputs and closure, and gradients of
//      intermediate tensors are freed. Leaf gradients stay and accumulate across calls.
// A second backward() through a released graph throws sl::Error. No retain_graph, no
// higher-order gradients.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace sl {

struct Node {
  const char* op = "";
  std::vector<Tensor> inputs;
  std::function<void(TensorImpl& out)> backward;
  bool released = false;
};

void run_backward(Tensor& root);

// Gradient recording is on by default; NoGradGuard turns it off in its scope (per thread).
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// ---- for op implementations --------------------------------------------------------------
// True when recording is on and any input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
inline bool needs_grad(const Tensor& a) { return needs_grad({&a}); }
inline bool needs_grad(const Tensor& a, const Tensor& b) { return needs_grad({&a, &b}); }
inline bool needs_grad(const Tensor& a, const Tensor& b, const Tensor& c) {
  return needs_grad({&a, &b, &c});
}

// Makes `out` a non-leaf produced by `op` from `inputs` (undefined inputs are skipped).
void attach(Tensor& out, const char* op, std::vector<Tensor> inputs,
            std::function<void(TensorImpl& out)> backward);

// The gradient accumulator of `t` (allocated zeroed on first use), or nullptr when `t` is
// undefined or does not require grad: backward closures skip such inputs.
float* grad_of(const Tensor& t);

// For kernels that can overwrite as well as accumulate (the common case of a tensor with one
// consumer): `t`'s gradient buffer and whether it is fresh, i.e. just allocated and NOT zeroed.
// A fresh slot must be written in full (`=`, or a gemm with beta 0); a used one added to (`+=`,
// beta 1). Saves the zero fill and one read of every such gradient. data is nullptr as in grad_of.
struct GradSlot {
  float* data = nullptr;
  bool fresh = false;
  float beta() const { return fresh ? 0.0f : 1.0f; }  // the gemm beta that does the right thing
};
GradSlot grad_slot(const Tensor& t);

}  // namespace sl

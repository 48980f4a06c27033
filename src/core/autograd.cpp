// Topological sort, the backward sweep, graph release and the no-grad scope.
#include "core/autograd.h"

#include <atomic>
#include <utility>

#include "util/error.h"
#include "util/profile.h"

namespace sl {
namespace {

thread_local bool g_grad_enabled = true;
std::atomic<uint64_t> g_visit_epoch{0};

}  // namespace

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!g_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t->defined() && t->requires_grad()) return true;
  return false;
}

void attach(Tensor& out, const char* op, std::vector<Tensor> inputs,
            std::function<void(TensorImpl& out)> backward) {
  auto node = std::make_shared<Node>();
  node->op = op;
  for (auto& t : inputs)
    if (t.defined() && t.requires_grad()) node->inputs.push_back(std::move(t));
  node->backward = std::move(backward);
  TensorImpl* impl = out.impl();
  impl->node = std::move(node);
  impl->requires_grad = true;
  op_profile::forward_done(op);
}

float* grad_of(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  TensorImpl* impl = t.impl();
  if (!impl->grad)
    impl->grad = make_buffer(static_cast<size_t>(impl->shape.numel()), /*zero=*/true);
  return impl->grad->data();
}

GradSlot grad_slot(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  TensorImpl* impl = t.impl();
  if (impl->grad) return {impl->grad->data(), false};
  impl->grad = make_buffer(static_cast<size_t>(impl->shape.numel()), /*zero=*/false);
  return {impl->grad->data(), true};
}

void run_backward(Tensor& root) {
  if (!root.defined()) throw Error("[backward] called on an undefined tensor");
  if (root.numel() != 1)
    throw Error("[backward] needs a one-element (scalar) tensor, got shape " + root.shape().str());
  if (!root.requires_grad())
    throw Error(
        "[backward] the tensor does not require grad (made under NoGradGuard, or from no "
        "parameter that requires grad)");
  if (root.impl()->node && root.impl()->node->released)
    throw Error(
        "[backward] the graph of this tensor was already released by an earlier backward(); "
        "run the forward pass again before calling backward() a second time");

  // Iterative post-order DFS: `order` lists each tensor after every tensor it depends on.
  const uint64_t epoch = ++g_visit_epoch;
  // `order` owns its tensors: releasing a node drops the last reference to its inputs, which
  // must stay alive until the sweep reaches them.
  std::vector<std::shared_ptr<TensorImpl>> order;
  std::vector<std::pair<std::shared_ptr<TensorImpl>, size_t>> stack;  // (tensor, next input)
  root.impl()->visit_mark = epoch;
  stack.emplace_back(root.impl_ptr(), 0);
  while (!stack.empty()) {
    auto& [impl, next] = stack.back();
    Node* node = impl->node.get();
    if (node && node->released)
      throw Error(std::string("[backward] the graph through op '") + node->op +
                  "' was already released by an earlier backward()");
    if (node && next < node->inputs.size()) {
      const auto& in = node->inputs[next++].impl_ptr();
      if (in->visit_mark != epoch) {
        in->visit_mark = epoch;
        stack.emplace_back(in, 0);
      }
      continue;
    }
    order.push_back(std::move(impl));
    stack.pop_back();
  }

  // Seed and sweep in reverse topological order.
  {
    float* g = grad_of(root);
    g[0] += 1.0f;
  }
  NoGradGuard no_grad;  // closures must not record
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    TensorImpl* impl = it->get();
    if (!impl->grad) continue;  // no gradient reached it (e.g. an index-only input)
    if (!impl->hooks.empty()) {
      auto view = std::make_shared<TensorImpl>();
      view->shape = impl->shape;
      view->data = impl->grad;
      Tensor g(std::move(view));
      op_profile::backward_begin();
      for (auto& hook : impl->hooks) hook(g);
      op_profile::backward_done("(gradient hooks)");
    }
    if (auto& node = impl->node) {
      op_profile::backward_begin();
      node->backward(*impl);
      op_profile::backward_done(node->op);
      node->backward = nullptr;
      node->inputs.clear();
      node->released = true;
      impl->grad.reset();  // intermediate gradients are not kept
    }
  }
}

}  // namespace sl

// Tensor: a float32, contiguous array of up to four dimensions with shared storage, an optional
// gradient and an optional name. A Tensor is a handle (copying it shares the data); the graph
// that autograd records hangs off the TensorImpl it points to (see core/autograd.h).
// Not here: strides, views with offsets, dtypes other than float32, devices.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/shape.h"

namespace sl {

class Tensor;
struct Node;
using GradHook = std::function<void(const Tensor& grad)>;

struct TensorImpl {
  Shape shape;
  std::shared_ptr<Buffer> data;  // shared with reshaped views
  std::shared_ptr<Buffer> grad;  // allocated (zeroed) on first accumulation
  bool requires_grad = false;
  std::string name;
  std::shared_ptr<Node> node;   // the op that produced this tensor; null for leaves
  std::vector<GradHook> hooks;  // run once this tensor's gradient is complete
  uint64_t visit_mark = 0;      // used by backward's topological sort
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Factories. `empty` leaves the contents undefined.
  static Tensor empty(const Shape& shape, bool requires_grad = false);
  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, float value, bool requires_grad = false);
  static Tensor from(const Shape& shape, const std::vector<float>& values,
                     bool requires_grad = false);
  static Tensor scalar(float value, bool requires_grad = false) {
    return full(Shape{1}, value, requires_grad);
  }

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  int ndim() const { return impl_->shape.ndim(); }
  int64_t numel() const { return impl_->shape.numel(); }
  int64_t size(int dim) const { return impl_->shape[dim]; }

  float* data() { return impl_->data->data(); }
  const float* data() const { return impl_->data->data(); }
  float item() const;  // the value of a one-element tensor
  std::vector<float> to_vector() const;

  bool requires_grad() const { return impl_->requires_grad; }
  Tensor& set_requires_grad(bool on);
  bool is_leaf() const { return impl_->node == nullptr; }
  const std::string& name() const { return impl_->name; }
  Tensor& set_name(std::string name);

  // Gradient access. grad() is a tensor sharing the gradient buffer (undefined before any
  // backward reached this tensor); grad_data() allocates a zeroed buffer on first use.
  bool has_grad() const { return impl_->grad != nullptr; }
  Tensor grad() const;
  float* grad_data();
  void zero_grad();

  // Reverse-mode autograd from this one-element tensor (see core/autograd.h).
  void backward();
  // hook(grad) runs when this tensor's gradient is complete, before it flows further back.
  void register_hook(GradHook hook);

  Tensor detach() const;  // same data, no graph, no grad
  Tensor clone() const;   // fresh copy of the data, no graph

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace sl

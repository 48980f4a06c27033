// Tensor factories and accessors.
#include "core/tensor.h"

#include <algorithm>
#include <cstring>

#include "core/autograd.h"
#include "util/error.h"

namespace sl {

Tensor Tensor::empty(const Shape& shape, bool requires_grad) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->data = make_buffer(static_cast<size_t>(shape.numel()));
  impl->requires_grad = requires_grad;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, bool requires_grad) {
  return full(shape, 0.0f, requires_grad);
}

Tensor Tensor::full(const Shape& shape, float value, bool requires_grad) {
  Tensor t = empty(shape, requires_grad);
  std::fill(t.data(), t.data() + t.numel(), value);
  return t;
}

Tensor Tensor::from(const Shape& shape, const std::vector<float>& values, bool requires_grad) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw ShapeError("[tensor] " + std::to_string(values.size()) + " values do not fill shape " +
                     shape.str());
  Tensor t = empty(shape, requires_grad);
  std::copy(values.begin(), values.end(), t.data());
  return t;
}

float Tensor::item() const {
  if (numel() != 1)
    throw ShapeError("[item] needs a one-element tensor, got shape " + shape().str());
  return data()[0];
}

std::vector<float> Tensor::to_vector() const { return {data(), data() + numel()}; }

Tensor& Tensor::set_requires_grad(bool on) {
  SL_CHECK(is_leaf() || on, "requires_grad can only be turned off on a leaf");
  impl_->requires_grad = on;
  return *this;
}

Tensor& Tensor::set_name(std::string name) {
  impl_->name = std::move(name);
  return *this;
}

Tensor Tensor::grad() const {
  if (!impl_->grad) return Tensor();
  auto g = std::make_shared<TensorImpl>();
  g->shape = impl_->shape;
  g->data = impl_->grad;
  return Tensor(std::move(g));
}

float* Tensor::grad_data() {
  if (!impl_->grad) impl_->grad = make_buffer(static_cast<size_t>(numel()), /*zero=*/true);
  return impl_->grad->data();
}

void Tensor::zero_grad() {
  if (impl_->grad)
    std::memset(impl_->grad->data(), 0, static_cast<size_t>(numel()) * sizeof(float));
}

void Tensor::backward() { run_backward(*this); }

void Tensor::register_hook(GradHook hook) {
  if (!requires_grad())
    throw Error("[register_hook] tensor '" + name() + "' does not require grad");
  impl_->hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
  auto d = std::make_shared<TensorImpl>();
  d->shape = impl_->shape;
  d->data = impl_->data;
  d->name = impl_->name;
  return Tensor(std::move(d));
}

Tensor Tensor::clone() const {
  Tensor c = empty(shape());
  std::copy(data(), data() + numel(), c.data());
  c.impl_->name = impl_->name;
  return c;
}

}  // namespace sl

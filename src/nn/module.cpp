// Parameter registration and the recursive walk that names them.
#include "nn/module.h"

namespace sl {

Tensor& Module::add_param(const std::string& name, const Shape& shape, const ParamInfo& info) {
  params_.push_back({name, Tensor::zeros(shape, /*requires_grad=*/true), info});
  return params_.back().tensor;
}

void Module::set_sublayer(SubLayer s) {
  for (auto& p : params_) p.info.sublayer = s;
  for (auto& c : children_) c.second->set_sublayer(s);
}

void Module::set_block(int b) {
  for (auto& p : params_) p.info.block = b;
  for (auto& c : children_) c.second->set_block(b);
}

void Module::add_child(const std::string& name, Module* child) {
  children_.emplace_back(name, child);
}

void Module::collect(const std::string& prefix, std::vector<NamedTensor>& out) const {
  for (const auto& p : params_) out.push_back({prefix + p.name, p.tensor, p.info});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<NamedTensor> Module::parameters() const {
  std::vector<NamedTensor> out;
  collect("", out);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.tensor.numel();
  return n;
}

void Module::name_parameters(const std::string& prefix) {
  std::vector<NamedTensor> all;
  collect(prefix, all);
  for (auto& p : all) p.tensor.set_name(p.name);
}

}  // namespace sl

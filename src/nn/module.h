// Module: a named tree of parameters. Parameter names are stable dotted paths
// ("blocks.3.attn.qkv.weight"), the same strings in checkpoints, logs and plots.
// Not here: forward passes (each module declares its own), devices, buffers.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace sl {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Every parameter below this module, in registration order, with its full dotted name.
  std::vector<NamedTensor> parameters() const;
  int64_t num_parameters() const;
  // Sets each parameter tensor's name() to its dotted path (call once on the root).
  void name_parameters(const std::string& prefix = "");

 protected:
  // A new parameter (zero-filled, requires grad) registered under `name`.
  Tensor& add_param(const std::string& name, const Shape& shape);
  // `child` must outlive this module's use of parameters() (members or unique_ptrs of it).
  void add_child(const std::string& name, Module* child);

 private:
  void collect(const std::string& prefix, std::vector<NamedTensor>& out) const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Module*>> children_;
};

}  // namespace sl

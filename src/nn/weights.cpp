// Parameter export and checked import.
#include "nn/weights.h"

#include <algorithm>
#include <set>

#include "util/error.h"

namespace sl {

NamedTensors module_state(const Module& m) {
  NamedTensors out;
  for (const auto& p : m.parameters()) out.emplace_back(p.name, p.tensor);
  return out;
}

void load_module_state(Module& m, const TensorFile& file, const std::string& origin,
                       const std::string& ignore_prefix) {
  std::set<std::string> expected;
  for (const auto& p : m.parameters()) {
    expected.insert(p.name);
    const Tensor* t = file.find(p.name);
    if (!t)
      throw Error(origin + ": parameter '" + p.name +
                  "' is missing (the file was written for another model config?)");
    if (t->shape() != p.tensor.shape())
      throw Error(origin + ": parameter '" + p.name + "' has shape " + t->shape().str() +
                  ", the config expects " + p.tensor.shape().str());
  }
  for (const auto& [name, t] : file.tensors)
    if (!expected.count(name) && (ignore_prefix.empty() || name.rfind(ignore_prefix, 0) != 0))
      throw Error(origin + ": unexpected tensor '" + name +
                  "' (not a parameter of the configured model)");
  for (auto& p : m.parameters()) {
    const Tensor* t = file.find(p.name);
    std::copy(t->data(), t->data() + t->numel(), p.tensor.data());
  }
}

}  // namespace sl

// A model's parameters as named tensors, and loading them back with every name and shape
// checked against the model built from the config (safetensors files carry the names).
#pragma once
#include <string>

#include "core/safetensors.h"
#include "nn/module.h"

namespace sl {

NamedTensors module_state(const Module& m);
// Copies every parameter from `file`; throws sl::Error naming `origin` and the first missing,
// unexpected or mis-shaped tensor. Extra entries with a prefix in `ignore_prefix` are skipped.
void load_module_state(Module& m, const TensorFile& file, const std::string& origin,
                       const std::string& ignore_prefix = "");

}  // namespace sl

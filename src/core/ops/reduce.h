// Reductions to a one-element tensor: sum and mean of all entries (accumulated in double).
#pragma once
#include "core/tensor.h"

namespace sl {

Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);

}  // namespace sl

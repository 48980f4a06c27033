// Dropout while training (model.dropout, as in nanoGPT): on the attention probabilities, on
// each sub-layer's output (after attn.proj and mlp.proj) and on the embedding sum. It is on only
// inside a DropoutScope, which the trainer opens around its training forwards; evaluation,
// probes, sampling and the parity dumps run without one, so dropout is off there. Masks are
// drawn from the scope's Rng in a fixed order, so a run is deterministic and resumable.
#pragma once
#include "core/rng.h"
#include "core/tensor.h"

namespace sl {

class DropoutScope {
 public:
  DropoutScope(float p, Rng& rng);  // p in [0, 1); p == 0 leaves dropout off
  ~DropoutScope();
  DropoutScope(const DropoutScope&) = delete;
  DropoutScope& operator=(const DropoutScope&) = delete;

 private:
  const DropoutScope* outer_;
  friend Tensor dropout_mask(const Shape& shape);
  float p_;
  Rng* rng_;
};

// Undefined outside a scope (or p == 0); else a constant mask of `shape`: 0 with probability p,
// 1/(1-p) otherwise.
Tensor dropout_mask(const Shape& shape);
// x * dropout_mask(x.shape()), or x itself when dropout is off.
Tensor dropout(const Tensor& x);

}  // namespace sl

// Dropout while training (model.dropout, as in nanoGPT): on the attention probabilities, on
// each sub-layer's output (after attn.proj and mlp.proj) and on the embedding sum. Whether a
// forward pass trains is its explicit ForwardMode argument: ForwardMode::train(p, rng) in the
// trainer's training forwards, ForwardMode::eval() in evaluation, probes, sampling and the
// parity dumps, where dropout is off. Masks are drawn from the mode's Rng in a fixed order, so
// a run is deterministic and resumable.
#pragma once
#include "core/rng.h"
#include "core/tensor.h"

namespace sl {

class ForwardMode {
 public:
  static ForwardMode eval() { return ForwardMode(0.0f, nullptr); }
  // p in [0, 1); p == 0 draws no masks (the same arithmetic as eval).
  static ForwardMode train(float p, Rng& rng) { return ForwardMode(p, &rng); }

  bool training() const { return rng_ != nullptr; }
  // Undefined in eval mode (or p == 0); else a constant mask of `shape`: 0 with probability p,
  // 1/(1-p) otherwise, drawn from the mode's Rng.
  Tensor dropout_mask(const Shape& shape) const;
  // x * dropout_mask(x.shape()), or x itself when dropout is off.
  Tensor dropout(const Tensor& x) const;

 private:
  ForwardMode(float p, Rng* rng) : p_(p), rng_(rng) {}
  float p_;
  Rng* rng_;  // not owned; advanced by every mask drawn
};

}  // namespace sl

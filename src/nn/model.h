// Model: the decoder-only transformer. Token embedding + position embedding (learned,
// sinusoidal or none), n_layer Blocks (wiring in block.h), optional final norm, LM head
// (own weight or tied to the token embedding). Reads top to bottom in model.cpp.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "nn/block.h"

namespace sl {

// What forward() can record for metrics: the residual stream at every block boundary and what
// each block's attention op was fed.
struct ForwardTrace {
  std::vector<Tensor> stream;  // n_layer + 1 tensors (B, T, C); [0] is the embedding output
  std::vector<Tensor>
      attn_qkv;  // n_layer tensors (B, T, 3C) after QK-norm; undefined without attention
  std::vector<BlockTrace> blocks;  // n_layer: each block's branches and sub-layer inputs
};

class Model : public Module {
 public:
  explicit Model(const ModelConfig& cfg);

  // Draws every parameter from model.init with this seed (deterministic, registration order).
  void init_weights(uint64_t seed);
  // ids (B, T) row-major -> logits (B, T, V).
  // `mode`: ForwardMode::eval(), or ForwardMode::train(p, rng) with model.dropout's masks.
  Tensor forward(const std::vector<int32_t>& ids, int64_t B, int64_t T, const ForwardMode& mode,
                 ForwardTrace* trace = nullptr) const;
  // Mean cross-entropy of logits (B, T, V) against targets (B, T).
  static Tensor loss(const Tensor& logits, const std::vector<int32_t>& targets);

  const ModelConfig& config() const { return cfg_; }
  // Index of the block a parameter belongs to (-1 for embeddings, final norm, head, unknown
  // names); the same as parameters()[i].info.block, which code should read instead.
  int block_of(const std::string& param_name) const;

  Embedding tok_emb;
  std::unique_ptr<Embedding> pos_emb;
  std::vector<std::unique_ptr<Block>> blocks;
  std::unique_ptr<Norm> norm_f;
  std::unique_ptr<Linear> head;  // null when tied

 private:
  ModelConfig cfg_;
  Tensor sinusoid_;  // (block_size, C), fixed, when pos_emb is "sinusoidal"
};

}  // namespace sl

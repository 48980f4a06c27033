// Module: a named tree of parameters. Parameter names are stable dotted paths
// ("blocks.3.attn.qkv.weight"), the same strings in checkpoints, logs and plots.
// Not here: forward passes (each module declares its own), devices, buffers.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace sl {

// What a parameter is, declared where it is created: init, weight decay, gradient grouping,
// FLOP counting and the block index read this, never the parameter's name.
enum class ParamRole {
  Weight,      // a Linear's (out, in) matrix: drawn by model.init, decayed, a matmul operand
  Bias,        // a Linear's bias: starts at 0, not decayed
  Embedding,   // a lookup table (token or position): drawn as model.emb_scale says, not decayed
  NormGain,    // a norm's per-channel gain gamma: starts at init_value (1), not decayed
  NormBias,    // a norm's per-channel shift beta: starts at 0, not decayed
  NormScalar,  // a norm's learnable scalar (DyT's alpha): starts at init_value, not decayed
  Gate,        // a residual branch's learnable scale (ReZero a, LayerScale lambda): init_value, not
               // decayed
  AttnScalar,  // a learnable per-head scalar of the attention matrix (shaped attention's alpha,
               // beta, gamma): starts at init_value, not decayed
};
// The sub-layer of a block a parameter belongs to (None outside blocks).
enum class SubLayer { None, Attn, Mlp };
// The gradient-norm group of a `layers` record: norm parameters form their own group.
enum class GradGroup { Attn, Mlp, Norm, None };

struct ParamInfo {
  ParamRole role = ParamRole::Weight;
  float init_value = 0.0f;  // the constant that a non-Weight, non-Embedding role starts at
  bool out_proj =
      false;  // Weight: a branch's output projection ("scaled" init divides by sqrt(2N))
  int64_t deepnorm_from = -1;  // Weight: first element that DeepNorm's beta scales; -1: none
  int64_t zero_first = 0;      // Weight: elements [0, zero_first) are 0 after the draw (shaped
                               // attention's query rows); the other elements' draws are unchanged
  SubLayer sublayer = SubLayer::None;  // set by the Block that owns it
  int block = -1;                      // set by the Model: 0 is the block next to the embedding

  bool decays() const { return role == ParamRole::Weight; }
  bool is_norm() const {
    return role == ParamRole::NormGain || role == ParamRole::NormBias ||
           role == ParamRole::NormScalar;
  }
  GradGroup group() const {
    if (is_norm()) return GradGroup::Norm;
    switch (sublayer) {
      case SubLayer::Attn:
        return GradGroup::Attn;
      case SubLayer::Mlp:
        return GradGroup::Mlp;
      case SubLayer::None:
        return GradGroup::None;
    }
    return GradGroup::None;
  }
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
  ParamInfo info;
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
  // Marks every parameter below this module as part of sub-layer `s` / block `b`.
  void set_sublayer(SubLayer s);
  void set_block(int b);

 protected:
  // A new parameter (zero-filled, requires grad) registered under `name` with its role.
  Tensor& add_param(const std::string& name, const Shape& shape, const ParamInfo& info);
  // `child` must outlive this module's use of parameters() (members or unique_ptrs of it).
  void add_child(const std::string& name, Module* child);

 private:
  void collect(const std::string& prefix, std::vector<NamedTensor>& out) const;
  struct Param {
    std::string name;
    Tensor tensor;
    ParamInfo info;
  };
  std::vector<Param> params_;
  std::vector<std::pair<std::string, Module*>> children_;
};

}  // namespace sl

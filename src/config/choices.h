// Enumerated config values: each enum with its JSON spelling, defined once. The config loader
// parses the strings into these enums when a config loads (an unknown string is a ConfigError
// naming the key and the choices); everything after that switches on the enum, with no
// `default:` so the compiler (-Werror=switch) finds a case a new value left out.
// Not here: what a choice does (the nn registries in src/nn/wiring.h hold that).
#pragma once
#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sl {

enum class NormKind { LayerNorm, RmsNorm, DyT, None };
enum class NormPosition { Pre, Post, Sandwich };
enum class ResidualScale { None, ReZero, DeepNorm, LayerScale };
enum class NormScaling { None, Depth };
enum class Activation { Gelu, GeluTanh, Relu, Tanh };
enum class InitScheme { Normal, Scaled, Xavier };
enum class PosEmb { Learned, Sinusoidal, None };
enum class EmbScale { InitStd, Unit };
enum class AttentionKind { Softmax, Shaped, ShapedNoIdentity };
enum class SourceKind { Markov, Text };
enum class OptimizerKind { AdamW, Sgd };
enum class ScheduleKind { Constant, Cosine, WarmupConstant };
// What a finished run keeps of its checkpoints (train.keep_final, train/keep.h).
enum class KeepKind { Full, Weights, None };
// The milestone a run stops at (train.stop_at, train/milestones.h); Off: none.
enum class StopAt { Off, M1, M2, M3 };

// ChoiceNames<E>::table lists every value of E with its spelling in the JSON config, in the
// order error messages and docs show them.
template <class E>
struct ChoiceNames;

#define SL_CHOICES(E, ...)                                                   \
  template <>                                                                \
  struct ChoiceNames<E> {                                                    \
    static constexpr std::pair<E, std::string_view> table[] = {__VA_ARGS__}; \
  }

SL_CHOICES(NormKind, {NormKind::LayerNorm, "layernorm"}, {NormKind::RmsNorm, "rmsnorm"},
           {NormKind::DyT, "dyt"}, {NormKind::None, "none"});
SL_CHOICES(NormPosition, {NormPosition::Pre, "pre"}, {NormPosition::Post, "post"},
           {NormPosition::Sandwich, "sandwich"});
SL_CHOICES(ResidualScale, {ResidualScale::None, "none"}, {ResidualScale::ReZero, "rezero"},
           {ResidualScale::DeepNorm, "deepnorm"}, {ResidualScale::LayerScale, "layerscale"});
SL_CHOICES(NormScaling, {NormScaling::None, "none"}, {NormScaling::Depth, "depth"});
SL_CHOICES(Activation, {Activation::Gelu, "gelu"}, {Activation::GeluTanh, "gelu_tanh"},
           {Activation::Relu, "relu"}, {Activation::Tanh, "tanh"});
SL_CHOICES(InitScheme, {InitScheme::Normal, "normal"}, {InitScheme::Scaled, "scaled"},
           {InitScheme::Xavier, "xavier"});
SL_CHOICES(PosEmb, {PosEmb::Learned, "learned"}, {PosEmb::Sinusoidal, "sinusoidal"},
           {PosEmb::None, "none"});
SL_CHOICES(EmbScale, {EmbScale::InitStd, "init_std"}, {EmbScale::Unit, "unit"});
SL_CHOICES(AttentionKind, {AttentionKind::Softmax, "softmax"}, {AttentionKind::Shaped, "shaped"},
           {AttentionKind::ShapedNoIdentity, "shaped_no_identity"});
SL_CHOICES(SourceKind, {SourceKind::Markov, "markov"}, {SourceKind::Text, "text"});
SL_CHOICES(OptimizerKind, {OptimizerKind::AdamW, "adamw"}, {OptimizerKind::Sgd, "sgd"});
SL_CHOICES(ScheduleKind, {ScheduleKind::Constant, "constant"}, {ScheduleKind::Cosine, "cosine"},
           {ScheduleKind::WarmupConstant, "warmup_constant"});
SL_CHOICES(KeepKind, {KeepKind::Full, "full"}, {KeepKind::Weights, "weights"},
           {KeepKind::None, "none"});
SL_CHOICES(StopAt, {StopAt::Off, ""}, {StopAt::M1, "m1"}, {StopAt::M2, "m2"}, {StopAt::M3, "m3"});

#undef SL_CHOICES

// The JSON spelling of a value ("layernorm").
template <class E>
std::string name_of(E value) {
  for (const auto& [v, name] : ChoiceNames<E>::table)
    if (v == value) return std::string(name);
  return "?";  // unreachable for a value of the enum: every value is in its table (tested)
}

// The value spelled `name`, or nullopt.
template <class E>
std::optional<E> parse_choice(std::string_view name) {
  for (const auto& [v, n] : ChoiceNames<E>::table)
    if (n == name) return v;
  return std::nullopt;
}

// Every spelling, in table order.
template <class E>
std::vector<std::string> choice_names() {
  std::vector<std::string> out;
  for (const auto& [v, name] : ChoiceNames<E>::table) out.emplace_back(name);
  return out;
}

// Prints the spelling (gtest messages, logs).
template <class E, class = decltype(ChoiceNames<E>::table)>
std::ostream& operator<<(std::ostream& os, E value) {
  return os << name_of(value);
}

}  // namespace sl

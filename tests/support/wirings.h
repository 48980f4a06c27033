// Every block wiring the registries define, for tests that must cover each one without a
// hand-kept list: the product of norm types, placements, residual on/off and residual scalings,
// plus each norm with QK-norm and with LayerNorm Scaling, plus each attention kind at each
// placement, keeping only the combinations that validate_config accepts. A new registry entry is in
// this list as soon as it exists.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"
#include "config/validate.h"
#include "nn/wiring.h"

namespace sl::testing {

inline bool valid(const ModelConfig& m) {
  Config c;
  c.model = m;
  try {
    validate_config(c, "every_wiring");
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

// base: sizes (n_layer, n_embd, ...); the wiring fields are overwritten.
inline std::vector<ModelConfig> every_wiring(const ModelConfig& base) {
  std::vector<ModelConfig> out;
  auto keep = [&](const ModelConfig& m) {
    if (valid(m)) out.push_back(m);
  };
  for (NormKind norm : all_choices<NormKind>())
    for (NormPosition pos : all_choices<NormPosition>())
      for (bool residual : {true, false})
        for (ResidualScale scale : all_choices<ResidualScale>()) {
          ModelConfig m = base;
          m.norm = norm;
          m.norm_position = pos;
          m.residual = residual;
          m.residual_scale = scale;
          // norm "none" is the same wiring at every position: keep it once.
          if (norm == NormKind::None && pos != NormPosition::Pre) continue;
          keep(m);
        }
  for (NormKind norm : all_choices<NormKind>())
    for (NormScaling scaling : all_choices<NormScaling>())
      for (bool qk : {false, true}) {
        if (scaling == NormScaling::None && !qk) continue;  // covered above
        ModelConfig m = base;
        m.norm = norm;
        m.norm_scaling = scaling;
        m.qk_norm = qk;
        keep(m);
      }
  // Each attention kind other than softmax at every placement, residual on and off, with
  // LayerNorm and without a norm.
  for (AttentionKind kind : all_choices<AttentionKind>())
    for (NormKind norm : {NormKind::LayerNorm, NormKind::None})
      for (NormPosition pos : all_choices<NormPosition>())
        for (bool residual : {true, false}) {
          if (kind == AttentionKind::Softmax) continue;  // covered above
          if (norm == NormKind::None && pos != NormPosition::Pre) continue;
          ModelConfig m = base;
          m.attention_kind = kind;
          m.norm = norm;
          m.norm_position = pos;
          m.residual = residual;
          keep(m);
        }
  return out;
}

// "pre-dyt-res-layerscale" plus the sizes that matter for a failure message.
inline std::string label(const ModelConfig& m) { return wiring_id(m); }

}  // namespace sl::testing

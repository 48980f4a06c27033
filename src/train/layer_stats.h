// Per-layer measurements for a "layers" record of metrics.jsonl: gradient norms per block and
// per sub-layer, update ratios, and the residual stream at every block boundary (activation
// RMS, gradient norm of dL/dx, rank-collapse ratio). Shared by `train` and `probe`.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "nn/model.h"

namespace sl {

struct LayerStats {
  std::vector<double> grad_norm, attn_grad_norm, mlp_grad_norm, norm_grad_norm;  // n_layer
  std::vector<double> update_ratio;                                              // n_layer, empty before any update
  std::vector<double> act_rms, stream_grad_norm, rank_ratio;                     // n_layer + 1
  std::vector<std::pair<std::string, double>> params;                           // grad norm by name
};

// Registers hooks on trace.stream that record ||dL/dx|| at every boundary into `out` (which
// must outlive the backward pass). Call after forward, before backward.
void hook_stream_grads(ForwardTrace& trace, std::vector<double>& out);

// Fills everything but stream_grad_norm (taken from the hooks) from the model's current
// gradients and the forward trace. update_norms: ||delta|| per parameter of the last optimizer
// step, in model.parameters() order, or empty before the first update.
LayerStats measure_layers(const Model& model, const ForwardTrace& trace, const std::vector<double>& stream_grads,
                          const std::vector<double>& update_norms);

// Per sequence ||X - 1 mean_t(X)^T||_F / ||X||_F for X (T, C), averaged over the batch:
// 0 when every position holds the same vector (rank collapse, Dong et al. 2021).
double rank_ratio(const Tensor& x);
double rms(const Tensor& x);

nlohmann::json to_json(const LayerStats& s, bool with_params);

}  // namespace sl

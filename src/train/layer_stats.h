// Per-layer measurements for a "layers" record of metrics.jsonl, shared by `train` and `probe`.
// Every metric is one entry of the registry layer_metrics(): its key, its axis (one value per
// block or per residual-stream boundary), how a probe combines seeds, a one-line description,
// a plot label and the function that measures it. Records, probe output, the metric
// descriptors that plot scripts read and the README check all iterate over that registry.
// Not here: anything that changes the model or needs autograd (measurements read tensors).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "nn/model.h"

namespace sl {

enum class MetricAxis {
  kBlock,     // n_layer values, index l = block l
  kBoundary,  // n_layer + 1 values, index 0 = the embedding output, index l = block l's output
};

// How `stacklab probe` combines the seeds' values of a metric.
enum class ProbeReduce {
  kMean,  // entry-wise mean over seeds (null where any seed is null)
  kSkip,  // not in probes (it needs an optimizer step)
};

// From qkv (B, T, 3C) as fed to causal_attention (columns q | k | v, head h owning columns
// [h*HS, (h+1)*HS) of each, HS = C / n_head), in double:
struct AttentionStats {
  double entropy;    // mean over (b, h, t) of -sum_{j<=t} p_tj ln p_tj, p = softmax_j(q_t.k_j /
                     // sqrt(HS))
  double logit_max;  // max over (b, h, t, j <= t) of |q_t.k_j| / sqrt(HS)
};
AttentionStats attention_stats(const Tensor& qkv, int64_t n_head);

// What a measurement may read. Built once per layers record by measure_layers.
struct MeasureInput {
  // Reads model.parameters() and their squared gradient norms.
  MeasureInput(const Model& model, const ForwardTrace& trace,
               const std::vector<double>& stream_grads, const std::vector<double>& update_norms);

  const Model& model;
  const ForwardTrace& trace;                // empty when the step was not traced
  const std::vector<double>& stream_grads;  // from hook_stream_grads, n_layer + 1 (empty untraced)
  const std::vector<double>& update_norms;  // ||delta|| per parameter of the last step, or empty
  std::vector<NamedTensor> params;          // model.parameters()
  std::vector<double> grad_sq;              // ||grad||^2 per parameter, params order (0 if none)
  // attention_stats of each trace.attn_qkv (NaN for a block without attention), computed on
  // first use: several metrics read it, the scores are computed once.
  const std::vector<AttentionStats>& attention() const;

 private:
  mutable std::optional<std::vector<AttentionStats>> attention_;
};

// A metric's values: one per axis entry, NaN where it is undefined or non-finite (written as
// null); nullopt writes the whole key as null (update_ratio before the first update).
using MetricValues = std::optional<std::vector<double>>;

struct LayerMetric {
  const char* name;  // the metrics.jsonl / probe key
  MetricAxis axis;
  ProbeReduce probe;
  const char* description;  // one line, for the README table and the descriptors
  const char* label;        // plot axis label
  MetricValues (*measure)(const MeasureInput&);
};

// The registry, in the order the keys are written.
const std::vector<LayerMetric>& layer_metrics();
const LayerMetric& layer_metric(const std::string& name);  // InternalError for an unknown name
const char* axis_name(MetricAxis axis);                    // "block" | "boundary"
int64_t axis_length(MetricAxis axis, int64_t n_layer);     // n_layer | n_layer + 1
// [{name, axis, length, probe, description, label}]: what plot scripts read from a run's start
// record and from probe output (`length` as text: "n_layer" or "n_layer + 1").
nlohmann::json layer_metrics_json();
// The registry as a Markdown table: key, axis, length, what it measures.
std::string layer_metrics_markdown();

struct LayerStats {
  std::vector<MetricValues> values;                    // layer_metrics() order
  std::vector<std::pair<std::string, double>> params;  // grad norm by parameter name
  // The values of metric `name` (empty when it was null, e.g. update_ratio before any update).
  const std::vector<double>& at(const std::string& name) const;
};

// Registers hooks on trace.stream that record ||dL/dx|| at every boundary into `out` (which
// must outlive the backward pass). Call after forward, before backward.
void hook_stream_grads(ForwardTrace& trace, std::vector<double>& out);

// Every registered metric from the model's current gradients and the forward trace.
// update_norms: ||delta|| per parameter of the last optimizer step, in model.parameters()
// order, or empty before the first update. Metrics read from the trace are [] when it is empty.
LayerStats measure_layers(const Model& model, const ForwardTrace& trace,
                          const std::vector<double>& stream_grads,
                          const std::vector<double>& update_norms);

// Per sequence ||X - 1 mean_t(X)^T||_F / ||X||_F for X (T, C), averaged over the batch:
// 0 when every position holds the same vector (rank collapse, Dong et al. 2021).
double rank_ratio(const Tensor& x);
double rms(const Tensor& x);
// Mean over the B*T tokens of cos(x_t, y_t) for x, y (B, T, C); tokens where either vector is
// exactly zero are left out (NaN when all are).
double mean_cosine(const Tensor& x, const Tensor& y);

// The record's metric keys (and "params" by name when with_params). Non-finite -> null.
nlohmann::json to_json(const LayerStats& s, bool with_params);

}  // namespace sl

// The per-layer metric registry and its measurements. Norms and sums are accumulated in double;
// nothing here records on the autograd tape (measurements read tensor data only). Block and
// sub-layer membership come from the declared parameter roles.
#include "train/layer_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/autograd.h"
#include "core/parallel.h"
#include "core/sums.h"
#include "util/error.h"
#include "util/markdown.h"

namespace sl {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Non-finite values are kept: they are what a diverging run needs to show.
nlohmann::json numbers(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  return a;
}

size_t n_blocks(const MeasureInput& in) { return static_cast<size_t>(in.model.config().n_layer); }

// sqrt of the sum of ||grad||^2 over block l's parameters, per block: all of them, or those
// whose declared role puts them in `group` (nn/module.h ParamInfo::group).
MetricValues group_grad_norm(const MeasureInput& in, std::optional<GradGroup> group) {
  std::vector<double> sq(n_blocks(in), 0.0);
  for (size_t i = 0; i < in.params.size(); ++i) {
    const ParamInfo& info = in.params[i].info;
    if (info.block >= 0 && (!group || info.group() == *group))
      sq[static_cast<size_t>(info.block)] += in.grad_sq[i];
  }
  for (double& v : sq) v = std::sqrt(v);
  return sq;
}

MetricValues update_ratio(const MeasureInput& in) {
  if (in.update_norms.empty()) return std::nullopt;
  std::vector<double> du(n_blocks(in), 0.0), pw(n_blocks(in), 0.0);
  for (size_t i = 0; i < in.params.size(); ++i) {
    const int b = in.params[i].info.block;
    if (b < 0) continue;
    const Tensor& t = in.params[i].tensor;
    du[static_cast<size_t>(b)] += in.update_norms[i] * in.update_norms[i];
    pw[static_cast<size_t>(b)] += squared_norm(t.data(), t.numel());
  }
  for (size_t k = 0; k < du.size(); ++k) du[k] = pw[k] > 0 ? std::sqrt(du[k] / pw[k]) : 0.0;
  return du;
}

// f(stream[l]) at every boundary; [] when the step was not traced.
template <typename F>
MetricValues per_boundary(const MeasureInput& in, F f) {
  std::vector<double> v;
  for (const Tensor& x : in.trace.stream) v.push_back(f(x));
  return v;
}

// One attention statistic per block: NaN (null) for blocks without attention; [] when the step
// was not traced.
MetricValues per_attention_block(const MeasureInput& in, double AttentionStats::*field) {
  std::vector<double> v;
  for (const AttentionStats& a : in.attention()) v.push_back(a.*field);
  return v;
}

MetricValues stream_cos(const MeasureInput& in) {
  std::vector<double> v;
  for (size_t l = 0; l + 1 < in.trace.stream.size(); ++l)
    v.push_back(mean_cosine(in.trace.stream[l], in.trace.stream[l + 1]));
  return v;
}

// Per block: the mean over its sub-layers of ms(branch) / ms(the stream the sub-layer reads), ms
// the mean square over (B, T, C): how large each branch is next to the stream it is added to.
// [] when the step was not traced.
MetricValues branch_ratio(const MeasureInput& in) {
  std::vector<double> v;
  for (const BlockTrace& b : in.trace.blocks) {
    double sum = 0.0;
    int n = 0;
    for (int s = 0; s < 2; ++s) {
      if (!b.branch[s].defined()) continue;
      const double in_sq = squared_norm(b.sub_input[s].data(), b.sub_input[s].numel());
      const double br_sq = squared_norm(b.branch[s].data(), b.branch[s].numel());
      sum += in_sq > 0 ? br_sq / in_sq : kNaN;  // same numel: the ratio of mean squares
      ++n;
    }
    v.push_back(n > 0 ? sum / n : kNaN);
  }
  return v;
}

}  // namespace

MeasureInput::MeasureInput(const Model& model_, const ForwardTrace& trace_,
                           const std::vector<double>& stream_grads_,
                           const std::vector<double>& update_norms_)
    : model(model_),
      trace(trace_),
      stream_grads(stream_grads_),
      update_norms(update_norms_),
      params(model_.parameters()) {
  for (const auto& [name, t, info] : params)
    grad_sq.push_back(t.has_grad() ? squared_norm(t.grad().data(), t.numel()) : 0.0);
}

const std::vector<AttentionStats>& MeasureInput::attention() const {
  if (!attention_) {
    attention_.emplace();
    for (const Tensor& qkv : trace.attn_qkv)
      attention_->push_back(qkv.defined() ? attention_stats(qkv, model.config().n_head)
                                          : AttentionStats{kNaN, kNaN});
  }
  return *attention_;
}

const std::vector<LayerMetric>& layer_metrics() {
  using A = MetricAxis;
  using P = ProbeReduce;
  static const std::vector<LayerMetric> registry = {
      {"grad_norm", A::kBlock, P::kMean, "gradient norm of all the block's parameters",
       "grad norm of the block's parameters",
       [](const MeasureInput& in) { return group_grad_norm(in, std::nullopt); }},
      {"attn_grad_norm", A::kBlock, P::kMean,
       "gradient norm of the attention sub-layer's parameters (with its residual-scaling gate)",
       "grad norm of the attention parameters",
       [](const MeasureInput& in) { return group_grad_norm(in, GradGroup::Attn); }},
      {"mlp_grad_norm", A::kBlock, P::kMean,
       "gradient norm of the MLP sub-layer's parameters (with its residual-scaling gate)",
       "grad norm of the MLP parameters",
       [](const MeasureInput& in) { return group_grad_norm(in, GradGroup::Mlp); }},
      {"norm_grad_norm", A::kBlock, P::kMean,
       "gradient norm of the block's norm parameters (gains, biases, DyT's alpha, QK-norm's)",
       "grad norm of the norm parameters",
       [](const MeasureInput& in) { return group_grad_norm(in, GradGroup::Norm); }},
      {"update_ratio", A::kBlock, P::kSkip,
       "norm of the last optimizer update over the norm of the block's weights (null at step 0)",
       "update norm / weight norm", update_ratio},
      {"act_rms", A::kBoundary, P::kMean, "RMS of the residual stream", "activation RMS",
       [](const MeasureInput& in) {
         return per_boundary(in, [](const Tensor& x) { return rms(x); });
       }},
      {"stream_grad_norm", A::kBoundary, P::kMean,
       "norm of dL/dx, the loss gradient at the residual stream",
       "grad norm of the stream, ||dL/dx||",
       [](const MeasureInput& in) -> MetricValues { return in.stream_grads; }},
      {"rank_ratio", A::kBoundary, P::kMean,
       "per sequence ||X - 1 mean_t(X)^T||_F / ||X||_F, averaged: 0 = every token the same vector "
       "(rank collapse)",
       "rank ratio ||X - mean_t X||_F / ||X||_F",
       [](const MeasureInput& in) {
         return per_boundary(in, [](const Tensor& x) { return rank_ratio(x); });
       }},
      {"attn_entropy", A::kBlock, P::kMean,
       "entropy (nats) of the causal attention distribution, mean over heads, sequences and query "
       "positions "
       "(entropy collapse); null without attention",
       "attention entropy (nats)",
       [](const MeasureInput& in) { return per_attention_block(in, &AttentionStats::entropy); }},
      {"attn_logit_max", A::kBlock, P::kMean,
       "largest |q.k| / sqrt(head size) over heads, sequences and causal positions, before the "
       "softmax (logit "
       "growth); null without attention",
       "max |attention logit|",
       [](const MeasureInput& in) { return per_attention_block(in, &AttentionStats::logit_max); }},
      {"stream_cos", A::kBlock, P::kMean,
       "cosine similarity of the block's input and output stream, mean over tokens (1 = the block "
       "changes nothing)",
       "cos(block input, block output)", stream_cos},
      {"branch_ratio", A::kBlock, P::kMean,
       "mean square of each sub-layer's branch as it enters the sum (g f(...); f(...) without "
       "residual) over that of the stream the sub-layer reads, mean over the block's sub-layers",
       "branch / stream (mean squares)", branch_ratio},
  };
  return registry;
}

const LayerMetric& layer_metric(const std::string& name) {
  for (const LayerMetric& m : layer_metrics())
    if (name == m.name) return m;
  throw InternalError("unknown per-layer metric '" + name + "' (not in layer_metrics())");
}

const char* axis_name(MetricAxis axis) {
  switch (axis) {
    case MetricAxis::kBlock:
      return "block";
    case MetricAxis::kBoundary:
      return "boundary";
  }
  return "?";
}

int64_t axis_length(MetricAxis axis, int64_t n_layer) {
  switch (axis) {
    case MetricAxis::kBlock:
      return n_layer;
    case MetricAxis::kBoundary:
      return n_layer + 1;
  }
  return 0;
}

nlohmann::json layer_metrics_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const LayerMetric& m : layer_metrics())
    out.push_back({{"name", m.name},
                   {"axis", axis_name(m.axis)},
                   {"length", m.axis == MetricAxis::kBlock ? "n_layer" : "n_layer + 1"},
                   {"probe", m.probe == ProbeReduce::kMean ? "mean" : "skip"},
                   {"description", m.description},
                   {"label", m.label}});
  return out;
}

std::string layer_metrics_markdown() {
  std::string md = "| key | axis | length | what it measures |\n|---|---|---|---|\n";
  for (const LayerMetric& m : layer_metrics())
    md += std::string("| `") + m.name + "` | " + axis_name(m.axis) + " | " +
          (m.axis == MetricAxis::kBlock ? "`n_layer`" : "`n_layer + 1`") + " | " +
          markdown_cell(m.description) + " |\n";
  return md;
}

const std::vector<double>& LayerStats::at(const std::string& name) const {
  static const std::vector<double> kNone;
  const auto& reg = layer_metrics();
  for (size_t i = 0; i < reg.size() && i < values.size(); ++i)
    if (name == reg[i].name) return values[i] ? *values[i] : kNone;
  throw InternalError("unknown per-layer metric '" + name + "' (not in layer_metrics())");
}

double rms(const Tensor& x) {
  return x.numel() ? std::sqrt(squared_norm(x.data(), x.numel()) / static_cast<double>(x.numel()))
                   : 0.0;
}

double rank_ratio(const Tensor& x) {
  const int64_t C = x.size(-1), T = x.size(-2), B = x.numel() / (T * C);
  double total = 0.0;
  std::vector<double> mean(static_cast<size_t>(C));
  for (int64_t b = 0; b < B; ++b) {
    const float* X = x.data() + b * T * C;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        mean[static_cast<size_t>(c)] += static_cast<double>(X[t * C + c]);
    for (auto& m : mean) m /= static_cast<double>(T);
    double resid = 0.0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const double d = static_cast<double>(X[t * C + c]) - mean[static_cast<size_t>(c)];
        resid += d * d;
      }
    const double norm = squared_norm(X, T * C);
    total += norm > 0 ? std::sqrt(resid / norm) : 0.0;
  }
  return B ? total / static_cast<double>(B) : 0.0;
}

double mean_cosine(const Tensor& x, const Tensor& y) {
  SL_CHECK(x.shape() == y.shape(), "[mean_cosine] x and y differ in shape");
  const int64_t C = x.size(-1), N = x.numel() / C;
  double total = 0.0;
  int64_t counted = 0;
  for (int64_t n = 0; n < N; ++n) {
    const float* a = x.data() + n * C;
    const float* b = y.data() + n * C;
    double ab = 0.0;
    for (int64_t c = 0; c < C; ++c) ab += static_cast<double>(a[c]) * static_cast<double>(b[c]);
    const double na = squared_norm(a, C), nb = squared_norm(b, C);
    if (na == 0.0 || nb == 0.0) continue;
    total += ab / std::sqrt(na * nb);
    ++counted;
  }
  return counted ? total / static_cast<double>(counted) : kNaN;
}

AttentionStats attention_stats(const Tensor& qkv, int64_t n_head) {
  SL_CHECK(qkv.ndim() == 3 && qkv.size(2) % (3 * n_head) == 0,
           "[attention_stats] expected qkv (B, T, 3C), 3C divisible by 3 n_head");
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, HS = C / n_head;
  const double inv_sqrt_hs = 1.0 / std::sqrt(static_cast<double>(HS));
  // one (entropy sum, logit max) per (b, h), combined in order below: deterministic at any thread
  // count
  std::vector<double> ent(static_cast<size_t>(B * n_head)), mx(static_cast<size_t>(B * n_head));
  parallel_for(B * n_head, B * n_head * T * T * HS, [&](int64_t bh) {
    const int64_t b = bh / n_head, h = bh % n_head;
    const float* base = qkv.data() + b * T * 3 * C;  // (T, 3C) of sequence b
    // kt (HS, T): head h's keys, transposed so the scores below are a loop over contiguous j
    std::vector<double> kt(static_cast<size_t>(HS * T)), s(static_cast<size_t>(T));
    for (int64_t j = 0; j < T; ++j)
      for (int64_t i = 0; i < HS; ++i)
        kt[static_cast<size_t>(i * T + j)] = static_cast<double>(base[j * 3 * C + C + h * HS + i]);
    double e_sum = 0.0, m_abs = 0.0;
    bool finite = true;  // std::max would skip a NaN score: a non-finite one makes both stats NaN
    for (int64_t t = 0; t < T; ++t) {
      const float* q = base + t * 3 * C + h * HS;
      const size_t n = static_cast<size_t>(t + 1);  // causal: keys at positions j <= t
      std::fill(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
      for (int64_t i = 0; i < HS; ++i) {
        const double qi = static_cast<double>(q[i]);
        const double* k = kt.data() + i * T;
        for (size_t j = 0; j < n; ++j) s[j] += qi * k[j];
      }
      double m = -std::numeric_limits<double>::infinity();
      for (size_t j = 0; j < n; ++j) {
        s[j] *= inv_sqrt_hs;
        finite = finite && std::isfinite(s[j]);
        m = std::max(m, s[j]);
        m_abs = std::max(m_abs, std::abs(s[j]));
      }
      // p_j = exp(s_j - m) / Z, Z = sum_j exp(s_j - m);  H = ln Z - sum_j p_j (s_j - m)
      double z = 0.0, ps = 0.0;
      for (size_t j = 0; j < n; ++j) {
        const double w = std::exp(s[j] - m);
        z += w;
        ps += w * (s[j] - m);
      }
      e_sum += std::log(z) - ps / z;
    }
    ent[static_cast<size_t>(bh)] = finite ? e_sum : kNaN;
    mx[static_cast<size_t>(bh)] = finite ? m_abs : kNaN;
  });
  double e = 0.0, m = 0.0;
  for (size_t i = 0; i < ent.size(); ++i) {
    e += ent[i];
    m = std::isnan(mx[i]) || std::isnan(m) ? kNaN : std::max(m, mx[i]);
  }
  const double count = static_cast<double>(B * n_head * T);
  return {count > 0 ? e / count : kNaN, m};
}

void hook_stream_grads(ForwardTrace& trace, std::vector<double>& out) {
  out.assign(trace.stream.size(), 0.0);
  for (size_t i = 0; i < trace.stream.size(); ++i) {
    Tensor& t = trace.stream[i];
    if (!t.requires_grad()) continue;
    double* slot = &out[i];
    t.register_hook(
        [slot](const Tensor& g) { *slot = std::sqrt(squared_norm(g.data(), g.numel())); });
  }
}

LayerStats measure_layers(const Model& model, const ForwardTrace& trace,
                          const std::vector<double>& stream_grads,
                          const std::vector<double>& update_norms) {
  const MeasureInput in(model, trace, stream_grads, update_norms);
  LayerStats s;
  for (size_t i = 0; i < in.params.size(); ++i)
    s.params.emplace_back(in.params[i].name, std::sqrt(in.grad_sq[i]));
  for (const LayerMetric& m : layer_metrics()) s.values.push_back(m.measure(in));
  return s;
}

nlohmann::json to_json(const LayerStats& s, bool with_params) {
  nlohmann::json j;
  const auto& reg = layer_metrics();
  SL_CHECK(s.values.size() == reg.size(), "[to_json] LayerStats from another registry");
  for (size_t i = 0; i < reg.size(); ++i)
    j[reg[i].name] = s.values[i] ? numbers(*s.values[i]) : nlohmann::json(nullptr);
  if (with_params) {
    nlohmann::json p = nlohmann::json::object();
    for (const auto& [name, v] : s.params)
      p[name] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    j["params"] = p;
  }
  return j;
}

}  // namespace sl

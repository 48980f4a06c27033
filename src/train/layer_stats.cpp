// Norms accumulated in double; block and sub-layer membership read from the declared parameter roles.
#include "train/layer_stats.h"

#include <cmath>

#include "core/autograd.h"

namespace sl {
namespace {

double sq_norm(const float* p, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(p[i]) * static_cast<double>(p[i]);
  return s;
}

// Non-finite values are kept: they are what a diverging run needs to show.
nlohmann::json numbers(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
  return a;
}

}  // namespace

double rms(const Tensor& x) {
  return x.numel() ? std::sqrt(sq_norm(x.data(), x.numel()) / static_cast<double>(x.numel())) : 0.0;
}

double rank_ratio(const Tensor& x) {
  const int64_t C = x.size(-1), T = x.size(-2), B = x.numel() / (T * C);
  double total = 0.0;
  std::vector<double> mean(static_cast<size_t>(C));
  for (int64_t b = 0; b < B; ++b) {
    const float* X = x.data() + b * T * C;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) mean[static_cast<size_t>(c)] += static_cast<double>(X[t * C + c]);
    for (auto& m : mean) m /= static_cast<double>(T);
    double resid = 0.0;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const double d = static_cast<double>(X[t * C + c]) - mean[static_cast<size_t>(c)];
        resid += d * d;
      }
    const double norm = sq_norm(X, T * C);
    total += norm > 0 ? std::sqrt(resid / norm) : 0.0;
  }
  return B ? total / static_cast<double>(B) : 0.0;
}

void hook_stream_grads(ForwardTrace& trace, std::vector<double>& out) {
  out.assign(trace.stream.size(), 0.0);
  for (size_t i = 0; i < trace.stream.size(); ++i) {
    Tensor& t = trace.stream[i];
    if (!t.requires_grad()) continue;
    double* slot = &out[i];
    t.register_hook([slot](const Tensor& g) { *slot = std::sqrt(sq_norm(g.data(), g.numel())); });
  }
}

LayerStats measure_layers(const Model& model, const ForwardTrace& trace, const std::vector<double>& stream_grads,
                          const std::vector<double>& update_norms) {
  const auto L = static_cast<size_t>(model.config().n_layer);
  LayerStats s;
  std::vector<double> g(L, 0.0), ga(L, 0.0), gm(L, 0.0), gn(L, 0.0), du(L, 0.0), pw(L, 0.0);
  const auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, t, info] = params[i];
    const double gsq = t.has_grad() ? sq_norm(t.grad().data(), t.numel()) : 0.0;
    s.params.emplace_back(name, std::sqrt(gsq));
    if (info.block < 0) continue;
    const auto k = static_cast<size_t>(info.block);
    g[k] += gsq;
    switch (info.group()) {
      case GradGroup::Attn: ga[k] += gsq; break;
      case GradGroup::Mlp: gm[k] += gsq; break;
      case GradGroup::Norm: gn[k] += gsq; break;
      case GradGroup::None: break;
    }
    if (!update_norms.empty()) {
      du[k] += update_norms[i] * update_norms[i];
      pw[k] += sq_norm(t.data(), t.numel());
    }
  }
  for (size_t k = 0; k < L; ++k) {
    s.grad_norm.push_back(std::sqrt(g[k]));
    s.attn_grad_norm.push_back(std::sqrt(ga[k]));
    s.mlp_grad_norm.push_back(std::sqrt(gm[k]));
    s.norm_grad_norm.push_back(std::sqrt(gn[k]));
    if (!update_norms.empty()) s.update_ratio.push_back(pw[k] > 0 ? std::sqrt(du[k] / pw[k]) : 0.0);
  }
  for (const Tensor& x : trace.stream) {
    s.act_rms.push_back(rms(x));
    s.rank_ratio.push_back(rank_ratio(x));
  }
  s.stream_grad_norm = stream_grads;
  return s;
}

nlohmann::json to_json(const LayerStats& s, bool with_params) {
  nlohmann::json j;
  j["grad_norm"] = numbers(s.grad_norm);
  j["attn_grad_norm"] = numbers(s.attn_grad_norm);
  j["mlp_grad_norm"] = numbers(s.mlp_grad_norm);
  j["norm_grad_norm"] = numbers(s.norm_grad_norm);
  j["update_ratio"] = s.update_ratio.empty() ? nlohmann::json(nullptr) : numbers(s.update_ratio);
  j["act_rms"] = numbers(s.act_rms);
  j["stream_grad_norm"] = numbers(s.stream_grad_norm);
  j["rank_ratio"] = numbers(s.rank_ratio);
  if (with_params) {
    nlohmann::json p = nlohmann::json::object();
    for (const auto& [name, v] : s.params) p[name] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
    j["params"] = p;
  }
  return j;
}

}  // namespace sl

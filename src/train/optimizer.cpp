// AdamW and SGD, element by element in the float32 operation order of PyTorch 1.13's
// single-tensor implementations; torch's add(x, alpha) kernel is a fused multiply-add, hence
// std::fma there. Scalars (bias corrections, 1 - lr*wd) are computed in double and rounded once,
// as torch does with Python floats. On tests/parity/optim_reference.py's fixture the results are
// bit-identical to torch's. AdamW runs each parameter in fixed chunks over the threads (the
// element formula is unchanged; the update norm's partial sums are added in chunk order).
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/fastmath.h"
#include "core/parallel.h"
#include "core/sums.h"
#include "util/error.h"

namespace sl {

namespace {

struct AdamWCoeffs {
  float b1, b2, one_minus_b1, one_minus_b2, eps, decay, neg_step, bias2_sqrt;
};

// Elements [lo, hi) of parameter `param`: the unit of AdamW's one parallel pass.
struct AdamWChunk {
  size_t param;
  int64_t lo, hi;
};

// AdamW on elements [lo, hi) of one parameter; returns the sum of the squared changes of w.
// The element loop runs over blocks of kBlock, keeping the old weights in a small buffer that a
// second loop then compares in double: the element loop so has no serial reduction and vectorises,
// and the second is an `omp simd` reduction (lane partials in an order fixed by the clone's vector
// width; a serial chain of double adds there cost b3 about 6 of its optimizer's 11.4 ms).
SL_SIMD_CLONES double adamw_span(float* __restrict w, float* __restrict m, float* __restrict v,
                                 const float* __restrict g, int64_t lo, int64_t hi,
                                 const AdamWCoeffs c) {
  constexpr int64_t kBlock = 256;
  float before[kBlock];
  double dsq = 0.0;
  for (int64_t b = lo; b < hi; b += kBlock) {
    const int64_t e = b + kBlock < hi ? b + kBlock : hi;
    for (int64_t i = b; i < e; ++i) {
      const float old = w[i];
      const float decayed = old * c.decay;
      m[i] = __builtin_fmaf(c.one_minus_b1, g[i], m[i] * c.b1);
      v[i] = v[i] * c.b2 + c.one_minus_b2 * g[i] * g[i];
      const float denom = __builtin_sqrtf(v[i]) / c.bias2_sqrt + c.eps;
      w[i] = decayed + c.neg_step * m[i] / denom;
      before[i - b] = old;
    }
#pragma omp simd reduction(+ : dsq)
    for (int64_t i = b; i < e; ++i) {
      const double d = static_cast<double>(w[i]) - static_cast<double>(before[i - b]);
      dsq += d * d;
    }
  }
  return dsq;
}

void copy_into(Tensor& dst, const Tensor& src) {
  std::memcpy(dst.data(), src.data(), static_cast<size_t>(dst.numel()) * sizeof(float));
}

Tensor one_value(float v) { return Tensor::from(Shape{1}, {v}); }

// ---- AdamW (torch.optim.AdamW) ------------------------------------------------------------
//   p <- p * (1 - lr*wd)                       decay=true params only (decoupled decay)
//   m <- beta1*m + (1-beta1)*g,  v <- beta2*v + (1-beta2)*g^2
//   p <- p - lr/(1-beta1^t) * m / (sqrt(v)/sqrt(1-beta2^t) + eps)     t = this param's step count
class AdamW final : public Optimizer {
 public:
  AdamW(const OptimConfig& cfg, std::vector<ParamRef> params)
      : Optimizer(std::move(params)),
        beta1_(cfg.beta1),
        beta2_(cfg.beta2),
        eps_(cfg.eps),
        weight_decay_(cfg.weight_decay) {
    for (const ParamRef& p : params_) {
      m_.push_back(Tensor::zeros(p.tensor.shape()));  // same shape as p
      v_.push_back(Tensor::zeros(p.tensor.shape()));  // same shape as p
    }
    param_steps_.assign(params_.size(), 0);
  }

  // One pass over all parameters: every parameter is cut into the same fixed chunks as before
  // and all chunks of all parameters share one parallel loop (a 96-layer stack has ~1200
  // parameters, most below the parallel grain: one loop per parameter ran them one at a time).
  // Each parameter's update norm adds its chunks' partials in chunk order, as before: the
  // results do not depend on the thread count or on this grouping.
  void step(float lr) override {
    const auto b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_);
    const auto one_minus_b1 = static_cast<float>(1.0 - beta1_);
    const auto one_minus_b2 = static_cast<float>(1.0 - beta2_);
    const auto eps = static_cast<float>(eps_);
    constexpr int64_t kChunk = 1 << 13;
    coeffs_.assign(params_.size(), AdamWCoeffs{});
    chunks_.clear();
    int64_t total = 0;
    for (size_t k = 0; k < params_.size(); ++k) {
      Tensor& p = params_[k].tensor;
      last_update_norms_[k] = 0.0;
      if (!p.has_grad()) continue;
      const int64_t t = ++param_steps_[k];
      const double wd = params_[k].decay ? weight_decay_ : 0.0;
      const auto decay = static_cast<float>(1.0 - static_cast<double>(lr) * wd);
      const double bias1 = 1.0 - std::pow(beta1_, static_cast<double>(t));
      const double bias2 = 1.0 - std::pow(beta2_, static_cast<double>(t));
      const auto neg_step = static_cast<float>(-static_cast<double>(lr) / bias1);
      const auto bias2_sqrt = static_cast<float>(std::sqrt(bias2));
      coeffs_[k] = {b1, b2, one_minus_b1, one_minus_b2, eps, decay, neg_step, bias2_sqrt};
      const int64_t n = p.numel();
      for (int64_t lo = 0; lo < n; lo += kChunk)
        chunks_.push_back({k, lo, std::min(lo + kChunk, n)});
      total += n;
    }
    parts_.assign(chunks_.size(), 0.0);
    parallel_for(static_cast<int64_t>(chunks_.size()), total, [&](int64_t i) {
      const AdamWChunk& c = chunks_[static_cast<size_t>(i)];
      const size_t k = c.param;
      parts_[static_cast<size_t>(i)] =
          adamw_span(params_[k].tensor.data(), m_[k].data(), v_[k].data(),
                     params_[k].tensor.grad_data(), c.lo, c.hi, coeffs_[k]);
    });
    for (size_t i = 0; i < chunks_.size(); ++i)  // in parameter order, chunks in order
      last_update_norms_[chunks_[i].param] += parts_[i];
    for (size_t k = 0; k < params_.size(); ++k)
      last_update_norms_[k] = std::sqrt(last_update_norms_[k]);
    ++steps_;
  }

  StateTensors state_tensors() const override {
    StateTensors out;
    for (size_t k = 0; k < params_.size(); ++k) {
      const std::string& name = params_[k].name;
      out.emplace_back("adamw.m." + name, m_[k].clone());
      out.emplace_back("adamw.v." + name, v_[k].clone());
      out.emplace_back("adamw.step." + name, one_value(static_cast<float>(param_steps_[k])));
    }
    return out;
  }

  void load_state_tensors(const StateTensors& state, int64_t step) override {
    if (step < 0)
      throw Error("[adamw] load_state_tensors: step " + std::to_string(step) + " is negative");
    std::vector<std::string> expected;
    std::vector<int64_t> counts(params_.size());
    for (size_t k = 0; k < params_.size(); ++k) {  // check everything before changing anything
      const std::string& name = params_[k].name;
      find_state(state, "adamw.m." + name, m_[k].shape(), "adamw");
      find_state(state, "adamw.v." + name, v_[k].shape(), "adamw");
      const float c = find_state(state, "adamw.step." + name, Shape{1}, "adamw").item();
      if (!(c >= 0.0f && c <= static_cast<float>(step) && std::floor(c) == c))
        throw Error("[adamw] state entry 'adamw.step." + name + "' is " + std::to_string(c) +
                    ", expected a whole number in [0, " + std::to_string(step) + "]");
      counts[k] = static_cast<int64_t>(c);
      expected.insert(expected.end(), {"adamw.m." + name, "adamw.v." + name, "adamw.step." + name});
    }
    reject_unexpected(state, expected, "adamw");
    for (size_t k = 0; k < params_.size(); ++k) {
      copy_into(m_[k], find_state(state, "adamw.m." + params_[k].name, m_[k].shape(), "adamw"));
      copy_into(v_[k], find_state(state, "adamw.v." + params_[k].name, v_[k].shape(), "adamw"));
    }
    param_steps_ = counts;
    steps_ = step;
  }

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  std::vector<Tensor> m_, v_;         // first and second moments, one per param, its shape
  std::vector<int64_t> param_steps_;  // steps that reached each param (bias correction's t)
  // Per-step scratch of the one pass, kept to avoid reallocating: each parameter's coefficients,
  // the chunks of all parameters, each chunk's sum of squared changes.
  std::vector<AdamWCoeffs> coeffs_;
  std::vector<AdamWChunk> chunks_;
  std::vector<double> parts_;
};

// ---- SGD (torch.optim.SGD, dampening 0) ---------------------------------------------------
//   g <- g + wd*p                      decay=true params only (coupled decay)
//   buf <- momentum*buf + g            (first step: buf = g; a zeroed buffer gives exactly that)
//   g <- nesterov ? g + momentum*buf : buf
//   p <- p - lr*g
class Sgd final : public Optimizer {
 public:
  Sgd(const OptimConfig& cfg, std::vector<ParamRef> params)
      : Optimizer(std::move(params)),
        momentum_(cfg.momentum),
        nesterov_(cfg.nesterov),
        weight_decay_(cfg.weight_decay) {
    if (nesterov_ && momentum_ <= 0.0)
      throw Error("[sgd] optim.nesterov needs optim.momentum > 0, got " +
                  std::to_string(momentum_));
    if (momentum_ != 0.0)
      for (const ParamRef& p : params_)
        buf_.push_back(Tensor::zeros(p.tensor.shape()));  // p's shape
  }

  void step(float lr) override {
    const auto mu = static_cast<float>(momentum_);
    const float neg_lr = -lr;
    for (size_t k = 0; k < params_.size(); ++k) {
      Tensor& p = params_[k].tensor;
      last_update_norms_[k] = 0.0;
      if (!p.has_grad()) continue;
      const bool decay = params_[k].decay && weight_decay_ != 0.0;
      const auto wd = static_cast<float>(weight_decay_);
      float* w = p.data();
      const float* grad = p.grad_data();
      float* buf = buf_.empty() ? nullptr : buf_[k].data();
      double delta_sq = 0.0;
      for (int64_t i = 0, n = p.numel(); i < n; ++i) {
        const float old = w[i];
        float g = grad[i];
        if (decay) g = std::fma(wd, old, g);
        if (buf) {
          buf[i] = buf[i] * mu + g;
          g = nesterov_ ? std::fma(mu, buf[i], g) : buf[i];
        }
        w[i] = std::fma(neg_lr, g, old);
        const double d = static_cast<double>(w[i]) - static_cast<double>(old);
        delta_sq += d * d;
      }
      last_update_norms_[k] = std::sqrt(delta_sq);
    }
    ++steps_;
  }

  StateTensors state_tensors() const override {
    StateTensors out;
    for (size_t k = 0; k < buf_.size(); ++k)
      out.emplace_back("sgd.momentum." + params_[k].name, buf_[k].clone());
    return out;
  }

  void load_state_tensors(const StateTensors& state, int64_t step) override {
    if (step < 0)
      throw Error("[sgd] load_state_tensors: step " + std::to_string(step) + " is negative");
    std::vector<std::string> expected;
    for (size_t k = 0; k < buf_.size(); ++k) {
      expected.push_back("sgd.momentum." + params_[k].name);
      find_state(state, expected.back(), buf_[k].shape(), "sgd");
    }
    reject_unexpected(state, expected, "sgd");
    for (size_t k = 0; k < buf_.size(); ++k)
      copy_into(buf_[k], find_state(state, expected[k], buf_[k].shape(), "sgd"));
    steps_ = step;
  }

 private:
  double momentum_;
  bool nesterov_;
  double weight_decay_;
  std::vector<Tensor> buf_;  // momentum buffers, one per param, its shape; empty when momentum is 0
};

}  // namespace

// ---- Optimizer ----------------------------------------------------------------------------

Optimizer::Optimizer(std::vector<ParamRef> params) : params_(std::move(params)) {
  std::set<std::string> seen;
  for (const ParamRef& p : params_) {
    if (!p.tensor.defined()) throw Error("[optimizer] param '" + p.name + "' has no tensor");
    if (!seen.insert(p.name).second)
      throw Error("[optimizer] param name '" + p.name + "' appears twice");
  }
  last_update_norms_.assign(params_.size(), 0.0);
}

void Optimizer::zero_grad() {
  for (ParamRef& p : params_) p.tensor.zero_grad();
}

const Tensor& Optimizer::find_state(const StateTensors& state, const std::string& name,
                                    const Shape& shape, const std::string& who) {
  auto it =
      std::find_if(state.begin(), state.end(), [&](const auto& e) { return e.first == name; });
  if (it == state.end())
    throw Error("[" + who + "] optimizer state has no entry '" + name +
                "' (saved by a different optimizer or model?)");
  if (!it->second.defined() || it->second.shape() != shape)
    throw Error("[" + who + "] optimizer state entry '" + name + "' has shape " +
                (it->second.defined() ? it->second.shape().str() : std::string("(undefined)")) +
                ", expected " + shape.str());
  return it->second;
}

void Optimizer::reject_unexpected(const StateTensors& state,
                                  const std::vector<std::string>& expected,
                                  const std::string& who) {
  for (const auto& [name, tensor] : state)
    if (std::find(expected.begin(), expected.end(), name) == expected.end())
      throw Error("[" + who + "] optimizer state has an unexpected entry '" + name +
                  "' (saved by a different optimizer or model?)");
}

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& cfg, std::vector<ParamRef> params) {
  switch (cfg.name) {
    case OptimizerKind::AdamW:
      return std::make_unique<AdamW>(cfg, std::move(params));
    case OptimizerKind::Sgd:
      return std::make_unique<Sgd>(cfg, std::move(params));
  }
  SL_CHECK(false, "make_optimizer: an enum value outside OptimizerKind");
}

// ---- gradient norms -----------------------------------------------------------------------

std::vector<double> grad_norms(const std::vector<ParamRef>& params) {
  std::vector<double> out;
  out.reserve(params.size());
  for (const ParamRef& p : params)
    out.push_back(p.tensor.has_grad()
                      ? std::sqrt(squared_norm(p.tensor.grad().data(), p.tensor.numel()))
                      : 0.0);
  return out;
}

std::vector<double> param_norms(const std::vector<ParamRef>& params) {
  std::vector<double> out;
  out.reserve(params.size());
  for (const ParamRef& p : params)
    out.push_back(std::sqrt(squared_norm(p.tensor.data(), p.tensor.numel())));
  return out;
}

double global_grad_norm(const std::vector<ParamRef>& params) {
  double s = 0.0;
  for (const ParamRef& p : params)
    if (p.tensor.has_grad()) s += squared_norm(p.tensor.grad().data(), p.tensor.numel());
  return std::sqrt(s);
}

double clip_grad_norm(std::vector<ParamRef>& params, double max_norm) {
  if (!(max_norm > 0.0))
    throw Error("[clip_grad_norm] max_norm must be > 0, got " + std::to_string(max_norm));
  const double norm = global_grad_norm(params);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const auto scale = static_cast<float>(max_norm / (norm + 1e-6));
  for (ParamRef& p : params) {
    if (!p.tensor.has_grad()) continue;
    float* g = p.tensor.grad_data();
    for (int64_t i = 0, n = p.tensor.numel(); i < n; ++i) g[i] *= scale;
  }
  return norm;
}

bool param_decays(const ParamInfo& info, const OptimConfig& cfg) {
  if (!cfg.decay_exempt) return true;
  return info.decays() || (cfg.decay_embeddings && info.role == ParamRole::Embedding);
}

}  // namespace sl

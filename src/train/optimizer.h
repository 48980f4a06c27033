// Optimizers (AdamW, SGD with momentum) and gradient-norm utilities, each matching its PyTorch
// counterpart (torch.optim.AdamW, torch.optim.SGD, torch.nn.utils.clip_grad_norm_) on float32.
// Which parameters get weight decay is the caller's decision (ParamRef::decay); the learning
// rate comes in per step (see schedule.h). Not here: param groups, schedules, the training loop.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/tensor.h"
#include "nn/module.h"

namespace sl {

struct ParamRef {
  std::string name;  // the stable dotted path, e.g. "blocks.0.attn.qkv.weight"
  Tensor tensor;
  bool decay = true;  // false for decay-exempt parameters
};

// Whether weight decay touches a parameter of this role. optim.decay_exempt (default): only
// Linear weights decay, not biases, norm parameters, embeddings or gates; with
// optim.decay_embeddings the embedding tables decay too, which is nanoGPT's rule (every parameter
// with dim >= 2). Without decay_exempt every parameter decays.
bool param_decays(const ParamInfo& info, const OptimConfig& cfg);

// Named optimizer state, as written to and read from checkpoints.
using StateTensors = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  explicit Optimizer(std::vector<ParamRef> params);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update from the params' current gradients; params without a gradient are skipped
  // (their state does not advance and their update norm is 0).
  virtual void step(float lr) = 0;
  // Zeroes every allocated gradient in place (the buffers stay allocated).
  void zero_grad();

  // ||delta_p|| of the last step, one per param in params() order (double accumulation).
  // The update_ratio metric is this over ||p|| (see param_norms).
  const std::vector<double>& last_update_norms() const { return last_update_norms_; }

  // A copy of the state: every moment buffer plus per-param step counts, named
  // "<optimizer>.<what>.<param name>". load_state_tensors expects exactly these names and
  // shapes (it throws sl::Error naming the first missing, mismatching or unexpected entry,
  // before changing anything) and `step`, the value steps() returned when they were saved.
  virtual StateTensors state_tensors() const = 0;
  virtual void load_state_tensors(const StateTensors& state, int64_t step) = 0;

  int64_t steps() const { return steps_; }  // calls to step() since construction or load
  const std::vector<ParamRef>& params() const { return params_; }

 protected:
  // state[name], checked to exist with `shape`; otherwise an sl::Error starting with [who].
  static const Tensor& find_state(const StateTensors& state, const std::string& name,
                                  const Shape& shape, const std::string& who);
  // Throws naming the first entry of `state` that is not in `expected`.
  static void reject_unexpected(const StateTensors& state, const std::vector<std::string>& expected,
                                const std::string& who);

  std::vector<ParamRef> params_;
  std::vector<double> last_update_norms_;
  int64_t steps_ = 0;
};

// The optimizer named by cfg.name ("adamw" or "sgd") with cfg's hyperparameters. Throws
// sl::Error for an unknown name, an undefined tensor or a duplicated param name.
std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& cfg, std::vector<ParamRef> params);

// sqrt of the sum of squared gradient entries over all params that have a gradient (double).
double global_grad_norm(const std::vector<ParamRef>& params);
// ||grad|| per param, in order; 0 for a param without a gradient.
std::vector<double> grad_norms(const std::vector<ParamRef>& params);
// ||p|| per param, in order (the denominator of the update ratio).
std::vector<double> param_norms(const std::vector<ParamRef>& params);
// Scales all gradients by max_norm / (norm + 1e-6) when the global norm exceeds max_norm, as
// torch.nn.utils.clip_grad_norm_ does, and returns the norm before clipping. A non-finite norm
// is returned as is and the gradients are left alone (the trainer decides what divergence means).
double clip_grad_norm(std::vector<ParamRef>& params, double max_norm);

}  // namespace sl

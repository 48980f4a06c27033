// `stacklab gradients CONFIG [--checkpoint PATH] --out DIR`: the model at init (or the weights
// of a run's checkpoint), one fixed training batch, and everything a reference implementation
// needs to check it: weights.safetensors (with the resolved config in its metadata),
// batch.safetensors (x, y as float32), outputs.safetensors (logits, loss, grad.<param> for every
// parameter). Used by tests/parity/torch_parity.py (at init) and tests/parity/load_run_check.py
// (a trained run's checkpoint against stacklab.load_run).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/fpmode.h"
#include "core/ops.h"
#include "nn/model.h"
#include "nn/weights.h"
#include "train/checkpoint.h"
#include "train/setup.h"
#include "train/trainer.h"
#include "util/fsutil.h"

namespace sl {

int cmd_gradients(const ArgList& argv) {
  Args a = parse_args("gradients", argv, {"out", "checkpoint"}, {}, true);
  if (a.positional.size() != 1) throw Error("expected one CONFIG file");
  if (!a.has("out")) throw Error("--out DIR is required");
  Config cfg = load_config(a.positional[0], a.overrides);
  set_flush_subnormals(cfg.train.flush_subnormals);  // the arithmetic a training run of cfg has
  auto data = make_data(cfg);
  Model model(cfg.model);
  model.init_weights(cfg.train.seed);
  if (a.has("checkpoint")) {  // a trained model: checked like `sample` and `train --resume` read it
    const std::string ckpt = a.get("checkpoint", "");
    const TensorFile file = read_checkpoint_file(ckpt);
    // Its weights run through CONFIG's wiring only if they were trained with it (as in sample).
    check_checkpoint_config(ckpt, checkpoint_metadata(file, ckpt, "config"), run_config_json(cfg),
                            reader_may_differ(), a.positional[0]);
    load_module_state(model, file, ckpt, "optim.");
  }

  Rng rng(cfg.train.seed);
  const int B = cfg.train.batch_size, T = cfg.model.block_size;
  Batch batch = data->train_batch(B, T, rng);
  Tensor logits = model.forward(batch.x, B, T, ForwardMode::eval());
  Tensor loss = Model::loss(logits, batch.y);
  loss.backward();

  const std::string out = a.get("out", "");
  make_dirs(out);
  nlohmann::json j = to_json(cfg);
  save_safetensors(out + "/weights.safetensors", module_state(model), {{"config", j.dump()}});
  std::vector<float> xf(batch.x.begin(), batch.x.end()), yf(batch.y.begin(), batch.y.end());
  save_safetensors(out + "/batch.safetensors",
                   {{"x", Tensor::from(Shape{B, T}, xf)}, {"y", Tensor::from(Shape{B, T}, yf)}});
  NamedTensors outputs = {{"logits", logits.detach()}, {"loss", loss.detach()}};
  for (const auto& p : model.parameters()) {
    Tensor g = p.tensor.has_grad() ? p.tensor.grad() : Tensor::zeros(p.tensor.shape());
    outputs.emplace_back("grad." + p.name, g);
  }
  save_safetensors(out + "/outputs.safetensors", outputs);
  std::printf("%s\nloss %.6f; wrote weights, batch and outputs (%zu gradients) to %s\n",
              describe_model(cfg, model.num_parameters()).c_str(), static_cast<double>(loss.item()),
              model.parameters().size(), out.c_str());
  return kExitOk;
}

}  // namespace sl

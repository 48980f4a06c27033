// `stacklab sample RUN_DIR [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]`:
// loads the run's last checkpoint and generates tokens autoregressively (the context is cropped
// to model.block_size).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/blas.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "nn/model.h"
#include "nn/weights.h"
#include "train/setup.h"

namespace sl {

int cmd_sample(const ArgList& argv) {
  Args a = parse_args("sample", argv, {"prompt", "tokens", "temperature", "top-k", "seed"}, {}, false);
  if (a.positional.size() != 1) throw Error("expected one RUN_DIR");
  const std::string dir = a.positional[0];
  Config cfg = load_run_config(dir);
  set_num_threads(1);  // one sequence at a time: more threads only add overhead
  auto data = make_data(cfg, cfg.data.source == SourceKind::Text ? dir + "/vocab.json" : "");
  Model model(cfg.model);
  const std::string ckpt = dir + "/checkpoints/latest.safetensors";
  load_module_state(model, load_safetensors(ckpt), ckpt, "optim.");

  const long long n = a.get_int("tokens", 200);
  const double temperature = a.get_double("temperature", 1.0);
  const long long top_k = a.get_int("top-k", 0);
  if (n < 0) throw Error("--tokens: must be >= 0");
  if (!(temperature > 0)) throw Error("--temperature: must be > 0");
  if (top_k < 0) throw Error("--top-k: must be >= 0 (0 = no limit)");
  Rng rng(static_cast<uint64_t>(a.get_int("seed", 0)));
  std::vector<int32_t> ids = a.has("prompt") ? data->encode(a.get("prompt", "")) : std::vector<int32_t>{};
  if (ids.empty()) ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(cfg.model.vocab_size))));
  const size_t prompt_len = ids.size();

  NoGradGuard no_grad;
  const int V = cfg.model.vocab_size;
  std::vector<double> p(static_cast<size_t>(V));
  for (long long i = 0; i < n; ++i) {
    const size_t T = std::min(ids.size(), static_cast<size_t>(cfg.model.block_size));
    std::vector<int32_t> ctx(ids.end() - static_cast<std::ptrdiff_t>(T), ids.end());
    Tensor logits = model.forward(ctx, 1, static_cast<int64_t>(T));
    const float* last = logits.data() + (T - 1) * static_cast<size_t>(V);
    double mx = -INFINITY;
    for (int v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(last[v]) / temperature);
    for (int v = 0; v < V; ++v) p[static_cast<size_t>(v)] = std::exp(static_cast<double>(last[v]) / temperature - mx);
    if (top_k > 0 && top_k < V) {
      std::vector<double> sorted = p;
      std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<double>());
      const double kth = sorted[static_cast<size_t>(top_k - 1)];
      for (auto& q : p)
        if (q < kth) q = 0.0;
    }
    double r = rng.uniform() * std::accumulate(p.begin(), p.end(), 0.0);
    int32_t next = V - 1;
    for (int v = 0; v < V; ++v) {
      r -= p[static_cast<size_t>(v)];
      if (r < 0) {
        next = v;
        break;
      }
    }
    ids.push_back(next);
  }
  std::printf("%s", data->decode(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(prompt_len))).c_str());
  std::printf("%s%s\n", cfg.data.source == SourceKind::Text ? "" : " | ",
              data->decode(std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(prompt_len), ids.end())).c_str());
  return kExitOk;
}

}  // namespace sl

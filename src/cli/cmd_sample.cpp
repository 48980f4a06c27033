// `stacklab sample RUN_DIR [--checkpoint best|latest|PATH] [--num-samples K] [--prompt TEXT]
// [--tokens N] [--temperature T] [--top-k K] [--seed S]`: loads a checkpoint of the run and
// generates tokens autoregressively (the context is cropped to model.block_size), printing each
// token as soon as it is drawn. Markov runs print "PROMPT | t1 t2 ...", text runs the text.
// A text run needs only its vocab.json (the ids it trained with), not its data file.
// The checkpoint is read through read_checkpoint_file, the integrity check `train --resume` uses,
// and must have been written with the run's config (check_checkpoint_config, as for a resume).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <numeric>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/blas.h"
#include "core/ops.h"
#include "core/rng.h"
#include "data/text.h"
#include "nn/model.h"
#include "nn/weights.h"
#include "train/checkpoint.h"
#include "train/resume.h"
#include "train/setup.h"
#include "train/trainer.h"
#include "util/error.h"

namespace sl {
namespace {

struct SampleOptions {
  long long tokens = 200, top_k = 0;
  double temperature = 1.0;
};

// "best" | "latest" | a path.
std::string checkpoint_path(const std::string& dir, const std::string& which) {
  const std::string path =
      which == "best" || which == "latest" ? dir + "/checkpoints/" + which + ".safetensors" : which;
  if (!std::filesystem::exists(path))
    throw Error("--checkpoint " + which + ": " + path + " not found" +
                (which == "best"
                     ? " (written at the first eval of runs made since best checkpoints exist)"
                     : ""));
  return path;
}

// Draws the next token from the model's last-position logits (temperature, then top-k).
int32_t draw_next(const Model& model, const std::vector<int32_t>& ids, const SampleOptions& o,
                  Rng& rng, std::vector<double>& p) {
  const ModelConfig& m = model.config();
  const size_t T = std::min(ids.size(), static_cast<size_t>(m.block_size));
  const std::vector<int32_t> ctx(ids.end() - static_cast<std::ptrdiff_t>(T), ids.end());
  Tensor logits = model.forward(ctx, 1, static_cast<int64_t>(T), ForwardMode::eval());  // (1, T, V)
  const int V = m.vocab_size;
  const float* last = logits.data() + (T - 1) * static_cast<size_t>(V);
  double mx = -std::numeric_limits<double>::infinity();
  for (int v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(last[v]) / o.temperature);
  for (int v = 0; v < V; ++v)
    p[static_cast<size_t>(v)] = std::exp(static_cast<double>(last[v]) / o.temperature - mx);
  if (o.top_k > 0 && o.top_k < V) {
    std::vector<double> sorted = p;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(),
                     std::greater<double>());
    const double kth = sorted[static_cast<size_t>(o.top_k - 1)];
    for (auto& q : p)
      if (q < kth) q = 0.0;
  }
  double r = rng.uniform() * std::accumulate(p.begin(), p.end(), 0.0);
  for (int v = 0; v < V; ++v) {
    r -= p[static_cast<size_t>(v)];
    if (r < 0) return v;
  }
  return V - 1;
}

// One sample, streamed: the prompt, then every token as it is drawn.
void stream_sample(const Model& model, const TokenCodec& data, bool text, std::vector<int32_t> ids,
                   const SampleOptions& o, Rng& rng) {
  std::vector<double> p(static_cast<size_t>(model.config().vocab_size));
  std::printf("%s%s", data.decode(ids).c_str(), text ? "" : " | ");
  std::fflush(stdout);
  // Whatever the source puts between two decoded tokens (a space between integer ids, nothing
  // between letters or characters), so the streamed line is the one decode() would give.
  const std::string two = data.decode({0, 0}), one = data.decode({0});
  const std::string sep = two.substr(one.size(), two.size() - 2 * one.size());
  for (long long i = 0; i < o.tokens; ++i) {
    const int32_t next = draw_next(model, ids, o, rng, p);
    ids.push_back(next);
    std::printf("%s%s", i == 0 ? "" : sep.c_str(), data.decode({next}).c_str());
    std::fflush(stdout);
  }
  std::printf("\n");
}

// How ids become text: a text run's saved vocabulary (its data file may be gone; sampling does
// not read it), or the synthetic source's integer ids. Sets cfg.model.vocab_size for text runs.
std::unique_ptr<TokenCodec> run_codec(Config& cfg, const std::string& dir) {
  if (cfg.data.source != SourceKind::Text) return make_data(cfg);
  const std::string vocab_path = dir + "/vocab.json";
  auto codec = std::make_unique<CharCodec>(TextSource::load_vocab(vocab_path), vocab_path);
  cfg.model.vocab_size = codec->size();  // a checkpoint of another size is refused below
  return codec;
}

}  // namespace

int cmd_sample(const ArgList& argv) {
  Args a = parse_args(
      "sample", argv,
      {"checkpoint", "num-samples", "prompt", "tokens", "temperature", "top-k", "seed"}, {}, false);
  if (a.positional.size() != 1) throw Error("expected one RUN_DIR");
  const std::string dir = a.positional[0];
  Config cfg = load_run_config(dir);
  SampleOptions o{a.get_int("tokens", 200), a.get_int("top-k", 0),
                  a.get_double("temperature", 1.0)};
  const long long samples = a.get_int("num-samples", 1);
  if (o.tokens < 0) throw Error("--tokens: must be >= 0");
  if (!(o.temperature > 0)) throw Error("--temperature: must be > 0");
  if (o.top_k < 0) throw Error("--top-k: must be >= 0 (0 = no limit)");
  if (samples < 1) throw Error("--num-samples: must be >= 1");
  set_num_threads(1);  // one sequence at a time: more threads only add overhead
  const bool text = cfg.data.source == SourceKind::Text;
  const std::unique_ptr<TokenCodec> data = run_codec(cfg, dir);
  Model model(cfg.model);
  const std::string ckpt = checkpoint_path(dir, a.get("checkpoint", "latest"));
  const TensorFile file = read_checkpoint_file(ckpt);
  // The weights run through the run's wiring only if they were trained with it: any difference
  // but where the run lies and how long it trains (what a resume may change) is refused.
  check_checkpoint_config(ckpt, checkpoint_metadata(file, ckpt, "config"), run_config_json(cfg),
                          reader_may_differ(), dir + "/config.json");
  load_module_state(model, file, ckpt, "optim.");

  Rng rng(static_cast<uint64_t>(a.get_int("seed", 0)));
  const std::vector<int32_t> prompt =
      a.has("prompt") ? data->encode(a.get("prompt", "")) : std::vector<int32_t>{};
  NoGradGuard no_grad;
  for (long long s = 0; s < samples; ++s) {
    std::vector<int32_t> ids = prompt;
    if (ids.empty())
      ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(cfg.model.vocab_size))));
    if (samples > 1 && s > 0) std::printf("---\n");
    stream_sample(model, *data, text, ids, o, rng);
  }
  return kExitOk;
}

}  // namespace sl

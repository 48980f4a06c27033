// `stacklab probe CONFIG [--seeds 0,1,2] [--out FILE] [--section.key=value ...]`: gradient flow
// at initialisation (no training): per-block gradient norms, the residual stream's RMS,
// gradient norm and rank ratio, each block's branch / stream ratio, per seed and averaged. Prints a
// table, writes JSON to FILE.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <system_error>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/blas.h"
#include "train/probe.h"
#include "train/setup.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

// "0,1,2" -> {0, 1, 2}, parsed as integers (every uint64 seed exactly, not rounded through float).
std::vector<uint64_t> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    const std::string s = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      throw Error(
          "--seeds: expected comma-separated non-negative integers (at most 2^64 - 1), got '" +
          item + "'");
    for (uint64_t seen : seeds)  // the same seed twice would be averaged as two
      if (seen == v) throw Error("--seeds: seed " + s + " appears twice in '" + text + "'");
    seeds.push_back(v);
  }
  if (seeds.empty())
    throw Error("--seeds: expected a comma-separated list of non-negative integers, got '" + text +
                "'");
  return seeds;
}

}  // namespace

int cmd_probe(const ArgList& argv) {
  Args a = parse_args("probe", argv, {"seeds", "out"}, {"quiet"}, true);
  if (a.positional.size() != 1) throw Error("expected one CONFIG file");
  Config cfg = load_config(a.positional[0], a.overrides);
  const std::vector<uint64_t> seeds = parse_seeds(a.get("seeds", "0,1,2"));
  if (cfg.train.threads > 0) blas_set_threads(cfg.train.threads);
  nlohmann::json r = run_probe(cfg, seeds);
  if (a.has("out")) write_file_atomic(a.get("out", ""), r.dump(1) + "\n");
  if (!a.has("quiet")) {
    std::printf("%s\n", describe_model(cfg, r["n_params"].get<int64_t>()).c_str());
    std::printf("probe over %zu seed%s: mean loss %.4f (ln V = %.4f)\n", seeds.size(),
                seeds.size() == 1 ? "" : "s", r["mean_loss"].get<double>(),
                r["reference_losses"]["uniform"].get<double>());
    const auto& m = r["mean"];
    std::printf("%6s %12s %12s %12s %10s %12s\n", "block", "grad_norm", "stream_grad", "act_rms",
                "rank_ratio", "branch_ratio");
    const size_t L = m["grad_norm"].size();
    auto num = [](const nlohmann::json& v) {
      return v.is_number() ? v.get<double>() : std::nan("");
    };
    for (size_t l = 0; l <= L; ++l) {
      if (l < L)
        std::printf("%6zu %12.4g", l,
                    num(m["grad_norm"][l]));  // blocks count from 0, as everywhere
      else
        std::printf("%6s %12s", "out", "");
      std::printf(" %12.4g %12.4g %10.4f", num(m["stream_grad_norm"][l]), num(m["act_rms"][l]),
                  num(m["rank_ratio"][l]));
      if (l < L)  // branch / stream (mean squares) of the block's sub-layers: a block's, not a
                  // boundary's, so none on the "out" row
        std::printf(" %12.4g", num(m["branch_ratio"][l]));
      std::printf("\n");
    }
    std::printf("first / last block (0 / %zu) gradient norm: %.4g\n", L - 1,
                num(r["ratio_first_last"]));
    if (a.has("out")) std::printf("wrote %s\n", a.get("out", "").c_str());
  }
  return kExitOk;
}

}  // namespace sl

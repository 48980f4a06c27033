// `stacklab probe CONFIG [--seeds 0,1,2] [--out FILE] [--section.key=value ...]`: gradient flow
// at initialisation (no training): per-block gradient norms, the residual stream's RMS,
// gradient norm and rank ratio, per seed and averaged. Prints a table, writes JSON to FILE.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "core/blas.h"
#include "core/error.h"
#include "core/fsutil.h"
#include "train/probe.h"
#include "train/setup.h"

namespace sl {

int cmd_probe(const ArgList& argv) {
  Args a = parse_args("probe", argv, {"seeds", "out"}, {"quiet"}, true);
  if (a.positional.size() != 1) throw Error("expected one CONFIG file");
  Config cfg = load_config(a.positional[0], a.overrides);
  std::vector<uint64_t> seeds;
  for (float s : parse_float_list("seeds", a.get("seeds", "0,1,2"))) {
    if (s < 0 || s != static_cast<float>(static_cast<uint64_t>(s))) throw Error("--seeds: expected non-negative integers");
    seeds.push_back(static_cast<uint64_t>(s));
  }
  if (cfg.train.threads > 0) blas_set_threads(cfg.train.threads);
  nlohmann::json r = run_probe(cfg, seeds);
  if (a.has("out")) write_file_atomic(a.get("out", ""), r.dump(1) + "\n");
  if (!a.has("quiet")) {
    std::printf("%s\n", describe_model(cfg, r["n_params"].get<int64_t>()).c_str());
    std::printf("probe over %zu seeds: mean loss %.4f (ln V = %.4f)\n", seeds.size(), r["mean_loss"].get<double>(),
                r["reference_losses"]["uniform"].get<double>());
    const auto& m = r["mean"];
    std::printf("%6s %12s %12s %12s %10s\n", "block", "grad_norm", "stream_grad", "act_rms", "rank_ratio");
    const size_t L = m["grad_norm"].size();
    auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : std::nan(""); };
    for (size_t l = 0; l <= L; ++l) {
      if (l < L)
        std::printf("%6zu %12.4g", l + 1, num(m["grad_norm"][l]));
      else
        std::printf("%6s %12s", "out", "");
      std::printf(" %12.4g %12.4g %10.4f\n", num(m["stream_grad_norm"][l + (l < L ? 0 : 0)]), num(m["act_rms"][l]),
                  num(m["rank_ratio"][l]));
    }
    std::printf("block 1 / block %zu gradient norm: %.4g\n", L, num(r["ratio_first_last"]));
    if (a.has("out")) std::printf("wrote %s\n", a.get("out", "").c_str());
  }
  return kExitOk;
}

}  // namespace sl

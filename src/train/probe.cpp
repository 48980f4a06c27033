// One forward/backward per seed, measured with layer_stats; every registered metric is reduced
// over seeds as its registry entry says (entry-wise mean, or left out).
#include "train/probe.h"

#include <cmath>

#include "core/fpmode.h"
#include "core/ops.h"
#include "nn/model.h"
#include "train/layer_stats.h"
#include "train/records.h"
#include "train/setup.h"

namespace sl {
namespace {

// Entry-wise mean of equally shaped arrays (null where any seed is non-finite).
nlohmann::json mean_arrays(const std::vector<nlohmann::json>& per_seed, const std::string& key) {
  if (per_seed.empty() || !per_seed[0][key].is_array()) return nullptr;
  const size_t n = per_seed[0][key].size();
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    double s = 0.0;
    bool ok = true;
    for (const auto& r : per_seed) {
      const auto& v = r[key][i];
      if (!v.is_number())
        ok = false;
      else
        s += v.get<double>();
    }
    out.push_back(ok ? nlohmann::json(s / static_cast<double>(per_seed.size()))
                     : nlohmann::json(nullptr));
  }
  return out;
}

}  // namespace

nlohmann::json run_probe(Config cfg, const std::vector<uint64_t>& seeds) {
  set_flush_subnormals(
      cfg.train.flush_subnormals);  // on the threads the caller set (core/fpmode.h)
  auto data = make_data(cfg);
  const int B = cfg.train.batch_size, T = cfg.model.block_size;
  const Batch batch = data->eval_batches(1, B, T, /*train_split=*/true).at(0);
  Model model(cfg.model);

  nlohmann::json result;
  result["config"] = to_json(cfg);
  result["derived"] = derived_json(cfg);
  result["n_params"] = model.num_parameters();
  result["reference_losses"] = to_json(data->reference_losses(T));
  result["seeds"] = nlohmann::json::array();
  std::vector<nlohmann::json> layers;
  double loss_sum = 0.0;
  for (uint64_t seed : seeds) {
    for (auto& p : model.parameters()) p.tensor.zero_grad();
    model.init_weights(seed);
    ForwardTrace trace;
    std::vector<double> stream_grads;
    Tensor loss = Model::loss(model.forward(batch.x, B, T, ForwardMode::eval(), &trace), batch.y);
    hook_stream_grads(trace, stream_grads);
    loss.backward();
    nlohmann::json rec =
        to_json(measure_layers(model, trace, stream_grads, {}), /*with_params=*/true);
    for (const LayerMetric& m : layer_metrics())
      if (m.probe == ProbeReduce::kSkip) rec.erase(m.name);
    loss_sum += static_cast<double>(loss.item());
    result["seeds"].push_back({{"seed", seed}, {"loss", loss.item()}, {"layers", rec}});
    layers.push_back(rec);
  }
  nlohmann::json mean = nlohmann::json::object();
  for (const LayerMetric& m : layer_metrics()) {
    switch (m.probe) {
      case ProbeReduce::kMean:
        mean[m.name] = mean_arrays(layers, m.name);
        break;
      case ProbeReduce::kSkip:
        break;
    }
  }
  result["mean"] = mean;
  result["layer_metrics"] = layer_metrics_json();
  result["mean_loss"] = seeds.empty()
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(loss_sum / static_cast<double>(seeds.size()));
  const auto& g = mean["grad_norm"];
  const bool ok = g.is_array() && !g.empty() && g.front().is_number() && g.back().is_number() &&
                  g.back().get<double>() > 0;
  result["ratio_first_last"] = ok ? nlohmann::json(g.front().get<double>() / g.back().get<double>())
                                  : nlohmann::json(nullptr);
  return checked_fields(result, probe_fields(), "probe output");
}

}  // namespace sl

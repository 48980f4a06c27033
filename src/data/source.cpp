// The DataSource defaults (integer decode/encode, no context-length limit) and the factory
// that turns the data.* config fields into a source.
#include "data/source.h"

#include <cmath>
#include <sstream>

#include "data/markov.h"
#include "data/text.h"
#include "util/error.h"

namespace sl {

nlohmann::json to_json(const ReferenceLosses& r) {
  nlohmann::json j = {{"uniform", r.uniform}, {"unigram", r.unigram}};
  j["optimal"] = r.optimal_known ? nlohmann::json(r.optimal) : nlohmann::json(nullptr);
  for (const auto& [key, v] :
       {std::pair{"unigram_on_val", r.unigram_on_val}, std::pair{"bigram_on_val", r.bigram_on_val},
        std::pair{"optimum_on_val", r.optimum_on_val}})
    if (v) j[key] = std::isfinite(*v) ? nlohmann::json(*v) : nullptr;
  if (!r.optimum_on_val && !r.optimum_on_val_note.empty()) {
    j["optimum_on_val"] = nullptr;
    j["optimum_on_val_note"] = r.optimum_on_val_note;
  }
  return j;
}

double unigram_loss_on(const std::vector<Batch>& batches, const std::vector<double>& probs) {
  double sum = 0.0;
  size_t n = 0;
  for (const Batch& b : batches)
    for (int32_t y : b.y) {
      SL_CHECK(y >= 0 && static_cast<size_t>(y) < probs.size(), "unigram_loss_on: token id");
      sum -= std::log(probs[static_cast<size_t>(y)]);  // +inf for a symbol of probability 0
      ++n;
    }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

double bigram_probs_loss_on(const std::vector<Batch>& batches, const std::vector<double>& probs) {
  const auto V = static_cast<size_t>(std::llround(std::sqrt(static_cast<double>(probs.size()))));
  SL_CHECK(V * V == probs.size() && V > 0, "bigram_probs_loss_on: probs is not (V, V)");
  double sum = 0.0;
  size_t n = 0;
  for (const Batch& b : batches)
    for (size_t i = 0; i < b.y.size(); ++i) {
      const auto x = static_cast<size_t>(b.x[i]), y = static_cast<size_t>(b.y[i]);
      SL_CHECK(x < V && y < V, "bigram_probs_loss_on: token id");
      sum -= std::log(probs[x * V + y]);  // +inf for a pair of probability 0
      ++n;
    }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

void measure_on_batches(ReferenceLosses& refs, const DataSource& source,
                        const std::vector<Batch>& batches) {
  refs.unigram_on_val = unigram_loss_on(batches, source.unigram_probs());
  refs.bigram_on_val = source.bigram_loss_on(batches);
  refs.optimum_on_val = source.optimum_loss_on(batches);
  refs.optimum_on_val_note = refs.optimum_on_val ? "" : source.optimum_unknown_reason();
}

void check_batch_args(const char* who, int n, int B, int T) {
  if (n < 1 || B < 1 || T < 1)
    throw Error(std::string(who) +
                ": batch count, batch size B and context length T must be "
                "positive, got n=" +
                std::to_string(n) + " B=" + std::to_string(B) + " T=" + std::to_string(T));
}

void DataSource::check_context_length(int T) const {
  if (T < 1) throw Error("block_size must be >= 1, got " + std::to_string(T));
}

std::string DataSource::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      throw Error("decode: token id " + std::to_string(ids[i]) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size()) + ")");
    if (i) s.push_back(' ');
    s += std::to_string(ids[i]);
  }
  return s;
}

std::vector<int32_t> DataSource::encode(const std::string& text) const {
  std::istringstream in(text);
  std::vector<int32_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    long v = -1;
    try {
      v = std::stol(word, &used);
    } catch (const std::logic_error&) {  // not a number, or out of range: named below
      used = 0;
    }
    if (used != word.size() || v < 0 || v >= vocab_size())
      throw Error("encode: '" + word + "' is not a token id in [0, " +
                  std::to_string(vocab_size()) + "); give ids separated by spaces");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

std::unique_ptr<DataSource> make_data_source(const std::string& source, int vocab_size, int order,
                                             double alpha, uint64_t seed, const std::string& path,
                                             double val_fraction, const std::string& vocab_path) {
  if (source == "markov") return std::make_unique<MarkovSource>(vocab_size, order, alpha, seed);
  if (source == "text") {
    if (path.empty())
      throw Error("data.path: the text source needs a file, e.g. --data.path=data/corpus.txt");
    if (!vocab_path.empty())
      return std::make_unique<TextSource>(path, val_fraction, seed,
                                          TextSource::load_vocab(vocab_path));
    return std::make_unique<TextSource>(path, val_fraction, seed);
  }
  throw Error("data.source: unknown source '" + source + "'; expected \"markov\" or \"text\"");
}

}  // namespace sl

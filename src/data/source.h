// DataSource: where training tokens come from, behind one interface the trainer uses.
// A source hands out (B, T) batches of next-token pairs, a fixed set of eval batches, and the
// reference losses (uniform, unigram, optimal) that a run's loss curve is read against.
// It is not a tokenizer library and not a loader of binary shards: sources are small and in memory.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.h"

namespace sl {

// x, y: (B, T) row-major token ids; y[b, t] is the token that follows x[b, t].
struct Batch {
  int B = 0, T = 0;
  std::vector<int32_t> x, y;
};

// Losses in nats per token for a model that predicts x[t+1] from x[0..t], t = 0..T-1.
// uniform = ln V; unigram = entropy of the symbol marginal; optimal = the best achievable
// average loss at context length T (known exactly only for synthetic sources).
// unigram_on_val: the loss of that unigram predictor (the source's symbol marginal; a text's
// training-split frequencies) on one run's validation batches, the batches its val_loss is
// measured on, so the two compare on the same tokens (unigram_on_val_batches); absent where no
// batches were given, infinite (null in JSON) when a validation token has probability 0.
// bigram_on_val: the same for the bigram predictor (the next symbol from the current one only,
// DataSource::bigram_loss_on); optimum_on_val: the source's own conditional probabilities on those
// batches (optimum_loss_on()), unknown for text: then optimum_on_val_note says why. These three are
// the lines of a run's milestones (train/milestones.h).
struct ReferenceLosses {
  double uniform = 0.0;
  double unigram = 0.0;
  double optimal = 0.0;
  bool optimal_known = false;
  std::optional<double> unigram_on_val;
  std::optional<double> bigram_on_val;
  std::optional<double> optimum_on_val;
  std::string optimum_on_val_note;  // why optimum_on_val is unknown although measured on batches
};

// optimal is null when not known; unigram_on_val and bigram_on_val are written only when set
// (null if infinite); optimum_on_val when set, or as null beside optimum_on_val_note.
nlohmann::json to_json(const ReferenceLosses& r);

// Text <-> token ids: what sampling needs of a data source (and all that a text run's saved
// vocabulary gives, data/text.h CharCodec).
class TokenCodec {
 public:
  virtual ~TokenCodec() = default;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
};

// Mean over every target y of `batches` of -ln probs[y]: the unigram predictor's loss on them.
double unigram_loss_on(const std::vector<Batch>& batches, const std::vector<double>& probs);

// Mean over every pair (x, y) of `batches` of -ln probs[x * V + y], `probs` (V, V) row-stochastic
// (row: the current symbol): the bigram predictor's loss on them. V = the rows' length.
double bigram_probs_loss_on(const std::vector<Batch>& batches, const std::vector<double>& probs);

class DataSource : public TokenCodec {
 public:
  virtual int vocab_size() const = 0;

  // Draws with the caller's rng (the trainer's, saved in checkpoints), so a resumed run
  // sees exactly the batches the uninterrupted run would have seen.
  virtual Batch train_batch(int B, int T, Rng& rng) = 0;

  // The same n batches on every call: seeded from the source's own seed and the split,
  // never from the training rng. train_split=false gives the held-out split.
  virtual std::vector<Batch> eval_batches(int n, int B, int T, bool train_split) = 0;

  virtual ReferenceLosses reference_losses(int T) const = 0;

  // (V,) the probabilities the unigram predictor of reference_losses().unigram gives each symbol.
  virtual std::vector<double> unigram_probs() const = 0;

  // The bigram predictor's loss on `batches`: each target from the symbol before it alone, by
  // q(b | a) (a Markov chain's stationary pair distribution; a text's training-split pairs).
  virtual double bigram_loss_on(const std::vector<Batch>& batches) const = 0;

  // The loss of the best predictor there is (the source's own conditional probabilities) on
  // `batches`, each row a sequence as eval_batches draws it; nullopt when the source does not
  // know its probabilities, with optimum_unknown_reason() saying so.
  virtual std::optional<double> optimum_loss_on(const std::vector<Batch>& batches) const {
    (void)batches;
    return std::nullopt;
  }
  virtual std::string optimum_unknown_reason() const {
    return "the data source does not know its probabilities";
  }

  // Source name, parameters, vocab size and T-independent reference losses, for logs.
  virtual nlohmann::json describe() const = 0;

  // Throws sl::Error if batches of context length T cannot be drawn (e.g. text too short).
  // Call once at startup so a bad block_size fails before training, not at the first eval.
  virtual void check_context_length(int T) const;

  // Default: ids as space-separated integers, and back (ids checked against vocab_size()).
  std::string decode(const std::vector<int32_t>& ids) const override;
  std::vector<int32_t> encode(const std::string& text) const override;
};

// unigram_on_val, bigram_on_val and optimum_on_val (or its note) of `refs`, measured on `batches`
// (a run's val batches) with `source`'s predictors.
void measure_on_batches(ReferenceLosses& refs, const DataSource& source,
                        const std::vector<Batch>& batches);

// source: "markov" (uses vocab_size, order, alpha, seed) or "text" (uses path, val_fraction,
// seed; the vocabulary comes from the file, or from vocab_path when resuming a run).
// Unknown names and out-of-range parameters throw sl::Error naming the data.* field.
std::unique_ptr<DataSource> make_data_source(const std::string& source, int vocab_size, int order,
                                             double alpha, uint64_t seed, const std::string& path,
                                             double val_fraction,
                                             const std::string& vocab_path = "");

// Shared by the sources: checks B, T, n are positive, naming the caller.
void check_batch_args(const char* who, int n, int B, int T);

}  // namespace sl

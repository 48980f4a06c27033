// MarkovSource: a random order-k Markov chain over V symbols whose losses are known exactly.
// Each of the V^k context rows is a Dirichlet(alpha) draw; sequences start from the stationary
// k-gram distribution, so the optimal loss at context length T can be computed in closed form
// and a model's loss curve read against it. Not a language model: there is no text here.
#pragma once
#include <cstdint>
#include <vector>

#include "data/source.h"

namespace sl {

class MarkovSource : public DataSource {
 public:
  // vocab_size in [2, 1024], order in [1, 3], alpha > 0, V^(order+1) <= 2^24.
  // Throws sl::Error naming data.vocab_size / data.order / data.alpha otherwise.
  MarkovSource(int vocab_size, int order, double alpha, uint64_t seed);

  int vocab_size() const override { return V_; }
  Batch train_batch(int B, int T, Rng& rng) override;
  std::vector<Batch> eval_batches(int n, int B, int T, bool train_split) override;
  ReferenceLosses reference_losses(int T) const override;
  std::vector<double> unigram_probs() const override { return unigram(); }
  double bigram_loss_on(const std::vector<Batch>& batches) const override {
    return bigram_probs_loss_on(batches, bigram_probs());
  }
  // Each row of a batch is a stationary sequence from its start (make_batch): its first k - 1
  // targets are predicted from the stationary m-gram marginals, the rest from the transitions.
  std::optional<double> optimum_loss_on(const std::vector<Batch>& batches) const override;
  nlohmann::json describe() const override;
  std::string decode(const std::vector<int32_t>& ids) const override;  // letters if V <= 26
  std::vector<int32_t> encode(const std::string& text) const override;

  int order() const { return k_; }
  int num_contexts() const { return C_; }
  // Context index of the k symbols s[0..k-1] (oldest first): a base-V number, oldest most
  // significant, so the next context after symbol v is (c * V + v) mod V^k.
  int context_of(const int32_t* last_k) const;
  const std::vector<double>& transitions() const { return P_; }  // (C, V) row-stochastic
  const std::vector<double>& stationary() const { return pi_; }  // (C,) over k-grams
  std::vector<double> unigram() const;                           // (V,) symbol marginal
  // (V, V) [a * V + b] = q(b | a), the stationary pair distribution's conditional (order 1: the
  // transition table itself).
  std::vector<double> bigram_probs() const;
  double entropy_rate() const { return entropy_rate_; }  // H(X_t | previous k), nats
  double unigram_entropy() const { return block_entropy_[1]; }
  double block_entropy(int m) const;  // H(X_0..X_{m-1}) for m in [0, k], nats

  // A stationary sequence of n symbols drawn with rng.
  std::vector<int32_t> sample_sequence(int n, Rng& rng) const;

 private:
  void draw_transitions(uint64_t seed);
  void compute_stationary();
  void compute_entropies();
  uint64_t eval_seed(bool train_split) const;
  Batch make_batch(int B, int T, Rng& rng) const;

  int V_, k_, C_;
  double alpha_;
  uint64_t seed_;
  std::vector<double> P_;              // (C, V) transition rows
  std::vector<double> pi_;             // (C,) stationary k-gram distribution
  std::vector<double> pi_cdf_;         // (C,) running sum of pi_, for drawing start contexts
  std::vector<double> block_entropy_;  // (k + 1,) H of m-gram marginals, m = 0..k
  std::vector<std::vector<double>> gram_marginals_;  // [m]: (V^m,) stationary m-gram, m = 0..k
  double entropy_rate_ = 0.0;
  int power_iterations_ = 0;
};

}  // namespace sl

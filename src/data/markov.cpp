// MarkovSource: Dirichlet transition rows, stationary k-gram distribution by power iteration,
// exact block entropies and entropy rate, and batch sampling.
// The k-gram chain moves context c to (c * V + v) mod V^k with probability P[c, v], so one
// power-iteration step is a pass over the (C, V) table: O(V^(k+1)), ~1M for V = 32, k = 3.
#include "data/markov.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "util/error.h"

namespace sl {
namespace {

double entropy_of(const double* p, size_t n) {
  double h = 0.0;
  for (size_t i = 0; i < n; ++i)
    if (p[i] > 0.0) h -= p[i] * std::log(p[i]);
  return h;
}

int int_pow(int base, int exp) {
  int r = 1;
  for (int i = 0; i < exp; ++i) r *= base;
  return r;
}

}  // namespace

MarkovSource::MarkovSource(int vocab_size, int order, double alpha, uint64_t seed)
    : V_(vocab_size), k_(order), C_(0), alpha_(alpha), seed_(seed) {
  if (vocab_size < 2 || vocab_size > 1024)
    throw Error("model.vocab_size: markov source needs 2 to 1024 symbols, got " +
                std::to_string(vocab_size));
  if (order < 1 || order > 3)
    throw Error("data.order: markov order must be 1, 2 or 3, got " + std::to_string(order));
  if (!(alpha > 0.0) || !std::isfinite(alpha))
    throw Error("data.alpha: Dirichlet concentration must be a positive number, got " +
                std::to_string(alpha));
  const double table = std::pow(static_cast<double>(vocab_size), order + 1);
  if (table > static_cast<double>(1 << 24))
    throw Error("model.vocab_size, data.order: V^(order+1) = " + std::to_string(table) +
                " transition entries is more than the 2^24 allowed; lower one of them");
  C_ = int_pow(V_, k_);
  draw_transitions(seed);
  compute_stationary();
  compute_entropies();
}

void MarkovSource::draw_transitions(uint64_t seed) {
  Rng rng(seed);
  P_.assign(static_cast<size_t>(C_) * static_cast<size_t>(V_), 0.0);
  for (int c = 0; c < C_; ++c) {
    double* row = &P_[static_cast<size_t>(c) * static_cast<size_t>(V_)];
    double sum = 0.0;
    for (int v = 0; v < V_; ++v) {
      // A floor keeps every transition possible (irreducible, aperiodic chain) even when a
      // tiny alpha makes Gamma draws underflow; it is far below anything observable.
      row[v] = std::max(rng.gamma(alpha_), 1e-300);
      sum += row[v];
    }
    for (int v = 0; v < V_; ++v) row[v] /= sum;
  }
}

void MarkovSource::compute_stationary() {
  const size_t C = static_cast<size_t>(C_), V = static_cast<size_t>(V_);
  const size_t shift_mod = C / V;  // V^(k-1): dropping the oldest symbol of a context
  std::vector<double> pi(C, 1.0 / static_cast<double>(C)), next(C);
  constexpr int kPlainIters = 2000, kMaxIters = 20000;
  constexpr double kTol = 1e-13;
  double diff = 1.0;
  int it = 0;
  for (; it < kMaxIters && diff > kTol; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    for (size_t c = 0; c < C; ++c) {
      const double w = pi[c];
      const double* row = &P_[c * V];
      double* dst = &next[(c % shift_mod) * V];
      for (size_t v = 0; v < V; ++v) dst[v] += w * row[v];
    }
    // Near-periodic chains (tiny alpha) can oscillate; after kPlainIters switch to the lazy
    // chain (I + P) / 2, which has the same stationary distribution and cannot oscillate.
    const double mix = it < kPlainIters ? 1.0 : 0.5;
    double sum = 0.0;
    for (size_t c = 0; c < C; ++c) {
      next[c] = mix * next[c] + (1.0 - mix) * pi[c];
      sum += next[c];
    }
    diff = 0.0;
    for (size_t c = 0; c < C; ++c) {
      next[c] /= sum;
      diff += std::fabs(next[c] - pi[c]);
    }
    pi.swap(next);
  }
  if (diff > kTol)
    throw Error("data.alpha: the markov chain with alpha=" + std::to_string(alpha_) +
                " mixes too slowly to find its stationary distribution in " +
                std::to_string(kMaxIters) + " steps; use a larger data.alpha");
  power_iterations_ = it;
  pi_ = std::move(pi);
  pi_cdf_.resize(C);
  double run = 0.0;
  for (size_t c = 0; c < C; ++c) pi_cdf_[c] = (run += pi_[c]);
}

void MarkovSource::compute_entropies() {
  // H(X_0..X_{m-1}) from the m-gram marginal: the first m symbols of a context are c / V^(k-m).
  block_entropy_.assign(static_cast<size_t>(k_) + 1, 0.0);
  gram_marginals_.assign(static_cast<size_t>(k_) + 1, std::vector<double>{1.0});
  for (int m = 1; m <= k_; ++m) {
    const int drop = int_pow(V_, k_ - m);
    std::vector<double>& marg = gram_marginals_[static_cast<size_t>(m)];
    marg.assign(static_cast<size_t>(int_pow(V_, m)), 0.0);
    for (int c = 0; c < C_; ++c) marg[static_cast<size_t>(c / drop)] += pi_[static_cast<size_t>(c)];
    block_entropy_[static_cast<size_t>(m)] = entropy_of(marg.data(), marg.size());
  }
  entropy_rate_ = 0.0;
  for (int c = 0; c < C_; ++c)
    entropy_rate_ +=
        pi_[static_cast<size_t>(c)] *
        entropy_of(&P_[static_cast<size_t>(c) * static_cast<size_t>(V_)], static_cast<size_t>(V_));
}

std::vector<double> MarkovSource::unigram() const {
  const int drop = int_pow(V_, k_ - 1);
  std::vector<double> p(static_cast<size_t>(V_), 0.0);
  for (int c = 0; c < C_; ++c) p[static_cast<size_t>(c / drop)] += pi_[static_cast<size_t>(c)];
  return p;
}

std::vector<double> MarkovSource::bigram_probs() const {
  if (k_ == 1) return P_;  // the pair (a, b) has probability pi[a] P[a, b]: q(b | a) = P[a, b]
  // The pair marginal (V^2,) is the stationary 2-gram of the chain at any position; each row is
  // normalised by its own sum, so it is stochastic to the last bit.
  std::vector<double> q = gram_marginals_[2];
  const auto V = static_cast<size_t>(V_);
  for (size_t a = 0; a < V; ++a) {
    double row = 0.0;
    for (size_t b = 0; b < V; ++b) row += q[a * V + b];
    for (size_t b = 0; b < V; ++b) q[a * V + b] /= row;
  }
  return q;
}

std::optional<double> MarkovSource::optimum_loss_on(const std::vector<Batch>& batches) const {
  const auto V = static_cast<size_t>(V_);
  double sum = 0.0;
  size_t n = 0;
  for (const Batch& b : batches)
    for (int r = 0; r < b.B; ++r) {
      const int32_t* x = &b.x[static_cast<size_t>(r) * static_cast<size_t>(b.T)];  // (T,)
      const int32_t* y = &b.y[static_cast<size_t>(r) * static_cast<size_t>(b.T)];  // (T,)
      size_t prefix = 0;  // base-V number of x[0..t], while t + 1 < k
      for (int t = 0; t < b.T; ++t, ++n) {
        SL_CHECK(x[t] >= 0 && x[t] < V_ && y[t] >= 0 && y[t] < V_,
                 "optimum_loss_on: token id out of range");
        double p;
        if (t + 1 >= k_) {  // a full context: the transition row of x[t-k+1..t]
          p = P_[static_cast<size_t>(context_of(x + t + 1 - k_)) * V + static_cast<size_t>(y[t])];
        } else {  // the start of a stationary sequence: m-gram over (m-1)-gram, m = t + 2
          prefix = prefix * V + static_cast<size_t>(x[t]);
          const double joint =
              gram_marginals_[static_cast<size_t>(t) + 2][prefix * V + static_cast<size_t>(y[t])];
          p = joint / gram_marginals_[static_cast<size_t>(t) + 1][prefix];
        }
        sum -= std::log(p);
      }
    }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

double MarkovSource::block_entropy(int m) const {
  SL_CHECK(m >= 0 && m <= k_, "block_entropy: m out of [0, order]");
  return block_entropy_[static_cast<size_t>(m)];
}

int MarkovSource::context_of(const int32_t* last_k) const {
  int c = 0;
  for (int i = 0; i < k_; ++i) {
    SL_CHECK(last_k[i] >= 0 && last_k[i] < V_, "context_of: symbol out of range");
    c = c * V_ + last_k[i];
  }
  return c;
}

std::vector<int32_t> MarkovSource::sample_sequence(int n, Rng& rng) const {
  SL_CHECK(n >= 0, "sample_sequence: negative length");
  std::vector<int32_t> seq;
  seq.reserve(static_cast<size_t>(n));
  const double u0 = rng.uniform() * pi_cdf_.back();
  int c = static_cast<int>(std::upper_bound(pi_cdf_.begin(), pi_cdf_.end(), u0) - pi_cdf_.begin());
  c = std::min(c, C_ - 1);
  int place = int_pow(V_, k_ - 1);
  for (int i = 0; i < k_ && static_cast<int>(seq.size()) < n; ++i, place /= V_)  // oldest first
    seq.push_back((c / place) % V_);
  while (static_cast<int>(seq.size()) < n) {
    const double* row = &P_[static_cast<size_t>(c) * static_cast<size_t>(V_)];
    double u = rng.uniform();
    int v = 0;
    for (; v < V_ - 1; ++v) {
      u -= row[v];
      if (u < 0.0) break;
    }
    seq.push_back(v);
    c = (c * V_ + v) % C_;
  }
  return seq;
}

Batch MarkovSource::make_batch(int B, int T, Rng& rng) const {
  Batch batch;
  batch.B = B;
  batch.T = T;
  const size_t N = static_cast<size_t>(B) * static_cast<size_t>(T);
  batch.x.resize(N);  // (B, T)
  batch.y.resize(N);  // (B, T)
  for (int b = 0; b < B; ++b) {
    const std::vector<int32_t> seq = sample_sequence(T + 1, rng);
    const size_t off = static_cast<size_t>(b) * static_cast<size_t>(T);
    std::copy(seq.begin(), seq.end() - 1, batch.x.begin() + static_cast<ptrdiff_t>(off));
    std::copy(seq.begin() + 1, seq.end(), batch.y.begin() + static_cast<ptrdiff_t>(off));
  }
  return batch;
}

Batch MarkovSource::train_batch(int B, int T, Rng& rng) {
  check_batch_args("markov train_batch", 1, B, T);
  return make_batch(B, T, rng);
}

uint64_t MarkovSource::eval_seed(bool train_split) const {
  // Distinct from the transition stream Rng(seed) and between the two splits.
  return seed_ ^ (train_split ? 0x7a41e5a1b0c3d2e1ULL : 0x3c9d0f6e8b2a4715ULL);
}

std::vector<Batch> MarkovSource::eval_batches(int n, int B, int T, bool train_split) {
  check_batch_args("markov eval_batches", n, B, T);
  Rng rng(eval_seed(train_split));
  std::vector<Batch> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(make_batch(B, T, rng));
  return out;
}

ReferenceLosses MarkovSource::reference_losses(int T) const {
  if (T < 1)
    throw Error("reference_losses: context length T must be >= 1, got " + std::to_string(T));
  ReferenceLosses r;
  r.uniform = std::log(static_cast<double>(V_));
  r.unigram = block_entropy_[1];
  double sum = 0.0;
  for (int t = 0; t < T; ++t) {  // loss of predicting x[t+1] from x[0..t]
    sum += (t + 1 < k_) ? block_entropy_[static_cast<size_t>(t) + 2] -
                              block_entropy_[static_cast<size_t>(t) + 1]
                        : entropy_rate_;
  }
  r.optimal = sum / T;
  r.optimal_known = true;
  return r;
}

nlohmann::json MarkovSource::describe() const {
  return {{"source", "markov"},
          {"vocab_size", V_},
          {"order", k_},
          {"alpha", alpha_},
          {"seed", seed_},
          {"contexts", C_},
          {"power_iterations", power_iterations_},
          {"uniform", std::log(static_cast<double>(V_))},
          {"unigram", block_entropy_[1]},
          {"entropy_rate", entropy_rate_},
          {"block_entropies", block_entropy_}};
}

std::string MarkovSource::decode(const std::vector<int32_t>& ids) const {
  if (V_ > 26) return DataSource::decode(ids);
  std::string s;
  for (int32_t id : ids) {
    if (id < 0 || id >= V_)
      throw Error("decode: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(V_) + ")");
    s.push_back(static_cast<char>('a' + id));
  }
  return s;
}

std::vector<int32_t> MarkovSource::encode(const std::string& text) const {
  if (V_ > 26) return DataSource::encode(text);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (std::isspace(ch)) continue;
    if (ch < 'a' || ch >= 'a' + V_)
      throw Error("encode: character '" + std::string(1, text[i]) + "' at offset " +
                  std::to_string(i) + " is not a symbol of this markov source (letters a.." +
                  std::string(1, static_cast<char>('a' + V_ - 1)) + ")");
    ids.push_back(ch - 'a');
  }
  return ids;
}

}  // namespace sl

// TextSource: character-level tokens from any UTF-8 file; the vocabulary is the file's sorted
// set of Unicode code points (or a saved vocabulary, when a run is resumed).
// The first (1 - val_fraction) of the characters are the train split, the rest the val split.
// CharCodec: a vocabulary alone (text <-> ids), all that sampling a run needs (its vocab.json).
// Not a subword tokenizer: one token per code point, no normalisation.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/source.h"

namespace sl {

// The largest data.path file read (1 GiB): a text of that size takes about 9 times as much memory
// (its bytes, then 4 bytes per character twice). Anything but a regular file (a FIFO, /dev/zero,
// a device) is refused too, before it is opened: util/fsutil.h check_regular_file.
constexpr std::uint64_t kMaxTextBytes = 1ull << 30;

// Text <-> ids through a sorted, unique vocabulary of code points (id = index).
class CharCodec : public TokenCodec {
 public:
  CharCodec() = default;
  // `origin` names where the vocabulary came from in errors ("'data/corpus.txt'"). Throws
  // sl::Error for an empty, unsorted or non-Unicode vocabulary.
  CharCodec(std::vector<char32_t> vocab, std::string origin);

  int size() const { return static_cast<int>(vocab_.size()); }
  const std::vector<char32_t>& vocab() const { return vocab_; }
  int32_t id_of(char32_t cp) const;  // -1 when not in the vocabulary
  std::string decode(const std::vector<int32_t>& ids) const override;
  std::vector<int32_t> encode(const std::string& text) const override;

 private:
  std::vector<char32_t> vocab_;                  // (V,) sorted code points; id = index
  std::unordered_map<char32_t, int32_t> id_of_;  // code point -> id
  std::string origin_;
};

class TextSource : public DataSource {
 public:
  // Reads `path`, builds the vocabulary from all of its characters. Throws sl::Error naming
  // the path for a missing, empty, non-UTF-8, non-regular or too large (kMaxTextBytes) file,
  // and data.val_fraction if not in (0, 1).
  TextSource(const std::string& path, double val_fraction, uint64_t seed);
  // Same, with a given vocabulary (sorted, unique); a character of the file that is not in it
  // is an error naming the character and its byte offset.
  TextSource(const std::string& path, double val_fraction, uint64_t seed,
             std::vector<char32_t> vocab);

  // Vocabulary files: {"format": "stacklab.char_vocab", "version": 1, "code_points": [...]}.
  void save_vocab(const std::string& path) const;
  static std::vector<char32_t> load_vocab(const std::string& path);

  int vocab_size() const override { return codec_.size(); }
  Batch train_batch(int B, int T, Rng& rng) override;
  std::vector<Batch> eval_batches(int n, int B, int T, bool train_split) override;
  ReferenceLosses reference_losses(int T) const override;  // optimal unknown
  std::vector<double> unigram_probs() const override { return unigram_probs_; }
  // The training split's pair counts, smoothed toward the unigram by one pseudo-count:
  // q(b | a) = (n(a, b) + u(b)) / (n(a) + 1), so a pair the split never shows costs a finite loss
  // (infinite only where the unigram is: a symbol absent from the training split).
  double bigram_loss_on(const std::vector<Batch>& batches) const override;
  std::string optimum_unknown_reason() const override {
    return "a text source's own probabilities are unknown: no optimum";
  }
  nlohmann::json describe() const override;
  void check_context_length(int T) const override;
  std::string decode(const std::vector<int32_t>& ids) const override { return codec_.decode(ids); }
  std::vector<int32_t> encode(const std::string& text) const override {
    return codec_.encode(text);
  }

  const std::vector<char32_t>& vocab() const { return codec_.vocab(); }
  size_t train_size() const { return n_train_; }  // characters in the train split
  size_t val_size() const { return tokens_.size() - n_train_; }

 private:
  void load(const std::string& path, std::vector<char32_t> vocab);
  Batch batch_from(const int32_t* split, size_t split_len, int B, int T, Rng& rng) const;
  uint64_t eval_seed(bool train_split) const;

  std::string path_;
  double val_fraction_;
  uint64_t seed_;
  CharCodec codec_;
  std::vector<int32_t> tokens_;        // (N,) the whole file as ids
  size_t n_train_ = 0;                 // train = tokens_[0, n_train_), val = the rest
  double unigram_ = 0.0;               // entropy of train-split char frequencies
  std::vector<double> unigram_probs_;  // (V,) train-split char frequencies
};

}  // namespace sl

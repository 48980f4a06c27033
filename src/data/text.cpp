// TextSource: file reading and validation, vocabulary build/save/load, the train/val split,
// and batches of random windows (train: caller's rng; eval: an rng seeded from the source seed).
#include "data/text.h"

#include "util/json_read.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/utf8.h"
#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

constexpr const char* kVocabFormat = "stacklab.char_vocab";
constexpr std::uint64_t kMaxVocabBytes = 64ull << 20;  // 1.1M code points fit in a few MiB

void check_vocab(const std::vector<char32_t>& vocab, const std::string& what) {
  if (vocab.empty()) throw Error(what + ": vocabulary is empty");
  for (size_t i = 0; i < vocab.size(); ++i) {
    const char32_t cp = vocab[i];
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      throw Error(what + ": code_points[" + std::to_string(i) + "] = " +
                  std::to_string(static_cast<uint32_t>(cp)) + " is not a Unicode scalar value");
    if (i > 0 && vocab[i - 1] >= cp)
      throw Error(what + ": code_points must be sorted and unique (index " + std::to_string(i) +
                  ")");
  }
}

}  // namespace

CharCodec::CharCodec(std::vector<char32_t> vocab, std::string origin)
    : vocab_(std::move(vocab)), origin_(std::move(origin)) {
  check_vocab(vocab_, "vocabulary of " + origin_);
  for (size_t i = 0; i < vocab_.size(); ++i) id_of_[vocab_[i]] = static_cast<int32_t>(i);
}

int32_t CharCodec::id_of(char32_t cp) const {
  const auto it = id_of_.find(cp);
  return it == id_of_.end() ? -1 : it->second;
}

std::string CharCodec::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= vocab_.size())
      throw Error("decode: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_.size()) + ")");
    utf8_append(s, vocab_[static_cast<size_t>(id)]);
  }
  return s;
}

std::vector<int32_t> CharCodec::encode(const std::string& text) const {
  const std::vector<char32_t> cps = utf8_decode(text, "encode input");
  std::vector<int32_t> ids;
  ids.reserve(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const int32_t id = id_of(cps[i]);
    if (id < 0)
      throw Error("encode: character " + describe_code_point(cps[i]) + " at index " +
                  std::to_string(i) + " of the input (counting from 0) is not in the vocabulary (" +
                  std::to_string(vocab_.size()) + " characters, from " + origin_ + ")");
    ids.push_back(id);
  }
  return ids;
}

TextSource::TextSource(const std::string& path, double val_fraction, uint64_t seed)
    : path_(path), val_fraction_(val_fraction), seed_(seed) {
  load(path, {});
}

TextSource::TextSource(const std::string& path, double val_fraction, uint64_t seed,
                       std::vector<char32_t> vocab)
    : path_(path), val_fraction_(val_fraction), seed_(seed) {
  check_vocab(vocab, "text source vocabulary");
  load(path, std::move(vocab));
}

// `vocab` empty: the file's own characters.
void TextSource::load(const std::string& path, std::vector<char32_t> vocab) {
  if (!(val_fraction_ > 0.0 && val_fraction_ < 1.0))
    throw Error("data.val_fraction: must be in (0, 1), got " + std::to_string(val_fraction_));
  const std::string what = "data.path '" + path + "'";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(what + ": no such file; an outside data set such as tiny Shakespeare is brought " +
                "by the data step, python3 scripts/get_data.py (see data/README.md)");
  const std::string bytes = read_regular_file(path, kMaxTextBytes, "data.path");
  if (bytes.empty())
    throw Error(what + ": file is empty; a text source needs characters to train on");
  const std::vector<char32_t> cps = utf8_decode(bytes, what);

  const bool saved = !vocab.empty();
  if (!saved) {
    vocab = cps;
    std::sort(vocab.begin(), vocab.end());
    vocab.erase(std::unique(vocab.begin(), vocab.end()), vocab.end());
  }
  codec_ = CharCodec(std::move(vocab), saved ? "a saved vocabulary" : "'" + path + "'");

  tokens_.resize(cps.size());
  size_t byte_off = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    const int32_t id = codec_.id_of(cps[i]);
    if (id < 0)
      throw Error(what + ": character " + describe_code_point(cps[i]) + " at byte offset " +
                  std::to_string(byte_off) + " is not in the saved vocabulary of " +
                  std::to_string(codec_.size()) + " characters");
    tokens_[i] = id;
    byte_off += cps[i] < 0x80 ? 1 : cps[i] < 0x800 ? 2 : cps[i] < 0x10000 ? 3 : 4;
  }

  const size_t n = tokens_.size();
  const auto n_val = static_cast<size_t>(std::llround(static_cast<double>(n) * val_fraction_));
  n_train_ = n - std::min(n_val, n);

  std::vector<double> counts(codec_.vocab().size(), 0.0);
  for (size_t i = 0; i < n_train_; ++i) counts[static_cast<size_t>(tokens_[i])] += 1.0;
  unigram_ = 0.0;
  unigram_probs_.assign(counts.size(), 0.0);
  for (size_t v = 0; v < counts.size(); ++v)
    if (counts[v] > 0.0) {
      const double p = counts[v] / static_cast<double>(n_train_);
      unigram_probs_[v] = p;
      unigram_ -= p * std::log(p);
    }
}

void TextSource::save_vocab(const std::string& path) const {
  const std::vector<char32_t>& vocab = codec_.vocab();
  std::vector<uint32_t> cps(vocab.begin(), vocab.end());
  std::string chars;
  for (char32_t cp : vocab) utf8_append(chars, cp);
  const nlohmann::json j = {{"format", kVocabFormat},
                            {"version", 1},
                            {"vocab_size", vocab.size()},
                            {"code_points", cps},
                            {"chars", chars}};  // for people reading the file; not loaded
  // Temp file then rename, so a crash never leaves a half-written vocabulary in a run dir.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("vocabulary file '" + path + "': cannot open '" + tmp + "' for writing");
    out << j.dump(1) << "\n";
    if (!out.flush()) throw Error("vocabulary file '" + path + "': write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("vocabulary file '" + path + "': rename failed: " + ec.message());
}

std::vector<char32_t> TextSource::load_vocab(const std::string& path) {
  const std::string what = "vocabulary file '" + path + "'";
  const nlohmann::json j =
      parse_json_text(read_regular_file(path, kMaxVocabBytes, "vocabulary file"), what);
  if (json_string(j, what, "format") != kVocabFormat)
    throw Error(what + ": field 'format' must be \"" + std::string(kVocabFormat) + "\"");
  json_int(j, what, "version", 1, 1);
  std::vector<char32_t> vocab;
  const nlohmann::json& cps = json_array(j, what, "code_points");
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!cps[i].is_number_unsigned())
      throw Error(what + ": field 'code_points[" + std::to_string(i) +
                  "]' must be an integer >= 0, got " + cps[i].dump());
    vocab.push_back(static_cast<char32_t>(cps[i].get<uint64_t>() & 0xFFFFFFFFu));
  }
  check_vocab(vocab, what);
  return vocab;
}

void TextSource::check_context_length(int T) const {
  if (T < 1) throw Error("block_size must be >= 1, got " + std::to_string(T));
  const size_t need = static_cast<size_t>(T) + 1;
  if (n_train_ < need || val_size() < need) {
    std::ostringstream m;
    m << "data.path '" << path_ << "': text too short for block_size " << T << " (needs " << need
      << " characters in each split): " << tokens_.size() << " characters split into " << n_train_
      << " train and " << val_size() << " val by data.val_fraction=" << val_fraction_
      << "; use a longer text, a smaller block_size or a different data.val_fraction";
    throw Error(m.str());
  }
}

Batch TextSource::batch_from(const int32_t* split, size_t split_len, int B, int T, Rng& rng) const {
  Batch batch;
  batch.B = B;
  batch.T = T;
  const size_t Tn = static_cast<size_t>(T);
  batch.x.resize(static_cast<size_t>(B) * Tn);  // (B, T)
  batch.y.resize(static_cast<size_t>(B) * Tn);  // (B, T)
  const uint64_t starts = split_len - Tn;       // windows of T + 1 characters
  for (size_t b = 0; b < static_cast<size_t>(B); ++b) {
    const int32_t* w = split + rng.below(starts);
    std::copy(w, w + Tn, batch.x.begin() + static_cast<ptrdiff_t>(b * Tn));
    std::copy(w + 1, w + Tn + 1, batch.y.begin() + static_cast<ptrdiff_t>(b * Tn));
  }
  return batch;
}

Batch TextSource::train_batch(int B, int T, Rng& rng) {
  check_batch_args("text train_batch", 1, B, T);
  check_context_length(T);
  return batch_from(tokens_.data(), n_train_, B, T, rng);
}

uint64_t TextSource::eval_seed(bool train_split) const {
  return seed_ ^ (train_split ? 0x51d7e0c4a9b3f286ULL : 0x0e6f2b9d13c5a847ULL);
}

std::vector<Batch> TextSource::eval_batches(int n, int B, int T, bool train_split) {
  check_batch_args("text eval_batches", n, B, T);
  check_context_length(T);
  Rng rng(eval_seed(train_split));
  const int32_t* split = train_split ? tokens_.data() : tokens_.data() + n_train_;
  const size_t len = train_split ? n_train_ : val_size();
  std::vector<Batch> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(batch_from(split, len, B, T, rng));
  return out;
}

ReferenceLosses TextSource::reference_losses(int /*T*/) const {
  ReferenceLosses r;
  r.uniform = std::log(static_cast<double>(codec_.size()));
  r.unigram = unigram_;
  r.optimal_known = false;
  return r;
}

double TextSource::bigram_loss_on(const std::vector<Batch>& batches) const {
  // Only the pairs the batches ask for are counted: one pass over the training split.
  const auto V = static_cast<uint64_t>(codec_.size());
  std::unordered_map<uint64_t, double> pairs;  // a * V + b -> n(a, b)
  for (const Batch& b : batches)
    for (size_t i = 0; i < b.y.size(); ++i)
      pairs.emplace(static_cast<uint64_t>(b.x[i]) * V + static_cast<uint64_t>(b.y[i]), 0.0);
  std::vector<double> firsts(static_cast<size_t>(V), 0.0);  // (V,) n(a): a followed by anything
  for (size_t i = 0; i + 1 < n_train_; ++i) {
    firsts[static_cast<size_t>(tokens_[i])] += 1.0;
    const auto it =
        pairs.find(static_cast<uint64_t>(tokens_[i]) * V + static_cast<uint64_t>(tokens_[i + 1]));
    if (it != pairs.end()) it->second += 1.0;
  }
  double sum = 0.0;
  size_t n = 0;
  for (const Batch& b : batches)
    for (size_t i = 0; i < b.y.size(); ++i, ++n) {
      const auto a = static_cast<size_t>(b.x[i]), c = static_cast<size_t>(b.y[i]);
      const double pair = pairs.at(a * V + c);
      sum -= std::log((pair + unigram_probs_[c]) / (firsts[a] + 1.0));
    }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

nlohmann::json TextSource::describe() const {
  return {{"source", "text"},
          {"path", path_},
          {"vocab_size", codec_.size()},
          {"characters", tokens_.size()},
          {"train_characters", n_train_},
          {"val_characters", val_size()},
          {"val_fraction", val_fraction_},
          {"seed", seed_},
          {"uniform", std::log(static_cast<double>(codec_.size()))},
          {"unigram", unigram_}};
}

}  // namespace sl

// Tests for TextSource: the vocabulary from a small multibyte file, each way a file can be
// rejected (and that the message says where), the train/val split, batch reproducibility,
// vocabulary save/load, and encode/decode. Temp files go under testing::TempDir().
#include "data/text.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "util/error.h"

namespace sl {
namespace {

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = testing::TempDir() + "stacklab_text_test_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(TextSource, VocabularyIsTheSortedSetOfCodePointsIncludingMultibyte) {
  const std::string text =
      "h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xF0\x9F\x98\x80 h\xC3\xA9";  // héllo wörld ✓ 😀 hé
  const std::string path = write_temp("vocab.txt", text);
  const TextSource src(path, 0.2, 1);
  const std::vector<char32_t> expected = {U' ', U'd',      U'h',      U'l',      U'o',         U'r',
                                          U'w', U'\u00E9', U'\u00F6', U'\u2713', U'\U0001F600'};
  EXPECT_EQ(src.vocab(), expected);
  EXPECT_EQ(src.vocab_size(), 11);
  EXPECT_EQ(src.train_size() + src.val_size(), size_t{18});  // characters, not bytes
  EXPECT_EQ(src.decode(src.encode(text)), text);
}

TEST(TextSource, InvalidUtf8IsRejectedWithItsByteOffset) {
  const std::string path = write_temp("bad.txt", "abc\xC3(def");
  const std::string msg = error_of([&] { TextSource(path, 0.1, 1); });
  EXPECT_TRUE(contains(msg, "invalid UTF-8 at byte offset 3")) << msg;
  EXPECT_TRUE(contains(msg, path)) << msg;
}

TEST(TextSource, EmptyFileIsRejected) {
  const std::string path = write_temp("empty.txt", "");
  const std::string msg = error_of([&] { TextSource(path, 0.1, 1); });
  EXPECT_TRUE(contains(msg, "empty")) << msg;
  EXPECT_TRUE(contains(msg, path)) << msg;
}

TEST(TextSource, MissingFileIsNamedInTheMessageWithTheCommandThatBringsIt) {
  const std::string path = testing::TempDir() + "stacklab_no_such_file.txt";
  const std::string msg = error_of([&] { TextSource(path, 0.1, 1); });
  EXPECT_TRUE(contains(msg, path)) << msg;
  EXPECT_TRUE(contains(msg, "data.path")) << msg;
  EXPECT_TRUE(contains(msg, "scripts/get_data.py")) << msg;
}

TEST(TextSource, ValFractionOutsideZeroOneIsRejected) {
  const std::string path = write_temp("frac.txt", "some text here");
  EXPECT_TRUE(contains(error_of([&] { TextSource(path, 0.0, 1); }), "data.val_fraction"));
  EXPECT_TRUE(contains(error_of([&] { TextSource(path, 1.0, 1); }), "data.val_fraction"));
}

TEST(TextSource, TextTooShortForTheBlockSizeIsRejectedWithLengths) {
  const std::string path = write_temp("short.txt", std::string(20, 'x'));  // 18 train, 2 val
  TextSource src(path, 0.1, 1);
  EXPECT_NO_THROW(src.check_context_length(1));
  const std::string msg = error_of([&] { src.check_context_length(8); });
  EXPECT_TRUE(contains(msg, "block_size 8")) << msg;
  EXPECT_TRUE(contains(msg, "18 train and 2 val")) << msg;
  EXPECT_TRUE(contains(msg, "data.val_fraction=0.1")) << msg;
  Rng rng(1);
  EXPECT_THROW(src.train_batch(2, 8, rng), Error);
  EXPECT_THROW(src.eval_batches(1, 2, 8, false), Error);
  EXPECT_THROW(src.check_context_length(18), Error);  // train split needs 19
}

TEST(TextSource, TrainSplitIsTheStartAndValSplitTheEnd) {
  const std::string path = write_temp("split.txt", std::string(90, 'a') + std::string(10, 'b'));
  TextSource src(path, 0.1, 3);
  EXPECT_EQ(src.train_size(), size_t{90});
  EXPECT_EQ(src.val_size(), size_t{10});
  Rng rng(2);
  for (int32_t v : src.train_batch(8, 5, rng).x) EXPECT_EQ(v, 0);
  for (const Batch& b : src.eval_batches(4, 8, 5, true))
    for (int32_t v : b.y) EXPECT_EQ(v, 0);
  for (const Batch& b : src.eval_batches(4, 8, 5, false))
    for (int32_t v : b.x) EXPECT_EQ(v, 1);
  const ReferenceLosses r = src.reference_losses(5);
  EXPECT_NEAR(r.uniform, std::log(2.0), 1e-12);
  EXPECT_NEAR(r.unigram, 0.0, 1e-12);  // the train split is all 'a'
  EXPECT_FALSE(r.optimal_known);
}

TEST(TextSource, UnigramIsTheEntropyOfTrainCharacterFrequencies) {
  const std::string path = write_temp("unigram.txt", "aabbccdd" + std::string(2, 'z'));
  const TextSource src(path, 0.2, 1);  // train "aabbccdd": 4 equally likely chars
  EXPECT_NEAR(src.reference_losses(1).unigram, std::log(4.0), 1e-12);
  EXPECT_NEAR(src.reference_losses(1).uniform, std::log(5.0), 1e-12);
}

// Train "abababaa" (val_fraction 0.2 of 10 characters), u = (5/8, 3/8); its pairs ab x3, ba x3,
// aa x1, so n(a) = 4 and n(b) = 3. q(b | a) = (n(a, b) + u(b)) / (n(a) + 1): on x = (a, b, b),
// y = (b, b, a): q(b|a) = 3.375 / 5, q(b|b) = 0.375 / 4 (a pair the split never shows: the
// unigram's share, not 0), q(a|b) = 3.625 / 4.
TEST(TextSource, TheBigramIsTheTrainingSplitsPairCountsSmoothedTowardTheUnigram) {
  const std::string path = write_temp("bigram.txt", "abababaabb");
  const TextSource src(path, 0.2, 1);
  Batch b;
  b.B = 1;
  b.T = 3;
  b.x = {0, 1, 1};
  b.y = {1, 1, 0};
  const double expected =
      -(std::log(3.375 / 5.0) + std::log(0.375 / 4.0) + std::log(3.625 / 4.0)) / 3.0;
  EXPECT_NEAR(src.bigram_loss_on({b}), expected, 1e-12);
  EXPECT_FALSE(src.optimum_loss_on({b}).has_value()) << "a text does not know its probabilities";
  ReferenceLosses r = src.reference_losses(3);
  measure_on_batches(r, src, {b});
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(j.at("optimum_on_val").is_null());
  EXPECT_TRUE(contains(j.at("optimum_on_val_note").get<std::string>(), "text")) << j.dump();
  EXPECT_NEAR(j.at("bigram_on_val").get<double>(), expected, 1e-12);
}

std::string counting_text() {
  std::string s;
  for (int i = 0; i < 400; ++i) s += std::to_string(i) + (i % 7 ? " " : "\n");
  return s;
}

TEST(TextSource, TargetsAreTheNextCharactersOfAContiguousWindow) {
  const std::string text = counting_text();
  const std::string path = write_temp("window.txt", text);
  TextSource src(path, 0.1, 1);
  Rng rng(4);
  const Batch b = src.train_batch(4, 16, rng);
  ASSERT_EQ(b.x.size(), size_t{64});
  for (int i = 0; i < 4; ++i) {
    const std::vector<int32_t> row(b.x.begin() + i * 16, b.x.begin() + (i + 1) * 16);
    const std::string window = src.decode(row);
    const size_t at = text.find(window);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(src.decode({b.y[size_t(i * 16 + 15)]}), text.substr(at + 16, 1));
    for (int t = 0; t + 1 < 16; ++t)
      EXPECT_EQ(b.y[size_t(i * 16 + t)], b.x[size_t(i * 16 + t + 1)]);
  }
}

TEST(TextSource, EvalBatchesAreFixedAndTrainBatchesFollowTheCallersRng) {
  const std::string path = write_temp("repro.txt", counting_text());
  TextSource a(path, 0.2, 9), b(path, 0.2, 9), c(path, 0.2, 10);
  Rng r1(5), r2(5), r3(6);
  const auto first = a.eval_batches(3, 4, 8, false);
  a.train_batch(4, 8, r3);
  const auto again = a.eval_batches(3, 4, 8, false);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first[i].x, again[i].x);
  EXPECT_EQ(first[0].x, b.eval_batches(1, 4, 8, false)[0].x);
  EXPECT_NE(first[0].x, c.eval_batches(1, 4, 8, false)[0].x) << "eval depends on the source seed";
  EXPECT_EQ(a.train_batch(4, 8, r1).x, b.train_batch(4, 8, r2).x);
  EXPECT_NE(a.train_batch(4, 8, r1).x, a.train_batch(4, 8, r3).x);
}

TEST(TextSource, SavedVocabularyLoadsBackAndRejectsUnknownCharacters) {
  const std::string path = write_temp("saved.txt", "caf\xC3\xA9 bar");
  const TextSource src(path, 0.3, 1);
  const std::string vocab_path = testing::TempDir() + "stacklab_text_test_vocab.json";
  src.save_vocab(vocab_path);
  const std::vector<char32_t> vocab = TextSource::load_vocab(vocab_path);
  EXPECT_EQ(vocab, src.vocab());
  const TextSource same(path, 0.3, 1, vocab);
  EXPECT_EQ(same.encode("bar caf\xC3\xA9"), src.encode("bar caf\xC3\xA9"));
  const std::string other = write_temp("other.txt", "cab\xE2\x82\xAC");  // "cab€"
  const std::string msg = error_of([&] { TextSource(other, 0.3, 1, vocab); });
  EXPECT_TRUE(contains(msg, "U+20AC")) << msg;
  EXPECT_TRUE(contains(msg, "byte offset 3")) << msg;
  const std::string bad = write_temp("bad_vocab.json", R"({"format": "something else"})");
  EXPECT_TRUE(contains(error_of([&] { TextSource::load_vocab(bad); }), "format"));
}

// A number too large for any JSON number type is nlohmann's out_of_range, not a parse_error
// (found by fuzz_text): it must still be an Error naming the file, not an escaped exception.
TEST(TextSource, AVocabularyFileWithAHugeNumberIsAnErrorNamingTheFile) {
  const std::string huge = write_temp("huge_vocab.json", R"({"code_points": [1e999999]})");
  const std::string msg = error_of([&] { TextSource::load_vocab(huge); });
  EXPECT_TRUE(contains(msg, "huge_vocab.json")) << msg;
  EXPECT_TRUE(contains(msg, "not valid JSON")) << msg;
}

TEST(TextSource, EncodeNamesAnUnknownCharacterAndDecodeRejectsBadIds) {
  const std::string path = write_temp("enc.txt", "abc abc");
  const TextSource src(path, 0.3, 1);
  const std::string msg = error_of([&] { src.encode("abz"); });
  EXPECT_TRUE(contains(msg, "'z' (U+007A)")) << msg;
  EXPECT_THROW(src.decode({0, 4}), Error);
  EXPECT_EQ(src.decode(src.encode("cab a")), "cab a");
}

TEST(TextSource, AnUnknownFirstCharacterIsNamedByItsIndexCountingFromZero) {
  const TextSource src(write_temp("enc0.txt", "abc abc"), 0.3, 1);
  const std::string first = error_of([&] { src.encode("zab"); });
  EXPECT_TRUE(contains(first, "'z' (U+007A) at index 0 of the input (counting from 0)")) << first;
  EXPECT_FALSE(contains(first, "character 0")) << first;
  const std::string third = error_of([&] { src.encode("abz"); });
  EXPECT_TRUE(contains(third, "at index 2 of the input")) << third;
}

TEST(CharCodec, AVocabularyAloneEncodesAndDecodesAndNamesWhereItCameFrom) {
  const CharCodec codec({U' ', U'a', U'b', U'\u00e9'}, "'runs/x/vocab.json'");
  EXPECT_EQ(codec.size(), 4);
  EXPECT_EQ(codec.encode("ab \u00e9"), (std::vector<int32_t>{1, 2, 0, 3}));
  EXPECT_EQ(codec.decode({3, 1}), "\u00e9a");
  const std::string msg = error_of([&] { codec.encode("q"); });
  EXPECT_TRUE(contains(msg, "'runs/x/vocab.json'")) << msg;
  EXPECT_TRUE(contains(error_of([&] { CharCodec({U'b', U'a'}, "v"); }), "sorted")) << "unsorted";
}

TEST(TextSource, CommittedCorpusLoadsAndFitsAContextOf256) {
  const std::string path = std::string(STACKLAB_SOURCE_DIR) + "/data/corpus.txt";
  TextSource src(path, 0.1, 1);
  EXPECT_NO_THROW(src.check_context_length(256));
  EXPECT_GT(src.train_size(), size_t{150000});
  EXPECT_GT(src.vocab_size(), 30);
  EXPECT_LT(src.vocab_size(), 100);
  const ReferenceLosses r = src.reference_losses(256);
  EXPECT_LT(r.unigram, r.uniform);
  EXPECT_EQ(src.describe().at("source"), "text");
}

// issue 31 item 10: a FIFO as data.path blocked (ignoring SIGTERM), /dev/zero and /dev/urandom
// were read until memory ran out. A data file is a regular file of at most kMaxTextBytes, checked
// before it is opened; each refusal names the file and returns at once.
TEST(TextSource, AFifoOrADeviceIsRefusedNamingTheFileWithoutBlocking) {
  const std::string fifo =
      testing::TempDir() + "stacklab_text_test_fifo_" + std::to_string(getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { TextSource(fifo, 0.1, 1); }),
            "data.path '" + fifo + "': is a FIFO (named pipe), not a regular file");
  ::unlink(fifo.c_str());
  for (const std::string dev : {"/dev/zero", "/dev/urandom"})
    EXPECT_EQ(error_of([&] { TextSource(dev, 0.1, 1); }),
              "data.path '" + dev + "': is a character device, not a regular file");
  EXPECT_TRUE(contains(error_of([&] { TextSource(testing::TempDir(), 0.1, 1); }),
                       "is a directory, not a regular file"));
}

TEST(TextSource, AFileAboveTheSizeCapIsRefusedNamingTheFileAndTheCap) {
  const std::string path = write_temp("huge.txt", "");
  // Sparse: one byte past the cap costs no disk and is refused from its size alone.
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kMaxTextBytes + 1)), 0);
  EXPECT_EQ(error_of([&] { TextSource(path, 0.1, 1); }),
            "data.path '" + path + "': 1073741825 bytes, above the 1 GiB limit");
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace sl

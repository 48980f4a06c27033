// libFuzzer target: the character-level text loader on arbitrary bytes. The first byte picks
// block_size (1..16) and val_fraction; the rest is the text file. Every input must load or
// throw sl::Error; a loaded text must give in-vocabulary batches for any block_size it accepts,
// round-trip encode/decode, and save and reload its vocabulary. The same bytes are also fed to
// the vocabulary-file reader.
#include <cstdint>
#include <string>

#include "core/rng.h"
#include "data/text.h"
#include "fuzz_util.h"
#include "util/error.h"

namespace {

void check_batch(const sl::Batch& b, int V) {
  for (size_t i = 0; i < b.x.size(); ++i)
    if (b.x[i] < 0 || b.x[i] >= V || b.y[i] < 0 || b.y[i] >= V)
      sl::fuzz::property_failed("token id outside vocab");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int T = 1 + (data[0] & 0x0F);
  const double val_fraction = (data[0] & 0x80) ? 0.5 : 0.1;
  const std::string path = sl::fuzz::write_scratch("input.txt", data + 1, size - 1);
  try {
    sl::TextSource src(path, val_fraction, 7);
    const int V = src.vocab_size();
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (src.decode(src.encode(text)) != text) sl::fuzz::property_failed("encode/decode round trip");
    src.save_vocab(sl::fuzz::scratch_dir() + "/vocab.json");
    if (sl::TextSource::load_vocab(sl::fuzz::scratch_dir() + "/vocab.json") != src.vocab())
      sl::fuzz::property_failed("vocabulary save/load round trip");
    src.check_context_length(T);  // throws when the text is too short for T
    sl::Rng rng(3);
    check_batch(src.train_batch(2, T, rng), V);
    for (const auto& b : src.eval_batches(2, 2, T, false)) check_batch(b, V);
    for (const auto& b : src.eval_batches(2, 2, T, true)) check_batch(b, V);
  } catch (const sl::Error&) {}
  try {
    (void)sl::TextSource::load_vocab(path);
  } catch (const sl::Error&) {}
  return 0;
}

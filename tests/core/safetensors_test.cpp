// Tests for core/safetensors: bit-exact round trips, the on-disk layout (little-endian u64
// length, 8-byte aligned data), and one test per corruption the reader must reject with a
// message that names the file and the problem. Hand-built headers keep each case explicit.
#include "core/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>

#include "util/error.h"
#include "util/fsutil.h"

namespace sl {
namespace {

namespace fs = std::filesystem;
const std::string kOrigin = "ckpt/model.safetensors";

// A file made of an explicit header (padded to 8 bytes) and `data_bytes` bytes of data.
std::string make_file(const std::string& header, size_t data_bytes) {
  std::string h = header;
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((h.size() >> (8 * i)) & 0xff));
  return out + h + std::string(data_bytes, '\0');
}

// The little-endian u64 at the start of a file.
uint64_t header_length(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t{static_cast<unsigned char>(bytes[static_cast<size_t>(i)])} << (8 * i);
  return n;
}

// The sl::Error message of parsing `bytes`, or a marker if it parsed.
std::string parse_error(const std::string& bytes) {
  try {
    parse_safetensors(bytes, kOrigin);
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed without error)";
}

#define EXPECT_REJECTED(bytes, problem)                       \
  do {                                                        \
    std::string msg_ = parse_error(bytes);                    \
    EXPECT_NE(msg_.find(kOrigin), std::string::npos) << msg_; \
    EXPECT_NE(msg_.find(problem), std::string::npos) << msg_; \
  } while (0)

NamedTensors sample_tensors() {
  Tensor w = Tensor::from(Shape{2, 3}, {1.5f, -0.0f, 3.25f, 1e-30f, -7.0f, 0.1f});
  Tensor b = Tensor::from(Shape{3}, {std::numeric_limits<float>::infinity(), std::nanf(""), 42.0f});
  Tensor s = Tensor::from(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor e = Tensor::empty(Shape{0, 5});
  return {{"layer.weight", w}, {"layer.bias", b}, {"a.scale", s}, {"z.empty", e}};
}

bool bits_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         (a.numel() == 0 ||
          std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * 4) == 0);
}

TEST(Safetensors, RoundTripKeepsNamesShapesBitExactValuesAndMetadata) {
  NamedTensors in = sample_tensors();
  std::map<std::string, std::string> meta{
      {"step", "1200"}, {"config", R"({"n_layer": 2})"}, {"note", "ünïcode"}};
  TensorFile out = parse_safetensors(safetensors_serialize(in, meta), kOrigin);
  ASSERT_EQ(out.tensors.size(), in.size());
  for (const auto& [name, t] : in) {
    const Tensor* got = out.find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_TRUE(bits_equal(*got, t)) << name << " " << got->shape().str();
    EXPECT_EQ(got->name(), name);
  }
  EXPECT_EQ(out.metadata, meta);
  EXPECT_EQ(out.find("missing"), nullptr);
}

TEST(Safetensors, SaveAndLoadGoThroughTheFileSystem) {
  const fs::path dir = fs::temp_directory_path() / ("sl_st_" + std::to_string(::getpid()));
  make_dirs(dir.string());
  const std::string path = (dir / "m.safetensors").string();
  save_safetensors(path, sample_tensors(), {{"k", "v"}});
  TensorFile f = load_safetensors(path);
  EXPECT_TRUE(bits_equal(*f.find("layer.weight"), sample_tensors()[0].second));
  EXPECT_EQ(f.metadata.at("k"), "v");
  fs::remove_all(dir);
}

// What `train --resume` and `sweep --on-change extend` read of a checkpoint before deciding
// whether an extension may run: the metadata alone, never the data (a file cut in its data still
// gives its header; the full read refuses it later).
TEST(Safetensors, TheMetadataIsReadFromTheHeaderAloneAndABadHeaderIsRefusedNamingTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("sl_st_meta_" + std::to_string(::getpid()));
  make_dirs(dir.string());
  const std::string path = (dir / "m.safetensors").string();
  const std::string bytes = safetensors_serialize(sample_tensors(), {{"train_state", "{}"}});
  write_file_atomic(path, bytes.substr(0, bytes.size() - 4));  // its data cut short
  EXPECT_EQ(read_safetensors_metadata(path),
            (std::map<std::string, std::string>{{"train_state", "{}"}}));
  write_file_atomic(path, safetensors_serialize(sample_tensors(), {}));
  EXPECT_TRUE(read_safetensors_metadata(path).empty());
  for (const std::string& bad : {bytes.substr(0, 12), make_file("[1]", 0), std::string("abc")}) {
    write_file_atomic(path, bad);
    try {
      read_safetensors_metadata(path);
      ADD_FAILURE() << "accepted a bad header";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(Safetensors, LoadOfAMissingFileNamesIt) {
  try {
    load_safetensors("/nonexistent/m.safetensors");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/m.safetensors"), std::string::npos)
        << e.what();
  }
}

TEST(Safetensors, HeaderLengthIsLittleEndianU64AndDataIs8ByteAligned) {
  Tensor t = Tensor::from(Shape{2}, {1.0f, 2.0f});
  std::string bytes = safetensors_serialize({{"t", t}}, {});
  const uint64_t n = header_length(bytes);
  EXPECT_EQ((8 + n) % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 8);
  EXPECT_EQ(bytes[8], '{');
  // The padding is spaces after the JSON, and the data are the raw little-endian floats.
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"t":{"data_offsets":[0,8],"dtype":"F32","shape":[2]}})");
  EXPECT_EQ(bytes.substr(8 + n, 4), std::string("\x00\x00\x80\x3f", 4));  // 1.0f
}

TEST(Safetensors, TensorsAreWrittenSortedByNameAndPacked) {
  std::string bytes = safetensors_serialize(sample_tensors(), {});
  const std::string header = bytes.substr(8, header_length(bytes));
  EXPECT_LT(header.find("a.scale"), header.find("layer.bias"));
  EXPECT_LT(header.find("layer.bias"), header.find("layer.weight"));
  EXPECT_NE(header.find(R"("a.scale":{"data_offsets":[0,16])"), std::string::npos) << header;
}

TEST(Safetensors, ReaderAcceptsAnyEntryOrderInTheData) {
  // b's data come first in the buffer although a sorts first by name.
  std::string bytes = make_file(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                12);
  const size_t data = bytes.size() - 12;
  float vals[3] = {9.0f, 1.0f, 2.0f};
  std::memcpy(bytes.data() + data, vals, 12);
  TensorFile f = parse_safetensors(bytes, kOrigin);
  EXPECT_EQ(f.find("b")->to_vector(), std::vector<float>({9.0f}));
  EXPECT_EQ(f.find("a")->to_vector(), std::vector<float>({1.0f, 2.0f}));
}

TEST(Safetensors, WriterRejectsDuplicateOrReservedNames) {
  Tensor t = Tensor::from(Shape{1}, {1.0f});
  EXPECT_THROW(safetensors_serialize({{"x", t}, {"x", t}}, {}), Error);
  EXPECT_THROW(safetensors_serialize({{"__metadata__", t}}, {}), Error);
  EXPECT_THROW(safetensors_serialize({{"", t}}, {}), Error);
}

TEST(Safetensors, TruncationAnywhereIsRejectedWithTheReason) {
  const std::string good = safetensors_serialize(sample_tensors(), {{"k", "v"}});
  const uint64_t n = header_length(good);
  EXPECT_REJECTED(good.substr(0, 0), "shorter than the 8-byte header length");
  EXPECT_REJECTED(good.substr(0, 7), "shorter than the 8-byte header length");
  EXPECT_REJECTED(good.substr(0, 8), "exceeds");
  EXPECT_REJECTED(good.substr(0, 8 + n / 2), "exceeds");
  EXPECT_REJECTED(good.substr(0, 8 + n), "outside the data buffer");
  EXPECT_REJECTED(good.substr(0, good.size() - 1), "outside the data buffer");
  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_THROW(parse_safetensors(good.substr(0, len), kOrigin), Error) << len;
}

TEST(Safetensors, AbsurdHeaderLengthIsRejectedBeforeReading) {
  std::string bytes = make_file("{}", 0);
  bytes[5] = '\x01';  // 2^40 + 8
  EXPECT_REJECTED(bytes, "is absurd");
}

TEST(Safetensors, FlippedHeaderBytesAreRejectedOrStillConsistent) {
  const std::string good = safetensors_serialize(sample_tensors(), {{"k", "v"}});
  size_t rejected = 0;
  const size_t header_end = 8 + header_length(good);
  for (size_t i = 8; i < header_end; ++i) {
    for (unsigned char mask : {0x01, 0x20, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
      try {
        TensorFile f = parse_safetensors(bad, kOrigin);
        EXPECT_EQ(f.tensors.size() + f.metadata.size(), 5u)
            << "byte " << i;  // e.g. a renamed tensor
      } catch (const Error& e) {
        ++rejected;
        EXPECT_NE(std::string(e.what()).find(kOrigin), std::string::npos);
      }
    }
  }
  EXPECT_GT(rejected, (header_end - 8) * 2);  // most flips break the header
  std::string bad = good;
  bad[8] = 'x';
  EXPECT_REJECTED(bad, "header is not valid JSON");
}

TEST(Safetensors, HeaderThatIsNotAnObjectIsRejected) {
  EXPECT_REJECTED(make_file("[1,2]", 0), "header must be a JSON object, got array");
  EXPECT_REJECTED(make_file(R"({"t": 3})", 0), "tensor 't': entry must be an object");
}

TEST(Safetensors, EntryMissingAFieldIsRejectedNamingIt) {
  EXPECT_REJECTED(make_file(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4),
                  "tensor 't': missing \"dtype\"");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", 4),
                  "missing \"shape\"");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[1]}})", 4), "missing \"data_offsets\"");
}

TEST(Safetensors, EntryFieldsOfTheWrongTypeAreRejected) {
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", 4),
                  "dtype must be a string");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", 4),
                  "shape must be an array");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
                  "shape entry must be a non-negative integer");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4),
                  "data_offsets must be [begin, end]");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":["0","4"]}})", 4),
                  "data_offsets begin must be a non-negative integer");
}

TEST(Safetensors, DtypeOtherThanF32IsRejectedNamingIt) {
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4),
                  "tensor 't': dtype F16 is not supported (only F32)");
}

TEST(Safetensors, NegativeOrTooManyDimensionsAreRejected) {
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                  "shape entry is negative (-1)");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1],"data_offsets":[0,4]}})", 4),
                  "has more than 4 dimensions");
  EXPECT_REJECTED(
      make_file(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
      "is too large");
}

TEST(Safetensors, OffsetsThatDoNotMatchTheShapeAreRejected) {
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20),
                  "span 20 bytes but shape (2,3) of F32 needs 24");
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8),
                  "end before they begin");
}

TEST(Safetensors, OffsetsPastTheEndOfTheBufferAreRejected) {
  EXPECT_REJECTED(make_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8),
                  "tensor 't' data_offsets [4,12] lie outside the data buffer of 8 bytes");
  EXPECT_REJECTED(
      make_file(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,0]}})", 8),
      "end before they begin");
}

TEST(Safetensors, OverlappingRegionsAreRejected) {
  EXPECT_REJECTED(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            12),
                  "tensor 'b' overlaps tensor 'a'");
  EXPECT_REJECTED(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                            8),
                  "overlaps");
}

TEST(Safetensors, GapsAndTrailingBytesAreRejected) {
  EXPECT_REJECTED(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                            12),
                  "gap of 4 bytes between tensor 'a' and tensor 'b'");
  EXPECT_REJECTED(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                  "gap of 4 bytes between the start of the data and tensor 'a'");
  EXPECT_REJECTED(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8),
                  "4 trailing bytes after the last tensor");
  EXPECT_REJECTED(safetensors_serialize(sample_tensors(), {}) + "junk", "4 trailing bytes");
}

TEST(Safetensors, DuplicateNamesAreRejected) {
  EXPECT_REJECTED(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            8),
                  "duplicate tensor name 'a'");
  EXPECT_REJECTED(
      make_file(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4),
      "duplicate key 'dtype'");
}

TEST(Safetensors, MetadataValuesMustBeStrings) {
  EXPECT_REJECTED(make_file(R"({"__metadata__":{"step":12}})", 0),
                  "__metadata__ value of 'step' must be a string");
  EXPECT_REJECTED(make_file(R"({"__metadata__":["x"]})", 0), "__metadata__ must be an object");
  TensorFile f = parse_safetensors(make_file(R"({"__metadata__":{"step":"12"}})", 0), kOrigin);
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_EQ(f.metadata.at("step"), "12");
}

// Found by tests/cli/reliability_test.cpp flipping bit 5 of a padding space: nlohmann stops at a
// NUL, so the rest of the header was ignored and the corrupt file accepted.
TEST(Safetensors, ANulByteInTheHeaderIsRejected) {
  EXPECT_REJECTED(
      make_file(
          std::string(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})") + '\0' + "  ",
          4),
      "header holds a NUL byte");
  EXPECT_REJECTED(
      make_file(
          std::string(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})") + '\0' + "xyz",
          4),
      "header holds a NUL byte");
}

// Found by fuzz_safetensors' round-trip property: the reader accepted a tensor named "" that the
// writer refuses, so a file could be loaded but not saved back.
TEST(Safetensors, AnEmptyTensorNameIsRejected) {
  EXPECT_REJECTED(make_file(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
                  "a tensor has an empty name");
}

}  // namespace
}  // namespace sl

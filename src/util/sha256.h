// SHA-256 (FIPS 180-4), for one purpose: telling whether a file is the published copy of a known
// data set (data/known_data.h), whose checksum is the one its source and the data step publish.
// Run fingerprints and checkpoint checksums use the cheaper FNV-1a (util/hash.h).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sl {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::string hex_digest();  // 64 lower-case hex digits; the object is spent afterwards

 private:
  void block(const unsigned char* p);  // one 64-byte block

  std::array<uint32_t, 8> h_;
  std::array<unsigned char, 64> buf_{};
  size_t used_ = 0;      // bytes in buf_
  uint64_t length_ = 0;  // bytes hashed so far
};

// The SHA-256 of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace sl

// FNV-1a 64: the one non-cryptographic hash stacklab uses to detect changed or damaged bytes
// (checkpoint checksums, run fingerprints, data-file identity). Not a defence against anyone
// forging a collision; it only has to notice accidents and edits.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace sl {

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

// h mixed with n bytes at p; start from kFnvBasis.
inline uint64_t fnv1a64(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

// 16 lower-case hex digits.
inline std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace sl

// libFuzzer target: parse_safetensors on arbitrary bytes. Every input must parse or throw
// sl::Error; a parsed file must serialize and parse again to the same tensors.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/safetensors.h"
#include "fuzz_util.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  sl::TensorFile file;
  try {
    file = sl::parse_safetensors(bytes, "fuzz.safetensors");
  } catch (const sl::Error&) {
    return 0;
  }
  const std::string out = sl::safetensors_serialize(file.tensors, file.metadata);
  const sl::TensorFile again = sl::parse_safetensors(out, "reserialized");
  if (again.tensors.size() != file.tensors.size() || again.metadata != file.metadata)
    sl::fuzz::property_failed("safetensors round trip changed the file");
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const sl::Tensor& a = file.tensors[i].second;
    const sl::Tensor& b = again.tensors[i].second;
    if (file.tensors[i].first != again.tensors[i].first || a.shape() != b.shape() ||
        (a.numel() > 0 && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * 4) != 0))
      sl::fuzz::property_failed("safetensors round trip changed a tensor");
  }
  return 0;
}

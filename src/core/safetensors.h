// safetensors: the checkpoint format shared with Python (scripts/stacklab/runs/io_util.py) and the
// Hugging Face ecosystem. Layout: u64 little-endian N, N bytes of JSON header (space-padded so
// the data starts 8-byte aligned), then the packed tensor data. Only F32 is read or written.
// The reader validates the whole header before touching the data. Not here: checking names or
// shapes against a model config (the model code does that), memory mapping, other dtypes.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace sl {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct TensorFile {
  NamedTensors tensors;                               // sorted by name
  std::map<std::string, std::string> metadata;        // the header's "__metadata__"
  const Tensor* find(const std::string& name) const;  // nullptr if absent
};

// Largest header accepted by the reader; anything larger is treated as corruption.
inline constexpr uint64_t kMaxSafetensorsHeader = 100u * 1024u * 1024u;

// The file's bytes. Tensors are written sorted by name; names must be unique and non-empty and
// may not be "__metadata__".
std::string safetensors_serialize(const NamedTensors& tensors,
                                  const std::map<std::string, std::string>& metadata);
// Serializes and writes through write_file_atomic: a crash leaves the old file or the new one.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Parses and validates `bytes`; `origin` (the file path) is named in every error message.
TensorFile parse_safetensors(std::string_view bytes, const std::string& origin);
TensorFile load_safetensors(const std::string& path);

// The header's "__metadata__" of the file at `path` (empty when it has none), read without the
// tensor data: the length field and the header, checked as above, but not the entries' layout.
// For a reader that needs a few metadata values and checks the whole file before using it.
std::map<std::string, std::string> read_safetensors_metadata(const std::string& path);

}  // namespace sl

// safetensors writer and validating reader. The reader checks, in order: the length field, the
// JSON header (object, no duplicate keys), each entry (dtype, shape, offsets vs shape), then the
// layout of all entries together (packed from 0, no gap, no overlap, no trailing bytes); only
// then does it allocate tensors and copy data.
#include "core/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fsutil.h"

namespace sl {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian floats; this build copies them as they are");

namespace {

using json = nlohmann::json;
constexpr const char* kMetadataKey = "__metadata__";

[[noreturn]] void bad(const std::string& origin, const std::string& problem) {
  throw Error("[safetensors] " + origin + ": " + problem);
}

// One validated header entry.
struct Entry {
  std::string name;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// A JSON value that is a non-negative integer fitting in u64, or an error naming `what`.
uint64_t as_unsigned(const json& v, const std::string& origin, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) bad(origin, what + " is negative (" + v.dump() + ")");
  bad(origin, what + " must be a non-negative integer, got " + v.dump());
}

json parse_header_json(std::string_view text, const std::string& origin) {
  // nlohmann keeps the last of two equal keys silently; a callback catches duplicates.
  std::vector<std::set<std::string>> open_objects;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& value) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event == json::parse_event_t::key &&
        !open_objects.back().insert(value.get<std::string>()).second) {
      if (open_objects.size() == 1)
        bad(origin, "duplicate tensor name '" + value.get<std::string>() + "'");
      bad(origin, "duplicate key '" + value.get<std::string>() + "' in the header");
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    bad(origin, std::string("header is not valid JSON: ") + e.what());
  }
}

Entry parse_entry(const std::string& name, const json& v, const std::string& origin) {
  const std::string where = "tensor '" + name + "'";
  // The writer refuses an empty name, so the reader must too (found by fuzz_safetensors'
  // round-trip property: parse accepted what serialize then threw on).
  if (name.empty()) bad(origin, "a tensor has an empty name");
  if (!v.is_object()) bad(origin, where + ": entry must be an object, got " + v.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) bad(origin, where + ": missing \"" + key + "\"");

  const json& dtype = v["dtype"];
  if (!dtype.is_string()) bad(origin, where + ": dtype must be a string, got " + dtype.dump());
  if (dtype.get<std::string>() != "F32")
    bad(origin, where + ": dtype " + dtype.get<std::string>() + " is not supported (only F32)");

  const json& shape = v["shape"];
  if (!shape.is_array()) bad(origin, where + ": shape must be an array, got " + shape.dump());
  if (shape.size() > static_cast<size_t>(Shape::kMaxDims))
    bad(origin, where + ": shape " + shape.dump() + " has more than 4 dimensions");
  std::vector<int64_t> dims;
  uint64_t numel = 1;
  bool overflow = false;
  for (const json& d : shape) {
    uint64_t n = as_unsigned(d, origin, where + ": shape entry");
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      bad(origin, where + ": shape entry " + d.dump() + " is too large");
    dims.push_back(static_cast<int64_t>(n));
    overflow = overflow || __builtin_mul_overflow(numel, n, &numel);
  }
  uint64_t nbytes = 0;
  overflow = overflow || __builtin_mul_overflow(numel, uint64_t{4}, &nbytes);
  // A zero dimension makes the product 0 whatever overflowed before it.
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) overflow = false, nbytes = 0;
  if (overflow) bad(origin, where + ": shape " + shape.dump() + " is too large");

  const json& offs = v["data_offsets"];
  if (!offs.is_array() || offs.size() != 2)
    bad(origin, where + ": data_offsets must be [begin, end], got " + offs.dump());
  Entry e{name, Shape(dims), as_unsigned(offs[0], origin, where + ": data_offsets begin"),
          as_unsigned(offs[1], origin, where + ": data_offsets end")};
  if (e.end < e.begin)
    bad(origin, where + ": data_offsets " + offs.dump() + " end before they begin");
  if (e.end - e.begin != nbytes)
    bad(origin, where + ": data_offsets " + offs.dump() + " span " +
                    std::to_string(e.end - e.begin) + " bytes but shape " + e.shape.str() +
                    " of F32 needs " + std::to_string(nbytes));
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& origin) {
  if (!v.is_object())
    bad(origin, "__metadata__ must be an object, got " + std::string(v.type_name()));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      bad(origin, "__metadata__ value of '" + key + "' must be a string, got " + value.dump());
    out[key] = value.get<std::string>();
  }
  return out;
}

// The entries must tile [0, data_size) exactly, in some order.
void check_layout(std::vector<Entry> entries, uint64_t data_size, const std::string& origin) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  std::string prev = "the start of the data";
  for (const Entry& e : entries) {
    if (e.end > data_size)
      bad(origin, "tensor '" + e.name + "' data_offsets [" + std::to_string(e.begin) + "," +
                      std::to_string(e.end) + "] lie outside the data buffer of " +
                      std::to_string(data_size) + " bytes (file truncated?)");
    if (e.begin < pos)
      bad(origin, "tensor '" + e.name + "' overlaps " + prev + " (begins at " +
                      std::to_string(e.begin) + ", before " + std::to_string(pos) + ")");
    if (e.begin > pos)
      bad(origin, "gap of " + std::to_string(e.begin - pos) + " bytes between " + prev +
                      " and tensor '" + e.name + "'");
    pos = e.end;
    prev = "tensor '" + e.name + "'";
  }
  if (pos != data_size)
    bad(origin, std::to_string(data_size - pos) + " trailing bytes after the last tensor");
}

}  // namespace

const Tensor* TensorFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

std::string safetensors_serialize(const NamedTensors& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& nt : tensors) order.push_back(&nt);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });

  json header = json::object();
  uint64_t offset = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [name, t] = *order[i];
    if (name.empty() || name == kMetadataKey)
      throw Error("[safetensors] invalid tensor name '" + name + "'");
    if (i > 0 && order[i - 1]->first == name)
      throw Error("[safetensors] duplicate tensor name '" + name + "'");
    if (!t.defined()) throw Error("[safetensors] tensor '" + name + "' is undefined");
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
    header[name] = {{"dtype", "F32"},
                    {"shape", t.shape().to_vector()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;

  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned

  std::string out;
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xff));
  out += text;
  for (const auto* nt : order)
    if (nt->second.numel() > 0)
      out.append(reinterpret_cast<const char*>(nt->second.data()),
                 static_cast<size_t>(nt->second.numel()) * sizeof(float));
  return out;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, safetensors_serialize(tensors, metadata));
}

namespace {

// The header length of a file of `file_size` bytes that begins with `bytes`, checked against the
// limit and the file's size.
uint64_t header_length(std::string_view bytes, uint64_t file_size, const std::string& origin) {
  if (bytes.size() < 8 || file_size < 8)
    bad(origin,
        "file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[static_cast<size_t>(i)]))
         << (8 * i);
  if (n > kMaxSafetensorsHeader)
    bad(origin, "header length " + std::to_string(n) + " is absurd (limit " +
                    std::to_string(kMaxSafetensorsHeader) + " bytes); not a safetensors file?");
  if (n > file_size - 8)
    bad(origin, "header length " + std::to_string(n) + " exceeds the " +
                    std::to_string(file_size - 8) +
                    " bytes after the length field (file truncated?)");
  return n;
}

// The header's `text` as a JSON object.
json checked_header(std::string_view text, const std::string& origin) {
  // nlohmann's parser stops at a NUL byte, so "{...}\0<anything>" would pass; the header is
  // JSON padded with spaces, never NUL (a flipped bit turns a padding space into one).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    bad(origin,
        "header holds a NUL byte at offset " + std::to_string(8 + nul) + " (corrupt file?)");
  json header = parse_header_json(text, origin);
  if (!header.is_object())
    bad(origin, std::string("header must be a JSON object, got ") + header.type_name());
  return header;
}

}  // namespace

TensorFile parse_safetensors(std::string_view bytes, const std::string& origin) {
  const uint64_t n = header_length(bytes, bytes.size(), origin);
  const json header = checked_header(bytes.substr(8, n), origin);

  TensorFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey)
      file.metadata = parse_metadata(value, origin);
    else
      entries.push_back(parse_entry(key, value, origin));
  }
  const std::string_view data = bytes.substr(8 + n);
  check_layout(entries, data.size(), origin);

  for (const Entry& e : entries) {  // header.items() is name-sorted, so these are too
    Tensor t = Tensor::empty(e.shape);
    if (e.end > e.begin) std::memcpy(t.data(), data.data() + e.begin, e.end - e.begin);
    t.set_name(e.name);
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

TensorFile load_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path), path);
}

std::map<std::string, std::string> read_safetensors_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open it");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  in.seekg(0);
  std::string head(8, '\0');
  in.read(head.data(), 8);
  head.resize(static_cast<size_t>(in.gcount()));
  const uint64_t n = header_length(head, size, path);
  std::string text(static_cast<size_t>(n), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(n)))
    bad(path, "could not read its " + std::to_string(n) + "-byte header");
  const json header = checked_header(text, path);
  const auto it = header.find(kMetadataKey);
  return it == header.end() ? std::map<std::string, std::string>{} : parse_metadata(*it, path);
}

}  // namespace sl

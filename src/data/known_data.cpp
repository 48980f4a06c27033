// Known data sets: the compiled-in manifest, the match of a data.path to a data set's place, and
// the size + SHA-256 check of the file found there.
#include "data/known_data.h"

#include <algorithm>
#include <filesystem>

#include "data/text.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/json_read.h"
#include "util/sha256.h"

namespace sl {

// data/datasets.json's text, written into the build tree by CMake
// (src/data/datasets_manifest.cpp.in).
extern const char kDatasetsManifestJson[];

namespace {

constexpr const char* kManifestFormat = "stacklab.datasets";

// The last components of `path` (lexically normalised) equal those of `place`.
bool ends_with_place(const std::filesystem::path& path, const std::string& place) {
  const std::filesystem::path tail = std::filesystem::path(place).lexically_normal();
  std::vector<std::filesystem::path> a(path.begin(), path.end()), b(tail.begin(), tail.end());
  if (b.empty() || a.size() < b.size()) return false;
  return std::equal(b.begin(), b.end(), a.end() - static_cast<std::ptrdiff_t>(b.size()));
}

}  // namespace

std::vector<KnownDataset> parse_datasets_manifest(const std::string& text,
                                                  const std::string& what) {
  const nlohmann::json j = parse_json_text(text, what);
  if (json_string(j, what, "format") != kManifestFormat)
    throw Error(what + ": field 'format' must be \"" + std::string(kManifestFormat) + "\"");
  json_int(j, what, "version", 1, 1);
  std::vector<KnownDataset> sets;
  const nlohmann::json& list = json_array(j, what, "datasets");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "datasets[" + std::to_string(i) + "]";
    KnownDataset d;
    d.name = json_string(list[i], what, "name", where);
    d.dest = json_string(list[i], what, "dest", where);
    d.rel_path = json_string(list[i], what, "rel_path", where);
    d.size = static_cast<uint64_t>(
        json_int(list[i], what, "size", 1, static_cast<int64_t>(kMaxTextBytes), where));
    d.sha256 = json_string(list[i], what, "sha256", where);
    if (d.sha256.size() != 64 ||
        d.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Error(what + ": field '" + where + ".sha256' must be 64 lower-case hex digits");
    sets.push_back(d);
  }
  return sets;
}

const std::vector<KnownDataset>& known_datasets() {
  static const std::vector<KnownDataset> sets =
      parse_datasets_manifest(kDatasetsManifestJson, "data/datasets.json (compiled in)");
  return sets;
}

const KnownDataset* known_dataset_at(const std::string& path,
                                     const std::vector<KnownDataset>& sets) {
  const std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  for (const KnownDataset& d : sets)
    if (ends_with_place(p, d.dest) || ends_with_place(p, d.rel_path)) return &d;
  return nullptr;
}

nlohmann::json check_known_data(const std::string& path, const std::vector<KnownDataset>& sets) {
  const KnownDataset* d = known_dataset_at(path, sets);
  if (d == nullptr) return nullptr;
  const std::string bytes = read_regular_file(path, kMaxTextBytes, "data.path");
  const std::string digest = sha256_hex(bytes);
  return {{"dataset", d->name},    {"ok", bytes.size() == d->size && digest == d->sha256},
          {"bytes", bytes.size()}, {"expected_bytes", d->size},
          {"sha256", digest},      {"expected_sha256", d->sha256}};
}

std::string data_check_warning(const nlohmann::json& check, const std::string& path) {
  if (check.is_null() || check.at("ok").get<bool>()) return "";
  const auto bytes = check.at("bytes").get<uint64_t>(),
             want = check.at("expected_bytes").get<uint64_t>();
  return "data.path '" + path + "' is where the data set " +
         check.at("dataset").get<std::string>() +
         " goes, but it fails its check: " + std::to_string(bytes) + " bytes" +
         (bytes < want ? " (truncated)" : "") + ", SHA-256 " +
         check.at("sha256").get<std::string>() + "; expected " + std::to_string(want) +
         " bytes, SHA-256 " + check.at("expected_sha256").get<std::string>() +
         ". The run goes on, recorded in summary.json as data_check.ok = false; bring a checked "
         "copy with python3 scripts/get_data.py";
}

}  // namespace sl

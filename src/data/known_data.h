// The outside data sets the data step brings, as data/datasets.json defines them (compiled in at
// build time; scripts/get_data.py reads the same file): a run whose data.path lies at one of their
// places (.../shakespeare_char/input.txt, or the source's own layout .../tinyshakespeare/input.txt)
// is checked against the published size and SHA-256, so a truncated or edited copy trains with a
// warning and a record (summary.json data_check), never silently.
// Not here: fetching (scripts/get_data.py) or reading the text (data/text.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sl {

struct KnownDataset {
  std::string name;      // "shakespeare_char"
  std::string dest;      // its place below data/: "shakespeare_char/input.txt"
  std::string rel_path;  // its place in the source's layout: "tinyshakespeare/input.txt"
  uint64_t size = 0;     // bytes
  std::string sha256;    // 64 lower-case hex digits
};

// A manifest's data sets ({"format": "stacklab.datasets", "version": 1, "datasets": [...]});
// an sl::Error naming `what` and the field otherwise.
std::vector<KnownDataset> parse_datasets_manifest(const std::string& text, const std::string& what);
// The data sets of data/datasets.json as it was when this binary was built.
const std::vector<KnownDataset>& known_datasets();

// The data set whose place `path` is (its last components equal dest or rel_path), or nullptr.
const KnownDataset* known_dataset_at(const std::string& path,
                                     const std::vector<KnownDataset>& sets);

// What a run records as data_check: null when `path` is no known data set's place, else
// {"dataset", "ok", "bytes", "expected_bytes", "sha256", "expected_sha256"} for the file now.
nlohmann::json check_known_data(const std::string& path,
                                const std::vector<KnownDataset>& sets = known_datasets());

// One line for a failed check, naming the file, both sizes and checksums and the data step; ""
// when `check` is null or ok.
std::string data_check_warning(const nlohmann::json& check, const std::string& path);

}  // namespace sl

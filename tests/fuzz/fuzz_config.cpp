// libFuzzer target: a config file plus overrides. The input is the JSON text of the file, then
// (after each NUL byte) one `--key=value` override. Every input must either load or throw
// sl::Error; a loaded config must validate, round-trip through JSON and have a memory estimate.
#include <cstdint>
#include <string>
#include <vector>

#include "config/loader.h"
#include "fuzz_util.h"
#include "train/memory.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t nul; (nul = input.find('\0', start)) != std::string::npos; start = nul + 1)
    parts.push_back(input.substr(start, nul - start));
  parts.push_back(input.substr(start));
  const std::string path = sl::fuzz::write_scratch(
      "config.json", reinterpret_cast<const uint8_t*>(parts[0].data()), parts[0].size());
  std::vector<std::string> overrides(parts.begin() + 1, parts.end());
  try {
    sl::Config cfg = sl::load_config(path, overrides);
    const nlohmann::json j = sl::to_json(cfg);
    sl::Config again = sl::config_from_json(j, "round trip");
    again.train.name = cfg.train.name;
    again.source_path = cfg.source_path;
    if (sl::to_json(again) != j)
      sl::fuzz::property_failed("config does not round-trip through to_json");
    const double bytes = sl::estimate_memory_bytes(cfg);
    if (!(bytes > 0)) sl::fuzz::property_failed("memory estimate is not positive");
  } catch (const sl::Error&) {
    // a clear rejection is the expected outcome for most inputs
  }
  return 0;
}

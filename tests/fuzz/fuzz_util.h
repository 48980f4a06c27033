// Helpers shared by the libFuzzer targets: a per-process scratch directory (the loaders under
// test read files by path) and writing the fuzzer's bytes into it.
// Not here: any assertion about what a loader accepts.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace sl::fuzz {

// /tmp/stacklab_fuzz_<pid>/, created on first use, removed at exit.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string d = std::filesystem::temp_directory_path().string() + "/stacklab_fuzz_" +
                    std::to_string(::getpid());
    std::filesystem::create_directories(d);
    static struct Cleanup {
      std::string path;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
      }
    } cleanup{d};
    return d;
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// A violated property: libFuzzer records the input as a crash.
[[noreturn]] inline void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what);
  std::abort();
}

}  // namespace sl::fuzz

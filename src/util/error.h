// Errors: what stacklab throws, and the always-on invariant check.
// User input (configs, files, flags) gets an sl::Error whose message names the field or file;
// broken internal invariants get SL_CHECK, which reports file:line. Only src/cli catches.
#pragma once
#include <stdexcept>
#include <string>

namespace sl {

// A problem the user can fix: a bad config, file, flag or shape passed to an op.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An op was called with shapes it does not accept: "[matmul] inner dims differ: (4,64) vs
// (96,384)".
struct ShapeError : Error {
  using Error::Error;
};

// A broken internal invariant: a bug in stacklab, not in the input.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond,
                               const std::string& msg);

}  // namespace sl

#define SL_CHECK(cond, msg)                                            \
  do {                                                                 \
    if (!(cond)) ::sl::check_failed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

// Formatting of internal check failures.
#include "core/error.h"

namespace sl {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  throw InternalError(std::string("internal check failed at ") + file + ":" + std::to_string(line) +
                      ": " + cond + (msg.empty() ? "" : " (" + msg + ")"));
}

}  // namespace sl

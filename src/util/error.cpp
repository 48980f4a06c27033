// Formatting of internal check failures.
#include "util/error.h"

#include <sstream>

namespace sl {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::ostringstream os;
  os << "internal check failed at " << file << ":" << line << ": " << cond;
  if (!msg.empty()) os << " (" << msg << ")";
  throw InternalError(os.str());
}

}  // namespace sl

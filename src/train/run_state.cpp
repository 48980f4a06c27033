// Run-state spellings (the table is in run_state.h).
#include "train/run_state.h"

#include "util/error.h"

namespace sl {

std::string spell(RunState state) { return name_of(state); }

RunState parse_run_state(std::string_view text, const std::string& where) {
  if (const std::optional<RunState> s = parse_choice<RunState>(text)) return *s;
  std::string known;
  for (const std::string& n : choice_names<RunState>()) known += (known.empty() ? "" : ", ") + n;
  throw Error((where.empty() ? std::string() : where + ": ") + "unknown run state '" +
              std::string(text) + "' (expected one of " + known + ")");
}

}  // namespace sl

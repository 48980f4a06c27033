// Command-line parsing shared by the subcommands: positionals, `--flag value` / `--flag=value`
// for the command's own flags, and dotted `--section.key=value` config overrides.
// Unknown flags are errors that list the valid ones; a value starting with "--" is an error naming
// the flag that lacks its value (negative numbers, "-1", are values).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

namespace sl {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> flags;  // without the leading "--"
  std::vector<std::string> overrides;        // "--model.n_layer=32" as given

  bool has(const std::string& f) const { return flags.count(f) > 0; }
  std::string get(const std::string& f, const std::string& fallback) const;
  double get_double(const std::string& f, double fallback) const;
  long long get_int(const std::string& f, long long fallback) const;
  // get_int within [lo, hi], else an Error naming the flag and the range (a value past int's
  // range would otherwise wrap when narrowed: --steps 4294967297 ran 1 step).
  int get_int_in(const std::string& f, int fallback, int lo, int hi) const;
};

// `value_flags` take a value; `switch_flags` do not. Throws sl::Error for anything else. A value
// starting with "--" is refused, naming the flag; the flags of `dash_values` (their value is
// another program's options) may take one, unless it is one of this command's flags.
Args parse_args(const std::string& command, const std::vector<std::string>& argv,
                const std::set<std::string>& value_flags, const std::set<std::string>& switch_flags,
                bool allow_overrides, const std::set<std::string>& dash_values = {});

// "1,-1,2,0" -> {1, -1, 2, 0}; throws naming the flag.
std::vector<float> parse_float_list(const std::string& flag, const std::string& text);

}  // namespace sl

// Flag parsing with errors that name the flag (main() prefixes them with the command).
#include "cli/args.h"

#include <cstdio>
#include <sstream>

#include "config/config.h"
#include "config/suggest.h"
#include "util/error.h"

namespace sl {

std::string Args::get(const std::string& f, const std::string& fallback) const {
  auto it = flags.find(f);
  return it == flags.end() ? fallback : it->second;
}

static double to_double(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {}
  throw Error("--" + flag + ": expected a number, got '" + v + "'");
}

double Args::get_double(const std::string& f, double fallback) const {
  return has(f) ? to_double(f, flags.at(f)) : fallback;
}

long long Args::get_int(const std::string& f, long long fallback) const {
  if (!has(f)) return fallback;
  const std::string& v = flags.at(f);
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size()) return n;
  } catch (const std::exception&) {}
  throw Error("--" + f + ": expected an integer, got '" + v + "'");
}

int Args::get_int_in(const std::string& f, int fallback, int lo, int hi) const {
  const long long n = get_int(f, fallback);
  if (n < lo || n > hi)
    throw Error("--" + f + ": expected an integer from " + std::to_string(lo) + " to " +
                std::to_string(hi) + ", got " + flags.at(f));
  return static_cast<int>(n);
}

Args parse_args(const std::string& /*command: main() prefixes errors with it*/,
                const std::vector<std::string>& argv, const std::set<std::string>& value_flags,
                const std::set<std::string>& switch_flags, bool allow_overrides,
                const std::set<std::string>& dash_values) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s.rfind("--", 0) != 0 || s == "--") {
      a.positional.push_back(s);
      continue;
    }
    const size_t eq = s.find('=');
    const std::string name = s.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name.find('.') != std::string::npos) {
      if (!allow_overrides) throw Error("config overrides like " + s + " are not accepted here");
      if (eq == std::string::npos)
        throw Error("override " + s + " needs a value: --" + name + "=VALUE");
      // Overrides apply in order, so a repeated key keeps its last value; never silently (a
      // script's defaults followed by the user's own overrides rely on the order).
      for (const std::string& o : a.overrides)
        if (o.compare(0, eq + 1, s, 0, eq + 1) == 0)
          std::fprintf(stderr,
                       "note: --%s is given more than once (%s, then %s): the last one "
                       "applies\n",
                       name.c_str(), o.c_str(), s.c_str());
      a.overrides.push_back(s);
    } else if (value_flags.count(name)) {
      if (eq == std::string::npos && i + 1 >= argv.size())
        throw Error("--" + name + " needs a value");
      const std::string value = eq != std::string::npos ? s.substr(eq + 1) : argv[++i];
      // A value does not start with "--": `--out --train.max_iters=2` lacks its value, and taking
      // the next flag as one would run the command with that flag silently dropped. A flag whose
      // value is another program's options (--slurm-extra "--qos=low") may, unless the value is
      // one of this command's own flags or an override.
      if (value.rfind("--", 0) == 0) {
        const std::string named = value.substr(2, value.find('=') - 2);
        if (!dash_values.count(name) || value_flags.count(named) || switch_flags.count(named) ||
            named.find('.') != std::string::npos)
          throw Error("--" + name + " needs a value, got the flag '" + value +
                      "' (a value cannot start with '--')");
      }
      if (a.flags.count(name) && a.flags[name] != value)  // as overrides: the last one applies
        std::fprintf(stderr,
                     "note: --%s is given more than once (%s, then %s): the last one applies\n",
                     name.c_str(), a.flags[name].c_str(), value.c_str());
      a.flags[name] = value;
    } else if (switch_flags.count(name) && eq == std::string::npos) {
      a.flags[name] = "true";
    } else if (switch_flags.count(name)) {
      throw Error("--" + name + " is a switch and takes no value: write --" + name + ", not " + s);
    } else {
      std::vector<std::string> all(value_flags.begin(), value_flags.end());
      all.insert(all.end(), switch_flags.begin(), switch_flags.end());
      std::ostringstream os;
      os << "unknown flag --" << name;
      if (const std::string near = closest_key(name, all); !near.empty())
        os << " (did you mean --" << near << "?)";
      os << "; valid flags:";
      for (const auto& f : all) os << " --" << f;
      if (allow_overrides) os << " (and config overrides --section.key=value)";
      throw Error(os.str());
    }
  }
  return a;
}

std::vector<float> parse_float_list(const std::string& flag, const std::string& text) {
  std::vector<float> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(static_cast<float>(to_double(flag, item)));
  if (out.empty())
    throw Error("--" + flag + ": expected a comma-separated list of numbers, got '" + text + "'");
  return out;
}

}  // namespace sl

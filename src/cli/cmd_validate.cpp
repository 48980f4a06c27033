// `stacklab validate CONFIG`: load, resolve and check a config without running anything.
// `stacklab validate --defaults`: the default config, from Config{} through to_json (the code that
// writes every run's config.json), so it cannot drift from the struct.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "nn/model.h"
#include "train/setup.h"

namespace sl {
namespace {

// Every key with its default but train.name, whose default is the config file's stem (an explicit
// empty name is refused): saved to a file, the output loads back as the defaults.
int print_defaults(const Args& a) {
  if (!a.positional.empty() || !a.overrides.empty())
    throw Error(
        "--defaults prints the default config and takes no CONFIG or overrides (to see a config "
        "with "
        "overrides resolved, give it: stacklab validate CONFIG --section.key=value)");
  nlohmann::json j = to_json(Config{});
  j["train"].erase("name");
  std::printf("%s\n", j.dump(2).c_str());
  return kExitOk;
}

}  // namespace

int cmd_validate(const ArgList& argv) {
  Args a = parse_args("validate", argv, {}, {"quiet", "defaults"}, true);
  if (a.has("defaults")) return print_defaults(a);
  if (a.positional.size() != 1)
    throw Error("expected one CONFIG file, got " + std::to_string(a.positional.size()));
  check_derived_section(a.positional[0]);
  Config cfg = load_config(a.positional[0], a.overrides);
  auto data = make_data(cfg);
  Model model(cfg.model);
  if (!a.has("quiet")) {
    nlohmann::json j = to_json(cfg);
    j["derived"] = derived_json(cfg);
    std::printf("%s\n", j.dump(2).c_str());
  }
  std::fprintf(stderr, "%s\n%s: ok\n", describe_model(cfg, model.num_parameters()).c_str(),
               a.positional[0].c_str());
  return kExitOk;
}

}  // namespace sl

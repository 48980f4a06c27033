// `stacklab validate CONFIG`: load, resolve and check a config without running anything.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "nn/model.h"
#include "train/setup.h"

namespace sl {

int cmd_validate(const ArgList& argv) {
  Args a = parse_args("validate", argv, {}, {"quiet"}, true);
  if (a.positional.size() != 1) throw Error("expected one CONFIG file, got " + std::to_string(a.positional.size()));
  check_derived_section(a.positional[0]);
  Config cfg = load_config(a.positional[0], a.overrides);
  auto data = make_data(cfg);
  Model model(cfg.model);
  if (!a.has("quiet")) {
    nlohmann::json j = to_json(cfg);
    j["derived"] = derived_json(cfg);
    std::printf("%s\n", j.dump(2).c_str());
  }
  std::fprintf(stderr, "%s\n%s: ok\n", describe_model(cfg, model.num_parameters()).c_str(), a.positional[0].c_str());
  return kExitOk;
}

}  // namespace sl

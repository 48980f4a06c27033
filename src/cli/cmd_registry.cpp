// `stacklab registry [--json]`: every wiring choice the registries define (nn/wiring.h), with its
// formula and the parameters it adds. tests/parity/torch_parity.py builds its variants from it.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "nn/wiring.h"

namespace sl {

int cmd_registry(const ArgList& argv) {
  Args a = parse_args("registry", argv, {}, {"json"}, false);
  if (!a.positional.empty())
    throw Error("registry takes no positional arguments, got '" + a.positional[0] + "'");
  const nlohmann::json r = registry_json();
  if (a.has("json")) {
    std::printf("%s\n", r.dump(2).c_str());
    return kExitOk;
  }
  for (const auto& [axis, entries] : r.items()) {
    std::printf("model.%s:\n", axis.c_str());
    for (const auto& e : entries) {
      std::string params;
      if (e.contains("params"))
        for (const auto& p : e["params"])
          params += (params.empty() ? "" : ", ") + p["name"].get<std::string>();
      std::printf("  %-16s %s%s\n", e["name"].get<std::string>().c_str(),
                  e["formula"].get<std::string>().c_str(),
                  params.empty() ? "" : ("   [params: " + params + "]").c_str());
    }
  }
  return kExitOk;
}

}  // namespace sl

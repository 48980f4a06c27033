// The subcommands of `stacklab`, one file each (cmd_<name>.cpp). Each takes the arguments
// after its name and returns the process exit code; errors are thrown, main() reports them.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"
#include "util/exit_codes.h"  // kExitOk, kExitError, kExitDiverged, kExitInternal

namespace sl {

using ArgList = std::vector<std::string>;

int cmd_toyblock(const ArgList& args);
int cmd_gradients(const ArgList& args);
int cmd_validate(const ArgList& args);
int cmd_train(const ArgList& args);
int cmd_sample(const ArgList& args);
int cmd_bench(const ArgList& args);
int cmd_probe(const ArgList& args);
int cmd_sweep(const ArgList& args);
int cmd_prune(const ArgList& args);
int cmd_registry(const ArgList& args);

}  // namespace sl

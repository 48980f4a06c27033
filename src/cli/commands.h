// The subcommands of `stacklab`, one file each (cmd_<name>.cpp). Each takes the arguments
// after its name and returns the process exit code; errors are thrown, main() reports them.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"

namespace sl {

// Exit codes, documented in the README.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // bad config, file, flag or data: the message says which
inline constexpr int kExitDiverged =
    3;  // training stopped by the divergence rule (train/trainer.h)
inline constexpr int kExitInternal = 70;  // a bug in stacklab (an internal check failed)

using ArgList = std::vector<std::string>;

int cmd_toyblock(const ArgList& args);
int cmd_gradients(const ArgList& args);
int cmd_validate(const ArgList& args);
int cmd_train(const ArgList& args);
int cmd_sample(const ArgList& args);
int cmd_bench(const ArgList& args);
int cmd_probe(const ArgList& args);
int cmd_sweep(const ArgList& args);
int cmd_registry(const ArgList& args);

}  // namespace sl

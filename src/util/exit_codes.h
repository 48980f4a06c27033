// The exit codes of `stacklab`, documented in docs/usage.md ("Exit codes"): returned by the CLI's
// subcommands and by the sweep executors (src/sweep), and read back from a sweep's child runs.
#pragma once

namespace sl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // bad config, file, flag or data: the message says which
inline constexpr int kExitDiverged =
    3;  // training stopped by the divergence rule (train/trainer.h)
inline constexpr int kExitInternal = 70;  // a bug in stacklab (an internal check failed)

}  // namespace sl

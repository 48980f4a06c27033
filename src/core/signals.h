// The stop request of a long command (train, a local sweep, a Slurm --wait): while a StopSignals
// guard lives, SIGINT and SIGTERM store their number into a flag the command polls, instead of
// ending the process; when the guard ends, both get their default action back. One guard at a
// time (the handler has one flag).
#pragma once
#include <atomic>

namespace sl {

struct StopSignalOptions {
  // A second signal ends the process at once (the first one reset it to its default action).
  bool second_signal_ends = false;
  // Restart a system call the signal interrupted (std::signal's behaviour on glibc). false makes
  // a blocking waitpid() return with EINTR, so a stop reaches a sweep's children at once.
  bool restart_system_calls = true;
};

class StopSignals {
 public:
  StopSignals(std::atomic<int>& flag, StopSignalOptions options);
  ~StopSignals();  // SIGINT and SIGTERM back to their default action
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

}  // namespace sl

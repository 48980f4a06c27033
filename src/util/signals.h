// The stop request of a long command (train, a local sweep, a Slurm --wait): while a StopSignals
// guard lives, SIGINT and SIGTERM (and, when asked, SIGPIPE) store their number into a flag the
// command polls, instead of ending the process; when the guard ends, they get their default
// action back. One guard at a time (the handler has one flag).
#pragma once
#include <atomic>

namespace sl {

struct StopSignalOptions {
  // A second signal ends the process at once (the first one reset it to its default action).
  bool second_signal_ends = false;
  // Restart a system call the signal interrupted (std::signal's behaviour on glibc). false makes
  // a blocking waitpid() return with EINTR, so a stop reaches a sweep's children at once.
  bool restart_system_calls = true;
  // A closed stdout (the reader of a pipe gone: `stacklab train ... | head`) stops the command
  // like SIGINT: SIGPIPE stores its number into the flag (unless a stop is already asked for)
  // and every later write to the pipe fails with EPIPE instead of ending the process.
  bool stop_on_closed_output = false;
};

class StopSignals {
 public:
  StopSignals(std::atomic<int>& flag, StopSignalOptions options);
  ~StopSignals();  // SIGINT, SIGTERM and SIGPIPE back to their default action
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

}  // namespace sl

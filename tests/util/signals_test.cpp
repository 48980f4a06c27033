// Tests for util/signals: a stop signal under a StopSignals guard sets the flag instead of ending
// the process; with second_signal_ends the next one would end it; the guard's end restores the
// default action.
#include "util/signals.h"

#include <csignal>

#include <gtest/gtest.h>

namespace sl {
namespace {

void (*handler_of(int sig))(int) {
  struct sigaction sa {};
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler;
}

TEST(StopSignals, ASignalSetsTheFlagAndTheGuardsEndRestoresTheDefault) {
  std::atomic<int> flag{0};
  {
    StopSignals guard(flag, {});
    std::raise(SIGTERM);
    EXPECT_EQ(flag.load(), SIGTERM);
    EXPECT_NE(handler_of(SIGINT), SIG_DFL) << "a second signal is caught too";
  }
  EXPECT_EQ(handler_of(SIGINT), SIG_DFL);
  EXPECT_EQ(handler_of(SIGTERM), SIG_DFL);
}

TEST(StopSignals, WithSecondSignalEndsTheFirstSignalRestoresItsDefaultAction) {
  std::atomic<int> flag{0};
  StopSignals guard(flag, {.second_signal_ends = true});
  std::raise(SIGINT);
  EXPECT_EQ(flag.load(), SIGINT);
  EXPECT_EQ(handler_of(SIGINT), SIG_DFL) << "the next SIGINT ends the process";
  EXPECT_NE(handler_of(SIGTERM), SIG_DFL);
}

// Pins issue 31's `stacklab train ... | head`: SIGPIPE ended the run with no checkpoint.
TEST(StopSignals, WithStopOnClosedOutputSigpipeIsAStopThatDoesNotOverrideAnEarlierOne) {
  std::atomic<int> flag{0};
  {
    StopSignals guard(flag, {.second_signal_ends = true, .stop_on_closed_output = true});
    std::raise(SIGPIPE);
    EXPECT_EQ(flag.load(), SIGPIPE);
    EXPECT_NE(handler_of(SIGPIPE), SIG_DFL) << "a later write to the closed pipe must not end it";
    flag.store(SIGINT);
    std::raise(SIGPIPE);
    EXPECT_EQ(flag.load(), SIGINT) << "a closed pipe after SIGINT keeps SIGINT's stop";
  }
  EXPECT_EQ(handler_of(SIGPIPE), SIG_DFL);
}

}  // namespace
}  // namespace sl

// SIGINT / SIGTERM as a stop flag (see signals.h).
#include "util/signals.h"

#include <csignal>

#include "util/error.h"

namespace sl {
namespace {

std::atomic<std::atomic<int>*> g_flag{nullptr};  // lock-free: read in the handler

extern "C" void on_stop_signal(int sig) {
  if (std::atomic<int>* f = g_flag.load()) f->store(sig);
}

// A closed pipe asks for a stop only when nothing else has: SIGINT's 130 stays 130.
extern "C" void on_closed_output(int sig) {
  int none = 0;
  if (std::atomic<int>* f = g_flag.load()) f->compare_exchange_strong(none, sig);
}

void set_handler(void (*handler)(int), int flags) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

StopSignals::StopSignals(std::atomic<int>& flag, StopSignalOptions options) {
  std::atomic<int>* none = nullptr;
  SL_CHECK(g_flag.compare_exchange_strong(none, &flag), "a StopSignals guard is already active");
  set_handler(on_stop_signal, (options.second_signal_ends ? SA_RESETHAND : 0) |
                                  (options.restart_system_calls ? SA_RESTART : 0));
  if (options.stop_on_closed_output) {
    struct sigaction sa {};
    sa.sa_handler = on_closed_output;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPIPE, &sa, nullptr);
  }
}

StopSignals::~StopSignals() {
  set_handler(SIG_DFL, 0);
  signal(SIGPIPE, SIG_DFL);
  g_flag.store(nullptr);
}

}  // namespace sl

// SIGINT / SIGTERM as a stop flag (see signals.h).
#include "core/signals.h"

#include <csignal>

#include "core/error.h"

namespace sl {
namespace {

std::atomic<std::atomic<int>*> g_flag{nullptr};  // lock-free: read in the handler

extern "C" void on_stop_signal(int sig) {
  if (std::atomic<int>* f = g_flag.load()) f->store(sig);
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
}

StopSignals::~StopSignals() {
  set_handler(SIG_DFL, 0);
  g_flag.store(nullptr);
}

}  // namespace sl

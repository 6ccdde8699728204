//===- Interrupts.cpp - Ctrl-C and SIGTERM on a thread of their own -------===//

#include "runtime/Train/Interrupts.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <pthread.h>
#include <thread>

namespace sinter::train::interrupts {

namespace {

std::atomic<bool> deferred{false};
std::atomic<bool> arrived{false};

sigset_t handledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// Ends the process as `sig`'s default action does: the one thread where
/// it is unblocked is this one.
[[noreturn]] void dieOf(int sig) {
  std::signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  std::raise(sig);
  std::_Exit(128 + sig); // not reached
}

void receive() {
  const sigset_t set = handledSignals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0)
      continue;
    if (!deferred.load())
      dieOf(sig);
    // A second Ctrl-C while the checkpoint is written ends the run now.
    if (arrived.exchange(true))
      std::_Exit(130);
  }
}

} // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    const sigset_t set = handledSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread(receive).detach();
  });
}

void deferToStepBoundary() {
  install();
  deferred.store(true);
}

bool requested() { return arrived.load(); }

} // namespace sinter::train::interrupts

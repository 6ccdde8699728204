//===- InterruptsTest.cpp - runtime/Train/Interrupts ----------------------===//
//
// Each case runs in a child process of its own (a death test): install()
// changes the process's signal mask for good.
//
//===----------------------------------------------------------------------===//

#include "runtime/Train/Interrupts.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <pthread.h>
#include <thread>
#include <unistd.h>

using namespace sinter::train;

namespace {

bool blocksBoth() {
  sigset_t current;
  pthread_sigmask(SIG_BLOCK, nullptr, &current);
  return sigismember(&current, SIGINT) == 1 &&
         sigismember(&current, SIGTERM) == 1;
}

bool noHandlerFor(int sig) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
}

/// Waits up to 10 s for requested().
bool seenWithin10s() {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!interrupts::requested()) {
    if (std::chrono::steady_clock::now() > until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class Interrupts : public testing::Test {
protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(Interrupts, BeforeDeferringASignalKillsAsItsDefaultDoes) {
  EXPECT_EXIT(
      {
        interrupts::install();
        kill(getpid(), SIGTERM);
        sleep(10);
        _exit(0);
      },
      testing::KilledBySignal(SIGTERM), "");
}

TEST_F(Interrupts, NoThreadRunsAHandler) {
  EXPECT_EXIT(
      {
        interrupts::install();
        bool ok = blocksBoth() && noHandlerFor(SIGINT) && noHandlerFor(SIGTERM);
        // A thread started later (the communication thread, a data
        // loader's, OpenMP's) inherits the mask.
        std::thread([&] { ok = ok && blocksBoth(); }).join();
        interrupts::deferToStepBoundary();
        ok = ok && noHandlerFor(SIGINT) && !interrupts::requested();
        kill(getpid(), SIGINT);
        ok = ok && seenWithin10s() && blocksBoth();
        _exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

TEST_F(Interrupts, TheFirstDeferredSignalIsRecordedTheSecondExits130) {
  EXPECT_EXIT(
      {
        interrupts::deferToStepBoundary(); // installs
        kill(getpid(), SIGTERM);
        if (!seenWithin10s())
          _exit(1);
        kill(getpid(), SIGINT);
        sleep(10);
        _exit(2);
      },
      testing::ExitedWithCode(130), "");
}

} // namespace

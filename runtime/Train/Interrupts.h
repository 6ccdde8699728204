//===- Interrupts.h - Ctrl-C and SIGTERM on a thread of their own ---------===//
//
// A signal handler runs on whichever thread the kernel picks, below that
// thread's stack pointer, in the middle of whatever it was doing. During
// data-parallel runs a SIGINT handled on the compute thread corrupted the
// heap (glibc aborted in a later free(), in about one Ctrl-C in 20 under
// load). Signals with a no-op handler sent 100 us apart to a rank's main
// thread aborted the job every time, and never when sent to its other
// threads; under valgrind that thread's stack pointer moved into a heap
// block oneDNN had allocated, during a matmul, so a signal frame pushed
// there lands on heap memory. Hence no thread of the training binary ever
// runs a handler for SIGINT or SIGTERM: install() blocks them in the
// calling thread, which every thread started later inherits, and one
// thread of its own waits for them with sigwait().
//
// Until deferToStepBoundary(), a signal ends the process as its default
// action would (killed by that signal). After it, the first one sets
// requested(), which the training loop reads at the end of each step; a
// second ends the process with status 130 at once.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_TRAIN_INTERRUPTS_H
#define SINTER_RUNTIME_TRAIN_INTERRUPTS_H

namespace sinter::train::interrupts {

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread it
/// starts from now on) and starts the thread that receives them. Call it
/// first in main(), before any other thread exists; later calls do nothing.
void install();

/// From now on the first SIGINT or SIGTERM only sets requested(), and a
/// second exits with status 130. Installs first if install() was not
/// called.
void deferToStepBoundary();

/// Whether a deferred SIGINT or SIGTERM has arrived.
bool requested();

} // namespace sinter::train::interrupts

#endif // SINTER_RUNTIME_TRAIN_INTERRUPTS_H

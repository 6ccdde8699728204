//===- Comm.h - everything runtime/Comm offers, in one include ------------===//
//
// The library's public headers: DistEnv.h (where this process sits in the
// job, from the launcher's environment), Communicator.h (connect() and the
// collectives) and CommQueue.h (collectives in order on a background
// thread). TcpStore.h is public too but needs Gloo's headers, so it is not
// included here.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_COMM_H
#define SINTER_RUNTIME_COMM_COMM_H

#include "runtime/Comm/CommQueue.h"
#include "runtime/Comm/Communicator.h"
#include "runtime/Comm/DistEnv.h"

#endif // SINTER_RUNTIME_COMM_COMM_H

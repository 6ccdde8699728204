//===- DistEnv.h - where this process sits in a distributed job -----------===//
//
// A training job of N processes is started by a launcher, and each launcher
// tells a process its place through environment variables of its own. This
// header reads them into one DistEnv, in this order of precedence:
//
//   torchrun   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
//              MASTER_ADDR, MASTER_PORT
//   Open MPI   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   MPICH/PMI  PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
//   Slurm      SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
//              SLURM_NTASKS_PER_NODE or the first number of
//              SLURM_TASKS_PER_NODE ("4(x2),3" -> 4)
//
// A launcher is chosen by its rank or size variable; nothing set means a
// single process. A later launcher's rank or world size that differs is
// kept to explain a rendezvous that waits for ranks nobody started, or
// where two processes claim one rank (precedence). An empty variable counts
// as unset. MPI and Slurm start processes but no rendezvous, so the store
// is found through MASTER_ADDR and MASTER_PORT (default 29500) or
// SINTER_STORE_DIR (a directory on a file system every rank sees; it wins
// over MASTER_ADDR). Without either, MASTER_ADDR defaults to 127.0.0.1 when
// every rank is on this host, and under Slurm on several hosts to the first
// host of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST, SLURM_NODELIST),
// where srun places task 0; rank 0 checks that it runs there.
//
// SINTER_SHM_DISABLE=1 keeps ranks on one host off shared memory (0 or
// unset: they use it when they can).
//
// SINTER_CPU_BIND=cores says a launcher bound this process to CPUs of its
// own (sinter-launch does, docs/Distributed.md): its threads then default to
// every CPU it may run on, not to the host's share of one rank (none or
// unset: the CPUs it sees are shared with the other ranks on this host).
//
// Every store key is prefixed by a run id, so that two jobs sharing a store
// directory or a port never read each other's keys: SINTER_RUN_ID,
// TORCHELASTIC_RUN_ID, Open MPI's job id (OMPI_MCA_ess_base_jobid, or any
// PMIx launcher's PMIX_NAMESPACE), Slurm's job and step id, else one made
// from MASTER_PORT. Two mpirun jobs on one host both default to port 29500:
// the second's rank 0 cannot serve it and says so, and its other ranks,
// reaching the first's store, find no key of their own run there. A
// torchelastic restart (TORCHELASTIC_RESTART_COUNT) gets keys of its own, since
// a store that still holds a dead rank's address makes a late joiner wait for
// it (five times the timeout, as measured).
//
// Malformed values are errors, never guesses: each is InvalidArgument, one
// line naming the variable and its value.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_DISTENV_H
#define SINTER_RUNTIME_COMM_DISTENV_H

#include "absl/status/statusor.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace sinter::comm {

/// Where this process sits in the job, read from the environment.
struct DistEnv {
  int rank = 0, worldSize = 1, localRank = 0, localWorldSize = 1;
  std::string masterAddr; // empty: no TCP store
  int masterPort = 0;
  std::string storeDir; // SINTER_STORE_DIR: a shared-FS file store instead
  /// SINTER_RUN_ID or TORCHELASTIC_RUN_ID, else derived from the MPI job,
  /// Slurm's job or MASTER_PORT; prefixes every store key.
  std::string runId;
  /// TORCHELASTIC_RESTART_COUNT (0 if unset): each restart has its own keys.
  int restartCount = 0;
  /// "torchrun", "Open MPI", "MPICH", "Slurm", "single process".
  std::string source;
  /// Where a launcher later in the order of precedence sets another rank or
  /// world size (a launch inside another, or variables left in the shell
  /// from an earlier one): "this rank is torchrun's RANK=0 of WORLD_SIZE=3,
  /// taken over Open MPI's OMPI_COMM_WORLD_RANK=1 and
  /// OMPI_COMM_WORLD_SIZE=2"; empty otherwise. Rendezvous says it where
  /// ranks never come or two processes claim one rank.
  std::string precedence;
  /// SINTER_SHM_DISABLE=1 (as NCCL_SHM_DISABLE) clears it: the all-reduces
  /// of ranks on one host then go over TCP too.
  bool sharedMemory = true;
  /// SINTER_CPU_BIND=cores: the CPUs this process may run on are its own.
  bool ownCpus = false;

  /// The prefix of every store key: runId, and the restart when not 0.
  std::string storePrefix() const;
};

/// getenv-like: the value of a variable, or nullptr when it is not set.
using EnvLookup = std::function<const char *(const char *)>;
/// The process's own environment (std::getenv).
EnvLookup processEnv();

/// The DistEnv the environment describes (see the file comment). Errors are
/// InvalidArgument: a value that is not an integer, a negative one, rank >=
/// world size, a port out of range, RANK set without WORLD_SIZE, several
/// hosts and no store address, a Slurm rank 0 away from its step's first
/// host. `thisHost` is this machine's name (empty: hostName()).
absl::StatusOr<DistEnv> readDistEnv(const EnvLookup &env = processEnv(),
                                    std::string thisHost = "");

/// The first host of a Slurm host list, as SLURM_STEP_NODELIST writes it:
/// "node01" of "node[01-04,07],gpu3", every bracket's first number as
/// written (zero padding kept; "r[1-2]n[05-06]" gives "r1n05"). nullopt
/// when the list is empty or its brackets are not numbers.
std::optional<std::string> firstSlurmHost(std::string_view list);

/// The threads a rank runs by default, given the CPUs it may run on
/// (omp_get_num_procs): all of them when they are its own (ownCpus) or it
/// is alone on its host, else its share of the host's, at least 1.
int defaultThreads(const DistEnv &dist, int cpus);

/// This machine's name (gethostname), empty when it has none.
std::string hostName();

/// The address this rank's Gloo device should listen on: SINTER_HOST if set,
/// else 127.0.0.1 when every rank is on this host, else the host's name.
std::string listenHostname(const DistEnv &dist,
                           const EnvLookup &env = processEnv());

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_DISTENV_H

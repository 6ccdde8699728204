//===- DistEnv.cpp - where this process sits in a distributed job ---------===//
//
// Reading is in two steps: the launcher's four numbers (rank, world size,
// local rank, local world size), then what every launcher shares (the store
// address, the run id). Each number is parsed strictly (the whole value, in
// range) so that a typo fails here, on every rank, instead of as a
// rendezvous that waits for a rank that will never come.
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/DistEnv.h"

#include "runtime/Support/Status.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <unistd.h>

#include "absl/strings/string_view.h"
#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <utility>
#include <vector>

namespace sinter::comm {
namespace {

/// The four numbers one launcher gives, by variable name.
struct LauncherVars {
  const char *source;
  const char *rank, *size, *localRank, *localSize;
};

constexpr LauncherVars kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    // The local size is read separately (two variables, one of them a list).
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

constexpr int kDefaultMasterPort = 29500;

/// The variable's value, nullopt when unset or empty.
std::optional<std::string> lookup(const EnvLookup &env, const char *name) {
  const char *value = env(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

absl::Status badValue(const char *name, absl::string_view value,
                      absl::string_view why) {
  return InvalidArgumentError(
      SINTER_HERE,
      absl::StrCat("environment variable ", name, "='", value, "' ", why));
}

/// The whole of `text` as an integer in [lo, hi].
absl::StatusOr<int> parseInt(const char *name, absl::string_view text, int lo,
                             int hi) {
  long long value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    return badValue(name, text, "is not an integer");
  if (hi != INT_MAX && (value < lo || value > hi))
    return badValue(name, text, absl::StrCat("is not in [", lo, ", ", hi, "]"));
  if (value < lo)
    return badValue(name, text, absl::StrCat("is below ", lo));
  if (value > hi)
    return badValue(name, text, "is too large");
  return static_cast<int>(value);
}

/// A variable that must be an integer >= lo when set; nullopt when unset.
absl::StatusOr<std::optional<int>> readInt(const EnvLookup &env,
                                           const char *name, int lo) {
  std::optional<std::string> text = lookup(env, name);
  if (!text)
    return std::optional<int>();
  SINTER_ASSIGN_OR_RETURN(int value, parseInt(name, *text, lo, INT_MAX));
  return std::optional<int>(value);
}

/// Slurm's tasks on this node: SLURM_NTASKS_PER_NODE, or the first count of
/// SLURM_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of 3 nodes, then 1).
absl::StatusOr<std::optional<int>> readSlurmLocalSize(const EnvLookup &env) {
  SINTER_ASSIGN_OR_RETURN(std::optional<int> perNode,
                          readInt(env, "SLURM_NTASKS_PER_NODE", 1));
  if (perNode)
    return perNode;
  std::optional<std::string> list = lookup(env, "SLURM_TASKS_PER_NODE");
  if (!list)
    return std::optional<int>();
  absl::string_view first(*list);
  first = first.substr(0, first.find_first_of("(,"));
  absl::StatusOr<int> count =
      parseInt("SLURM_TASKS_PER_NODE", first, 1, INT_MAX);
  if (!count.ok())
    return badValue("SLURM_TASKS_PER_NODE", *list,
                    "does not start with a task count");
  return std::optional<int>(*count);
}

/// "this rank is torchrun's RANK=0 of WORLD_SIZE=2, taken over Open MPI's
/// OMPI_COMM_WORLD_RANK=1": the rank and world size variables of the
/// launchers after `chosen` whose values differ from `rank` and `size`
/// (DistEnv::precedence); empty when none does.
std::string otherLaunchers(const EnvLookup &env, const LauncherVars &chosen,
                           int rank, int size) {
  std::vector<std::string> others;
  for (const LauncherVars *vars = &chosen + 1; vars != std::end(kLaunchers);
       ++vars) {
    std::vector<std::string> differ;
    for (auto [name, ours] :
         {std::pair(vars->rank, rank), std::pair(vars->size, size)}) {
      std::optional<std::string> value = lookup(env, name);
      if (value && *value != std::to_string(ours))
        differ.push_back(absl::StrCat(name, "=", *value));
    }
    if (!differ.empty())
      others.push_back(
          absl::StrCat(vars->source, "'s ", absl::StrJoin(differ, " and ")));
  }
  if (others.empty())
    return "";
  return absl::StrCat("this rank is ", chosen.source, "'s ", chosen.rank, "=",
                      rank, " of ", chosen.size, "=", size, ", taken over ",
                      absl::StrJoin(others, ", "));
}

/// Fills rank, sizes and source from the first launcher whose rank or size
/// variable is set. Returns false when none is.
absl::StatusOr<bool> readLauncher(const EnvLookup &env, DistEnv &dist) {
  for (const LauncherVars &vars : kLaunchers) {
    SINTER_ASSIGN_OR_RETURN(std::optional<int> rank,
                            readInt(env, vars.rank, 0));
    SINTER_ASSIGN_OR_RETURN(std::optional<int> size,
                            readInt(env, vars.size, 1));
    if (!rank && !size)
      continue;
    if (!size)
      return InvalidArgumentError(
          SINTER_HERE, absl::StrCat("environment variable ", vars.rank, "='",
                                    *rank, "' is set but ", vars.size,
                                    " is not (", vars.source, ")"));
    if (!rank)
      return InvalidArgumentError(
          SINTER_HERE, absl::StrCat("environment variable ", vars.size, "='",
                                    *size, "' is set but ", vars.rank,
                                    " is not (", vars.source, ")"));
    if (*rank >= *size)
      return badValue(vars.rank, std::to_string(*rank),
                      absl::StrCat("is not below ", vars.size, "=", *size));
    SINTER_ASSIGN_OR_RETURN(std::optional<int> localRank,
                            readInt(env, vars.localRank, 0));
    std::optional<int> localSize;
    const char *localSizeName = vars.localSize;
    if (localSizeName) {
      SINTER_ASSIGN_OR_RETURN(localSize, readInt(env, localSizeName, 1));
    } else {
      localSizeName = lookup(env, "SLURM_NTASKS_PER_NODE")
                          ? "SLURM_NTASKS_PER_NODE"
                          : "SLURM_TASKS_PER_NODE";
      SINTER_ASSIGN_OR_RETURN(localSize, readSlurmLocalSize(env));
    }
    dist.source = vars.source;
    dist.rank = *rank;
    dist.worldSize = *size;
    dist.precedence = otherLaunchers(env, vars, *rank, *size);
    if (!localRank && !localSize) {
      // A hand-made launch (RANK and WORLD_SIZE only) is taken to be on one
      // host; MPI and Slurm always give the local rank.
      dist.localRank = *rank;
      dist.localWorldSize = *size;
    } else {
      dist.localRank = localRank.value_or(0);
      dist.localWorldSize = localSize.value_or(1);
    }
    if (dist.localWorldSize > dist.worldSize)
      return badValue(localSizeName, std::to_string(dist.localWorldSize),
                      absl::StrCat("is above ", vars.size, "=", *size));
    if (dist.localRank >= dist.localWorldSize)
      return badValue(vars.localRank, std::to_string(dist.localRank),
                      absl::StrCat("is not below the local world size ",
                                   dist.localWorldSize));
    return true;
  }
  return false;
}

/// The variable that holds the hosts of a Slurm job step, and its value.
std::optional<std::pair<const char *, std::string>>
slurmNodeList(const EnvLookup &env) {
  for (const char *name :
       {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})
    if (std::optional<std::string> list = lookup(env, name))
      return std::pair(name, *list);
  return std::nullopt;
}

/// The host name up to its first dot, lower case: "node01" of
/// "Node01.cluster.local".
std::string shortHost(std::string_view host) {
  return absl::AsciiStrToLower(std::string(host.substr(0, host.find('.'))));
}

} // namespace

std::optional<std::string> firstSlurmHost(std::string_view list) {
  std::string host;
  size_t i = 0;
  while (i < list.size() && list[i] != ',') {
    if (list[i] == ']')
      return std::nullopt;
    if (list[i] != '[') {
      host += list[i++];
      continue;
    }
    size_t close = list.find(']', i);
    if (close == std::string_view::npos)
      return std::nullopt;
    std::string_view ranges = list.substr(i + 1, close - i - 1);
    std::string_view first = ranges.substr(0, ranges.find_first_of(",-"));
    if (first.empty() ||
        !std::all_of(first.begin(), first.end(), absl::ascii_isdigit))
      return std::nullopt;
    host += first;
    i = close + 1;
  }
  if (host.empty())
    return std::nullopt;
  return host;
}

std::string DistEnv::storePrefix() const {
  if (restartCount == 0)
    return runId;
  return absl::StrCat(runId, "/restart", restartCount);
}

EnvLookup processEnv() {
  return [](const char *name) -> const char * { return std::getenv(name); };
}

absl::StatusOr<DistEnv> readDistEnv(const EnvLookup &env,
                                    std::string thisHost) {
  DistEnv dist;
  SINTER_ASSIGN_OR_RETURN(bool launched, readLauncher(env, dist));
  if (!launched) {
    dist.source = "single process";
    return dist;
  }

  dist.storeDir = lookup(env, "SINTER_STORE_DIR").value_or("");
  dist.masterAddr = lookup(env, "MASTER_ADDR").value_or("");
  dist.masterPort = kDefaultMasterPort;
  if (std::optional<std::string> port = lookup(env, "MASTER_PORT")) {
    SINTER_ASSIGN_OR_RETURN(dist.masterPort,
                            parseInt("MASTER_PORT", *port, 1, 65535));
  }
  if (dist.masterAddr.empty() && dist.storeDir.empty() && dist.worldSize > 1 &&
      dist.localWorldSize != dist.worldSize && dist.source == "Slurm") {
    // srun on several hosts: rank 0 runs on the step's first host (task 0
    // is placed there by every distribution but an arbitrary one).
    if (auto nodes = slurmNodeList(env)) {
      auto [name, list] = *nodes;
      std::optional<std::string> first = firstSlurmHost(list);
      if (!first)
        return badValue(name, list, "is not a Slurm host list");
      if (thisHost.empty())
        thisHost = hostName();
      if (dist.rank == 0 && shortHost(thisHost) != shortHost(*first))
        return InvalidArgumentError(
            SINTER_HERE,
            absl::StrCat("rank 0 runs on ", thisHost, ", not on ", *first,
                         ", the first host of ", name, "='", list,
                         "', which MASTER_ADDR defaults to under Slurm: set "
                         "MASTER_ADDR to rank 0's host"));
      dist.masterAddr = *first;
    }
  }
  if (dist.masterAddr.empty() && dist.storeDir.empty() && dist.worldSize > 1) {
    if (dist.localWorldSize != dist.worldSize)
      return InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat(dist.source, " started ", dist.worldSize,
                       " ranks on several hosts (", dist.localWorldSize,
                       " on this one) but MASTER_ADDR is not set: set "
                       "MASTER_ADDR and MASTER_PORT to rank 0's host and a "
                       "free port, or SINTER_STORE_DIR to a shared directory"));
    dist.masterAddr = "127.0.0.1";
  }

  if (std::optional<std::string> off = lookup(env, "SINTER_SHM_DISABLE")) {
    SINTER_ASSIGN_OR_RETURN(int disable,
                            parseInt("SINTER_SHM_DISABLE", *off, 0, 1));
    dist.sharedMemory = disable == 0;
  }
  if (std::optional<std::string> bind = lookup(env, "SINTER_CPU_BIND")) {
    if (*bind != "cores" && *bind != "none")
      return badValue("SINTER_CPU_BIND", *bind, "is not cores or none");
    dist.ownCpus = *bind == "cores";
  }
  SINTER_ASSIGN_OR_RETURN(std::optional<int> restart,
                          readInt(env, "TORCHELASTIC_RESTART_COUNT", 0));
  dist.restartCount = restart.value_or(0);
  if (auto id = lookup(env, "SINTER_RUN_ID")) {
    dist.runId = *id;
  } else if (auto id = lookup(env, "TORCHELASTIC_RUN_ID")) {
    dist.runId = *id;
  } else if (auto job = lookup(env, "OMPI_MCA_ess_base_jobid")) {
    // Before Slurm's: every mpirun in one allocation is a job of its own.
    dist.runId = absl::StrCat("ompi-", *job);
  } else if (auto space = lookup(env, "PMIX_NAMESPACE")) {
    dist.runId = absl::StrCat("pmix-", *space);
  } else if (auto job = lookup(env, "SLURM_JOB_ID")) {
    dist.runId = absl::StrCat("slurm-", *job, ".",
                              lookup(env, "SLURM_STEP_ID").value_or("0"));
  } else {
    dist.runId = absl::StrCat("port", dist.masterPort);
  }
  return dist;
}

int defaultThreads(const DistEnv &dist, int cpus) {
  if (dist.ownCpus)
    return std::max(1, cpus);
  return std::max(1, cpus / dist.localWorldSize);
}

std::string hostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0)
    return "";
  return name;
}

std::string listenHostname(const DistEnv &dist, const EnvLookup &env) {
  if (std::optional<std::string> host = lookup(env, "SINTER_HOST"))
    return *host;
  if (dist.localWorldSize == dist.worldSize)
    return "127.0.0.1";
  std::string name = hostName();
  return name.empty() ? "127.0.0.1" : name;
}

} // namespace sinter::comm

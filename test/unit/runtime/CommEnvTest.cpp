//===- CommEnvTest.cpp - readDistEnv for each launcher's variables --------===//
//
// Each launcher's variables read into the DistEnv they describe, and each
// malformed value is one InvalidArgument line naming the variable. The
// environment is a map, never the process's own.
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/DistEnv.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <map>
#include <string>

namespace sinter::comm {
namespace {

using ::testing::HasSubstr;

using Vars = std::map<std::string, std::string>;

EnvLookup lookupIn(const Vars &vars) {
  return [&vars](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

absl::StatusOr<DistEnv> read(const Vars &vars) {
  return readDistEnv(lookupIn(vars));
}

/// The error of reading vars; fails the test if reading succeeds.
std::string errorOf(const Vars &vars) {
  absl::StatusOr<DistEnv> env = read(vars);
  EXPECT_FALSE(env.ok());
  if (env.ok())
    return "";
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  std::string message(env.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

TEST(DistEnv, NothingSetIsOneProcess) {
  absl::StatusOr<DistEnv> env = read({{"MASTER_ADDR", "10.0.0.1"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->source, "single process");
  EXPECT_EQ(env->rank, 0);
  EXPECT_EQ(env->worldSize, 1);
  EXPECT_EQ(env->localWorldSize, 1);
  EXPECT_EQ(env->masterAddr, "");
}

TEST(DistEnv, Torchrun) {
  absl::StatusOr<DistEnv> env = read({{"RANK", "5"},
                                      {"WORLD_SIZE", "8"},
                                      {"LOCAL_RANK", "1"},
                                      {"LOCAL_WORLD_SIZE", "4"},
                                      {"MASTER_ADDR", "node0"},
                                      {"MASTER_PORT", "1234"},
                                      {"TORCHELASTIC_RUN_ID", "job7"},
                                      {"TORCHELASTIC_RESTART_COUNT", "2"},
                                      // Lower precedence: ignored.
                                      {"OMPI_COMM_WORLD_RANK", "0"},
                                      {"OMPI_COMM_WORLD_SIZE", "2"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->source, "torchrun");
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->worldSize, 8);
  EXPECT_EQ(env->localRank, 1);
  EXPECT_EQ(env->localWorldSize, 4);
  EXPECT_EQ(env->masterAddr, "node0");
  EXPECT_EQ(env->masterPort, 1234);
  EXPECT_EQ(env->runId, "job7");
  EXPECT_EQ(env->restartCount, 2);
  EXPECT_EQ(env->storePrefix(), "job7/restart2");
  EXPECT_EQ(env->precedence,
            "this rank is torchrun's RANK=5 of WORLD_SIZE=8, taken over Open "
            "MPI's OMPI_COMM_WORLD_RANK=0 and OMPI_COMM_WORLD_SIZE=2");
}

// A rank or world size that another launcher also sets, differently, is
// kept to say why ranks never come or two claim one (Rendezvous); agreeing
// ones, or none, say nothing.
TEST(DistEnv, OtherLaunchersPlaces) {
  absl::StatusOr<DistEnv> nested = read({{"RANK", "1"},
                                         {"WORLD_SIZE", "2"},
                                         {"PMI_RANK", "1"},
                                         {"PMI_SIZE", "2"},
                                         {"SLURM_PROCID", "0"},
                                         {"SLURM_NTASKS", "1"}});
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->precedence,
            "this rank is torchrun's RANK=1 of WORLD_SIZE=2, taken over "
            "Slurm's SLURM_PROCID=0 and SLURM_NTASKS=1");
  absl::StatusOr<DistEnv> stale = read({{"RANK", "0"},
                                        {"WORLD_SIZE", "2"},
                                        {"OMPI_COMM_WORLD_RANK", "1"},
                                        {"OMPI_COMM_WORLD_SIZE", "2"},
                                        {"PMI_SIZE", "x"}});
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(stale->precedence,
            "this rank is torchrun's RANK=0 of WORLD_SIZE=2, taken over Open "
            "MPI's OMPI_COMM_WORLD_RANK=1, MPICH's PMI_SIZE=x");
  absl::StatusOr<DistEnv> agree = read({{"RANK", "1"},
                                        {"WORLD_SIZE", "2"},
                                        {"OMPI_COMM_WORLD_RANK", "1"},
                                        {"OMPI_COMM_WORLD_SIZE", "2"}});
  ASSERT_TRUE(agree.ok()) << agree.status();
  EXPECT_EQ(agree->precedence, "");
  absl::StatusOr<DistEnv> alone = read({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->precedence, "");
}

TEST(DistEnv, RankAndWorldSizeAloneAreOneHost) {
  absl::StatusOr<DistEnv> env = read({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->localRank, 1);
  EXPECT_EQ(env->localWorldSize, 2);
  EXPECT_EQ(env->masterAddr, "127.0.0.1");
  EXPECT_EQ(env->masterPort, 29500);
  EXPECT_EQ(env->runId, "port29500");
  EXPECT_EQ(env->storePrefix(), "port29500");
}

TEST(DistEnv, OpenMpi) {
  absl::StatusOr<DistEnv> env = read({{"OMPI_COMM_WORLD_RANK", "2"},
                                      {"OMPI_COMM_WORLD_SIZE", "4"},
                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                                      {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                      {"MASTER_PORT", "4000"},
                                      {"SINTER_RUN_ID", "mine"},
                                      {"TORCHELASTIC_RUN_ID", "theirs"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->source, "Open MPI");
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->worldSize, 4);
  EXPECT_EQ(env->localRank, 2);
  EXPECT_EQ(env->localWorldSize, 4);
  // Every rank local: the store is on this host.
  EXPECT_EQ(env->masterAddr, "127.0.0.1");
  EXPECT_EQ(env->masterPort, 4000);
  EXPECT_EQ(env->runId, "mine");
}

// Without SINTER_RUN_ID, an mpirun job's keys are its own (its job id), so
// two on one port never mix; Slurm's comes after it (mpirun inside an
// allocation), the port last.
TEST(DistEnv, MpiJobsHaveRunIdsOfTheirOwn) {
  Vars vars = {{"OMPI_COMM_WORLD_RANK", "0"},
               {"OMPI_COMM_WORLD_SIZE", "2"},
               {"OMPI_MCA_ess_base_jobid", "296812545"},
               {"PMIX_NAMESPACE", "296812545"},
               {"SLURM_JOB_ID", "77"}};
  absl::StatusOr<DistEnv> ompi = read(vars);
  ASSERT_TRUE(ompi.ok()) << ompi.status();
  EXPECT_EQ(ompi->runId, "ompi-296812545");
  vars.erase("OMPI_MCA_ess_base_jobid");
  vars["PMIX_NAMESPACE"] = "prterun-vm-1234@1";
  absl::StatusOr<DistEnv> pmix = read(vars);
  ASSERT_TRUE(pmix.ok()) << pmix.status();
  EXPECT_EQ(pmix->runId, "pmix-prterun-vm-1234@1");
  vars.erase("PMIX_NAMESPACE");
  absl::StatusOr<DistEnv> slurm = read(vars);
  ASSERT_TRUE(slurm.ok()) << slurm.status();
  EXPECT_EQ(slurm->runId, "slurm-77.0");
  vars.erase("SLURM_JOB_ID");
  absl::StatusOr<DistEnv> port = read(vars);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(port->runId, "port29500");
}

TEST(DistEnv, Mpich) {
  absl::StatusOr<DistEnv> env = read({{"PMI_RANK", "1"},
                                      {"PMI_SIZE", "3"},
                                      {"MPI_LOCALRANKID", "0"},
                                      {"MPI_LOCALNRANKS", "1"},
                                      {"MASTER_ADDR", "head"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->source, "MPICH");
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->worldSize, 3);
  EXPECT_EQ(env->localRank, 0);
  EXPECT_EQ(env->localWorldSize, 1);
  EXPECT_EQ(env->masterAddr, "head");
}

TEST(DistEnv, SlurmTasksPerNodeList) {
  absl::StatusOr<DistEnv> env = read({{"SLURM_PROCID", "3"},
                                      {"SLURM_NTASKS", "7"},
                                      {"SLURM_LOCALID", "1"},
                                      {"SLURM_TASKS_PER_NODE", "2(x3),1"},
                                      {"SLURM_JOB_ID", "991"},
                                      {"SLURM_STEP_ID", "4"},
                                      {"SINTER_STORE_DIR", "/shared/rdzv"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->source, "Slurm");
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->worldSize, 7);
  EXPECT_EQ(env->localRank, 1);
  EXPECT_EQ(env->localWorldSize, 2);
  EXPECT_EQ(env->storeDir, "/shared/rdzv");
  EXPECT_EQ(env->masterAddr, ""); // the file store; no TCP store
  EXPECT_EQ(env->runId, "slurm-991.4");
}

TEST(DistEnv, SlurmNtasksPerNodeWins) {
  absl::StatusOr<DistEnv> env = read({{"SLURM_PROCID", "0"},
                                      {"SLURM_NTASKS", "2"},
                                      {"SLURM_LOCALID", "0"},
                                      {"SLURM_NTASKS_PER_NODE", "2"},
                                      {"SLURM_TASKS_PER_NODE", "1(x2)"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->localWorldSize, 2);
  EXPECT_EQ(env->masterAddr, "127.0.0.1");
}

TEST(DistEnv, SeveralHostsNeedAStore) {
  std::string message = errorOf({{"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "4"},
                                 {"SLURM_LOCALID", "0"},
                                 {"SLURM_TASKS_PER_NODE", "2(x2)"}});
  EXPECT_THAT(message, HasSubstr("MASTER_ADDR"));
  EXPECT_THAT(message, HasSubstr("SINTER_STORE_DIR"));
  EXPECT_THAT(message, HasSubstr("Slurm"));
  // An address, or a store directory, is enough.
  EXPECT_TRUE(read({{"OMPI_COMM_WORLD_RANK", "0"},
                    {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"MASTER_ADDR", "head"}})
                  .ok());
  EXPECT_TRUE(read({{"OMPI_COMM_WORLD_RANK", "0"},
                    {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"SINTER_STORE_DIR", "/shared"}})
                  .ok());
}

// srun on several hosts needs no MASTER_ADDR: rank 0 runs on the step's
// first host, where every other rank finds the store; rank 0 checks that
// it does run there.
TEST(DistEnv, SlurmStoreIsOnTheFirstHost) {
  Vars vars = {{"SLURM_PROCID", "2"},
               {"SLURM_NTASKS", "4"},
               {"SLURM_LOCALID", "0"},
               {"SLURM_TASKS_PER_NODE", "2(x2)"},
               {"SLURM_JOB_NODELIST", "gpu[1-9]"},
               {"SLURM_STEP_NODELIST", "node[07-08]"}};
  absl::StatusOr<DistEnv> other = readDistEnv(lookupIn(vars), "node08");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->masterAddr, "node07");
  EXPECT_EQ(other->masterPort, 29500);
  vars["SLURM_PROCID"] = "0";
  absl::StatusOr<DistEnv> zero =
      readDistEnv(lookupIn(vars), "Node07.cluster.example");
  ASSERT_TRUE(zero.ok()) << zero.status();
  EXPECT_EQ(zero->masterAddr, "node07");
  absl::StatusOr<DistEnv> elsewhere = readDistEnv(lookupIn(vars), "node08");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(std::string(elsewhere.status().message()),
            "rank 0 runs on node08, not on node07, the first host of "
            "SLURM_STEP_NODELIST='node[07-08]', which MASTER_ADDR defaults "
            "to under Slurm: set MASTER_ADDR to rank 0's host");
  // MASTER_ADDR or a store directory, when given, is what counts.
  vars["MASTER_ADDR"] = "login1";
  absl::StatusOr<DistEnv> given = readDistEnv(lookupIn(vars), "node08");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->masterAddr, "login1");
  vars.erase("MASTER_ADDR");
  vars.erase("SLURM_STEP_NODELIST");
  vars["SLURM_PROCID"] = "1";
  absl::StatusOr<DistEnv> job = readDistEnv(lookupIn(vars), "gpu1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->masterAddr, "gpu1");
  vars["SLURM_JOB_NODELIST"] = "gpu[x-y]";
  EXPECT_THAT(errorOf(vars),
              HasSubstr("SLURM_JOB_NODELIST='gpu[x-y]' is not a Slurm host "
                        "list"));
}

TEST(DistEnv, FirstSlurmHost) {
  EXPECT_EQ(firstSlurmHost("node01"), "node01");
  EXPECT_EQ(firstSlurmHost("node[01-04,07],gpu3"), "node01");
  EXPECT_EQ(firstSlurmHost("gpu3,node[1-2]"), "gpu3");
  EXPECT_EQ(firstSlurmHost("node[7,3-4]"), "node7");
  EXPECT_EQ(firstSlurmHost("rack[1-2]-n[005-006].ib"), "rack1-n005.ib");
  EXPECT_EQ(firstSlurmHost(""), std::nullopt);
  EXPECT_EQ(firstSlurmHost("node[01-04"), std::nullopt);
  EXPECT_EQ(firstSlurmHost("node]"), std::nullopt);
  EXPECT_EQ(firstSlurmHost("node[]"), std::nullopt);
  EXPECT_EQ(firstSlurmHost(",node1"), std::nullopt);
}

TEST(DistEnv, NotAnInteger) {
  EXPECT_THAT(errorOf({{"RANK", "one"}, {"WORLD_SIZE", "2"}}),
              HasSubstr("RANK='one' is not an integer"));
  EXPECT_THAT(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2x"}}),
              HasSubstr("WORLD_SIZE='2x' is not an integer"));
  EXPECT_THAT(errorOf({{"RANK", "0"}, {"WORLD_SIZE", " 2"}}),
              HasSubstr("WORLD_SIZE=' 2'"));
  EXPECT_THAT(errorOf({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"LOCAL_RANK", "0.5"},
                       {"LOCAL_WORLD_SIZE", "2"}}),
              HasSubstr("LOCAL_RANK='0.5'"));
  EXPECT_THAT(errorOf({{"PMI_RANK", "0"}, {"PMI_SIZE", "99999999999"}}),
              HasSubstr("PMI_SIZE='99999999999'"));
  EXPECT_THAT(errorOf({{"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "2"},
                       {"SLURM_TASKS_PER_NODE", "(x2)"}}),
              HasSubstr("SLURM_TASKS_PER_NODE='(x2)'"));
  EXPECT_THAT(errorOf({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"TORCHELASTIC_RESTART_COUNT", "x"}}),
              HasSubstr("TORCHELASTIC_RESTART_COUNT='x'"));
}

TEST(DistEnv, OutOfRange) {
  EXPECT_THAT(errorOf({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
              HasSubstr("RANK='2' is not below WORLD_SIZE=2"));
  EXPECT_THAT(errorOf({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}),
              HasSubstr("RANK='-1' is below 0"));
  EXPECT_THAT(
      errorOf({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}}),
      HasSubstr("OMPI_COMM_WORLD_SIZE='0' is below 1"));
  EXPECT_THAT(errorOf({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"LOCAL_RANK", "2"},
                       {"LOCAL_WORLD_SIZE", "2"}}),
              HasSubstr("LOCAL_RANK='2'"));
  EXPECT_THAT(errorOf({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"LOCAL_RANK", "0"},
                       {"LOCAL_WORLD_SIZE", "3"}}),
              HasSubstr("LOCAL_WORLD_SIZE='3' is above WORLD_SIZE=2"));
  EXPECT_THAT(
      errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "65536"}}),
      HasSubstr("MASTER_PORT='65536' is not in [1, 65535]"));
  EXPECT_THAT(
      errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "0"}}),
      HasSubstr("MASTER_PORT='0'"));
}

TEST(DistEnv, SharedMemoryCanBeTurnedOff) {
  absl::StatusOr<DistEnv> env = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->sharedMemory);
  env = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SINTER_SHM_DISABLE", "0"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->sharedMemory);
  env = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SINTER_SHM_DISABLE", "1"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->sharedMemory);
  EXPECT_THAT(errorOf({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"SINTER_SHM_DISABLE", "yes"}}),
              HasSubstr("SINTER_SHM_DISABLE='yes' is not an integer"));
  EXPECT_THAT(errorOf({{"RANK", "0"},
                       {"WORLD_SIZE", "2"},
                       {"SINTER_SHM_DISABLE", "2"}}),
              HasSubstr("SINTER_SHM_DISABLE='2' is not in [0, 1]"));
}

TEST(DistEnv, BoundCpusAreTheRanksOwn) {
  // Two ranks on a host of 4 CPUs: unbound, both see all 4 and take 2;
  // bound by sinter-launch, each sees its own 2 and takes both (not 1).
  absl::StatusOr<DistEnv> env = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_FALSE(env->ownCpus);
  EXPECT_EQ(defaultThreads(*env, 4), 2);
  EXPECT_EQ(defaultThreads(*env, 1), 1);
  env = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SINTER_CPU_BIND", "none"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(defaultThreads(*env, 4), 2);
  env =
      read({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SINTER_CPU_BIND", "cores"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->ownCpus);
  EXPECT_EQ(defaultThreads(*env, 2), 2);
  EXPECT_EQ(defaultThreads(*env, 1), 1);
  EXPECT_THAT(
      errorOf(
          {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SINTER_CPU_BIND", "core"}}),
      HasSubstr("SINTER_CPU_BIND='core' is not cores or none"));
}

TEST(DistEnv, HalfALauncher) {
  EXPECT_THAT(errorOf({{"RANK", "1"}}),
              HasSubstr("RANK='1' is set but WORLD_SIZE is not"));
  EXPECT_THAT(errorOf({{"WORLD_SIZE", "4"}}),
              HasSubstr("WORLD_SIZE='4' is set but RANK is not"));
  EXPECT_THAT(errorOf({{"SLURM_NTASKS", "4"}}),
              HasSubstr("SLURM_NTASKS='4' is set but SLURM_PROCID is not"));
}

TEST(DistEnv, EmptyCountsAsUnset) {
  absl::StatusOr<DistEnv> env = read({{"RANK", ""}, {"WORLD_SIZE", ""}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->source, "single process");
}

TEST(DistEnv, ListenHostname) {
  DistEnv local;
  local.worldSize = local.localWorldSize = 2;
  Vars none;
  EXPECT_EQ(listenHostname(local, lookupIn(none)), "127.0.0.1");
  Vars host = {{"SINTER_HOST", "10.1.2.3"}};
  EXPECT_EQ(listenHostname(local, lookupIn(host)), "10.1.2.3");
  DistEnv spread = local;
  spread.worldSize = 4;
  EXPECT_NE(listenHostname(spread, lookupIn(none)), "");
}

} // namespace
} // namespace sinter::comm

//===- CommLaunchTest.cpp - A failing rank ends the whole job -------------===//
//
// Runs comm-mpi-program under mpirun with one rank that stops, hangs or
// dies before a collective, and mesh-mpi-program with a collective over a
// group that has no communicator, and checks that the job ends non-zero
// within the time limit with a message naming the rank (or the group) and
// the collective.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Job {
  int exitCode;
  std::string output;
  double seconds;
};

/// Runs `mpirun -np N PROGRAM ARGS` (comm-mpi-program unless named) under
/// a 60 s kill switch, as root and with more ranks than cores if need be.
/// OpenMPI's own allocations look like leaks to LeakSanitizer.
Job launch(int ranks, const std::string &args,
           const std::string &program = TSR_TEST_COMM_PROGRAM) {
  std::string command = "env OMPI_ALLOW_RUN_AS_ROOT=1 "
                        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                        "OMPI_MCA_rmaps_base_oversubscribe=1 "
                        "ASAN_OPTIONS=detect_leaks=0 "
                        "timeout -s KILL 60 " TSR_TEST_MPIEXEC " -np " +
                        std::to_string(ranks) + " " + program + " " + args +
                        " 2>&1";
  auto start = std::chrono::steady_clock::now();
  FILE *pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  Job job{-1, "", 0};
  if (!pipe)
    return job;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    job.output.append(buffer, n);
  int status = pclose(pipe);
  job.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  job.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return job;
}

const char *const kLabel =
    "all_reduce #3 (bucket 1: fc1.weight, fc1.bias) at step 7";

TEST(CommLaunch, StoppedRankIsNamed) {
  Job job = launch(2, "stop 3 1");
  EXPECT_NE(job.exitCode, 0) << job.output;
  EXPECT_NE(job.exitCode, 137) << "killed by the 60 s limit\n" << job.output;
  EXPECT_LT(job.seconds, 30) << job.output;
  EXPECT_NE(job.output.find(std::string("tessera-run: rank 0: ") + kLabel +
                            " timed out after 3 s; rank 1 never arrived "
                            "(not responding)"),
            std::string::npos)
      << job.output;
}

TEST(CommLaunch, StoppedRankIsNamedOnFourRanks) {
  // The live ranks answer the watchdog; only the stopped one is named.
  Job job = launch(4, "stop 3 2");
  EXPECT_NE(job.exitCode, 0) << job.output;
  EXPECT_NE(job.exitCode, 137) << "killed by the 60 s limit\n" << job.output;
  EXPECT_LT(job.seconds, 30) << job.output;
  EXPECT_NE(job.output.find(std::string(": ") + kLabel +
                            " timed out after 3 s; rank 2 never arrived "
                            "(not responding)\n"),
            std::string::npos)
      << job.output;
  EXPECT_EQ(job.output.find("; ranks "), std::string::npos) << job.output;
}

TEST(CommLaunch, HungRankIsNamedOnFourRanks) {
  Job job = launch(4, "hang 3 2");
  EXPECT_NE(job.exitCode, 0) << job.output;
  EXPECT_NE(job.exitCode, 137) << "killed by the 60 s limit\n" << job.output;
  EXPECT_LT(job.seconds, 30) << job.output;
  EXPECT_NE(job.output.find(std::string(": ") + kLabel +
                            " timed out after 3 s; rank 2 never arrived\n"),
            std::string::npos)
      << job.output;
}

// Rank 0 waits on rank 1, which waits on the stopped rank 2: with twice
// the patience, rank 0 leaves the report to rank 1, which names rank 2.
TEST(CommLaunch, PatienceLetsThePeerNameTheStoppedRank) {
  Job job = launch(3, "relay 3 2");
  EXPECT_NE(job.exitCode, 0) << job.output;
  EXPECT_NE(job.exitCode, 137) << "killed by the 60 s limit\n" << job.output;
  EXPECT_LT(job.seconds, 30) << job.output;
  EXPECT_NE(job.output.find("tessera-run: rank 1: relay from the stopped rank "
                            "timed out after 3 s; rank 2 never arrived"),
            std::string::npos)
      << job.output;
  EXPECT_EQ(job.output.find("rank 0: relay from the waiting rank timed out"),
            std::string::npos)
      << job.output;
}

TEST(CommLaunch, KilledRankEndsTheJob) {
  Job job = launch(4, "kill 30 1");
  EXPECT_NE(job.exitCode, 0) << job.output;
  EXPECT_LT(job.seconds, 20) << job.output;
  // mpirun names the dead rank; the survivors name the collective.
  EXPECT_NE(job.output.find("rank 1 with PID"), std::string::npos)
      << job.output;
  EXPECT_NE(job.output.find("signal 9"), std::string::npos) << job.output;
  EXPECT_NE(job.output.find(std::string("terminated by signal 15 while in ") +
                            kLabel),
            std::string::npos)
      << job.output;
}

// A collective over a group of a mesh that was created without it ends the
// job on every rank of the group, naming the group.
TEST(CommLaunch, CollectiveOverGroupWithoutCommunicator) {
  Job job = launch(4, "unbound", TSR_TEST_MESH_PROGRAM);
  EXPECT_EQ(job.exitCode, 1) << job.output;
  EXPECT_LT(job.seconds, 30) << job.output;
  EXPECT_NE(job.output.find(": all_reduce #4 (on axc: fc1.weight): no "
                            "communicator is bound to the group of mesh axes "
                            "{0, 2} (mask 5), which has 4 ranks (the mesh was "
                            "created without this group)"),
            std::string::npos)
      << job.output;
  EXPECT_EQ(job.output.find("the collective returned"), std::string::npos)
      << job.output;
}

} // namespace

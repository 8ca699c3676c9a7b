// The MPI-aware doctest main. Every rank runs every test case; the run fails on every rank
// if a check failed on any rank. Rank 0 reports in full, the other ranks report only their
// failures (prefixed by doctest's file:line), so a failure on rank 3 is never hidden.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/environment.hpp>
#include <boost/mpi/operations.hpp>

int main(int argc, char** argv) {
  boost::mpi::environment env(argc, argv, /*abort_on_exception=*/true);
  boost::mpi::communicator world;
  doctest::Context context(argc, argv);
  if (world.rank() != 0) context.setOption("minimal", true);
  const int failed_here = context.run() != 0 ? 1 : 0;
  if (context.shouldExit()) return failed_here;
  int failed_ranks = 0;
  boost::mpi::all_reduce(world, failed_here, failed_ranks, std::plus<int>());
  if (failed_here) std::fprintf(stderr, "[meshpp test] rank %d had failures\n", world.rank());
  if (world.rank() == 0 && world.size() > 1) {
    std::printf("[meshpp test] %d of %d ranks had failures\n", failed_ranks, world.size());
  }
  return failed_ranks != 0 ? 1 : 0;
}

// Jobs that cannot go on must end, with a message, in seconds, on every rank: run by ctest at
// 2 and 4 ranks, each case passing when its message appears (the job's exit code is MPI_Abort's).
//
//   abort_cases never_arrives   MESHPP_CHECK_COLLECTIVES=1: the last rank never calls the
//                               allreduce the others wait in (it is busy elsewhere); after
//                               MESHPP_COLLECTIVE_TIMEOUT seconds the others name it and the
//                               call, and abort the job
//   abort_cases throws          the debug mode off: the last rank throws an exception nobody
//                               catches while the others wait in an allreduce; its message
//                               is printed and the job aborted (meshpp::environment)
#include <meshpp/comm/collectives.hpp>
#include <meshpp/core/environment.hpp>
#include <meshpp/core/mesh.hpp>

#include <chrono>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

namespace mp = meshpp;

MESHPP_DIM(all);

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  const std::string_view which = argc > 1 ? argv[1] : "";
  using mesh_t = mp::mesh<mp::axes<all>>;
  boost::mpi::communicator world;
  mesh_t m({world.size()});
  const bool last = world.rank() == world.size() - 1;
  std::vector<float> x(8, 1.0f);
  mp::allreduce<mp::over<all>>::run(m, std::span(x));  // one that every rank makes
  if (which == "never_arrives") {
    if (last) {  // busy elsewhere, far longer than the timeout: the abort ends it
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return 0;
    }
  } else if (which == "throws") {
    if (last) throw std::runtime_error("rank-local failure in abort_cases");
  } else {
    std::fprintf(stderr, "usage: abort_cases never_arrives|throws\n");
    return 2;
  }
  mp::allreduce<mp::over<all>>::run(m, std::span(x));
  std::printf("abort_cases: the job went on (it should not have)\n");
  return 0;
}

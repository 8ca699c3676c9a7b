// meshpp/core/memory.hpp — the memory a process has used at most, to print beside what a plan
// predicts (plan/plan.hpp) at the end of a run.
//
//   const auto mine = mp::peak_resident_bytes();                // this process
//   const auto most = mp::peak_resident_bytes(mesh.world());   // the largest over the ranks
//
// The peak resident set size as the kernel counts it (getrusage's ru_maxrss): every page the
// process has touched at once, libraries and MPI's buffers included, so it is above the sum
// of meshpp's tensors. The second form is collective over the communicator.
#pragma once

#include <sys/resource.h>

#include <cstdint>

#include <mpi.h>

#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"

namespace meshpp {

// peak_resident_bytes(): this process's peak resident memory so far (0 if the kernel will not
// say)
inline std::uint64_t peak_resident_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;  // kilobytes on Linux
}

// peak_resident_bytes(comm): the largest peak over the ranks of comm, on every rank
inline std::uint64_t peak_resident_bytes(const boost::mpi::communicator& comm) {
  std::uint64_t largest = peak_resident_bytes();
  detail::checked(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_UINT64_T, MPI_MAX, MPI_Comm(comm)),
                  "MPI_Allreduce");
  return largest;
}

}  // namespace meshpp

// meshpp/comm/agree.hpp — fail together on input that only one rank can see.
//
// Most bad input (sizes, shapes of types) is known to every rank, and every rank throws the
// same error with no communication. A few inputs live on one rank only (an array a rank
// imports, a file it reads); agree_or_throw turns a problem found on any rank into the same
// exception on every rank, with one small allreduce, so no rank goes on into a collective
// that the others have left.
#pragma once

#include <climits>
#include <string>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/mpi/communicator.hpp>
#include <boost/mpi/operations.hpp>

#include "meshpp/core/error.hpp"

namespace meshpp {

// agree_or_throw(comm, problem): collective; throws meshpp::error on every rank of comm if
// any rank passes a non-empty problem. A rank that found one reports its own text; the others
// name the lowest rank that found one and repeat its text ("meshpp: rank 1 found bad input:
// ..."), broadcast only then, so that every rank's message says what went wrong.
inline void agree_or_throw(const boost::mpi::communicator& comm, const std::string& problem) {
  const int mine = problem.empty() ? INT_MAX : comm.rank();
  int first = INT_MAX;
  boost::mpi::all_reduce(comm, mine, first, boost::mpi::minimum<int>());
  if (first == INT_MAX) return;
  std::string text = problem;
  unsigned long long length = text.size();
  boost::mpi::broadcast(comm, length, first);
  text.resize(static_cast<std::size_t>(length));
  if (length > 0) boost::mpi::broadcast(comm, text.data(), static_cast<int>(length), first);
  if (!problem.empty()) throw error(problem);
  throw error("meshpp: rank " + std::to_string(first) + " found bad input: " + text);
}

}  // namespace meshpp

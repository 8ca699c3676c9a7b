// meshpp/core/agree.hpp — fail together on input that only one rank can see.
//
// Most bad input (sizes, shapes of types) is known to every rank, and every rank throws the
// same error with no communication. A few inputs live on one rank only (an array a rank
// imports, a file it reads); agree_or_throw turns a problem found on any rank into the same
// exception on every rank, with one small allreduce, so no rank goes on into a collective
// that the others have left.
#pragma once

#include <climits>
#include <string>
#include <utility>

#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp {

namespace detail {
// lowest_problem(comm, problem, operation): collective; {INT_MAX, ""} if no rank of comm
// passes a non-empty problem, else the lowest such rank and its text on every rank (one
// allreduce, and a broadcast of the text only then)
inline std::pair<int, std::string> lowest_problem(const boost::mpi::communicator& comm,
                                                  const std::string& problem,
                                                  const char* operation) {
  int first = problem.empty() ? INT_MAX : comm.rank();
  allreduce_values(MPI_Comm(comm), &first, 1, MPI_MIN, operation);
  if (first == INT_MAX) return {first, {}};
  std::string text = problem;
  broadcast_text(MPI_Comm(comm), text, first, operation);
  return {first, std::move(text)};
}
}  // namespace detail

// agree_or_throw(comm, problem): collective; throws meshpp::error on every rank of comm if
// any rank passes a non-empty problem. A rank that found one reports its own text; the others
// name the lowest rank that found one and repeat its text ("meshpp: rank 1 found bad input:
// ..."), so that every rank's message says what went wrong.
inline void agree_or_throw(const boost::mpi::communicator& comm, const std::string& problem) {
  const auto [first, text] = detail::lowest_problem(comm, problem, "agree_or_throw");
  if (first == INT_MAX) return;
  if (!problem.empty()) throw error(problem);
  throw error("meshpp: rank " + std::to_string(first) + " found bad input: " + text);
}

// agree_or_throw(mesh, problem): the same over the mesh's ranks; on a planned mesh
// (mesh::planned), where this process stands for one rank and there is no one to agree with,
// a problem is this rank's error
template <class Mesh>
requires requires(const Mesh& m) { m.planning(); }
void agree_or_throw(const Mesh& m, const std::string& problem) {
  if (!m.planning()) return agree_or_throw(m.world(), problem);
  if (!problem.empty()) throw error(problem);
}

}  // namespace meshpp

// meshpp/core/environment.hpp — MPI start-up and shut-down for a meshpp program.
#pragma once

#include <boost/mpi/environment.hpp>

namespace meshpp {

/// @brief Initializes MPI for the lifetime of the object (create one at the top of main).
/// An exception that escapes main aborts every rank (Boost.MPI's abort_on_exception), so a
/// failure on one rank ends the whole job instead of leaving the others waiting.
class environment {
 public:
  environment(int& argc, char**& argv) : env_(argc, argv, /*abort_on_exception=*/true) {}
  environment() : env_(/*abort_on_exception=*/true) {}

  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

 private:
  boost::mpi::environment env_;
};

}  // namespace meshpp

// meshpp/core/detail/checked_call.hpp — checked(code, call, site): an MPI return code as
// meshpp::error, with the words that say which collective failed.
//
// Boost.MPI's environment sets MPI_ERRORS_RETURN on MPI_COMM_WORLD, and the mesh's
// sub-communicators inherit it, so a failing call returns its code instead of ending the job;
// checked() turns any code but MPI_SUCCESS into meshpp::error naming the world rank, the MPI
// call, the operation, its mesh dims, the type and the count, and MPI's own text:
//   meshpp: rank 1: MPI_Allreduce failed in allreduce over [rows] of 4096 float: <MPI's text>
// Such a failure need not happen on every rank alike; the job then ends as an uncaught
// exception does (core/environment.hpp).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <mpi.h>
#include <boost/mpi/datatype.hpp>

#include "meshpp/core/error.hpp"

namespace meshpp::detail {

/// What a collective is, for its messages and its fingerprint: the operation, the mesh dims
/// it runs over (a bit set of the mesh's dims, and their names), the element type and the
/// count on this rank. Cheap to make: the text is built only when needed.
struct call_site {
  const char* operation;
  unsigned mask = 0;
  std::span<const std::string_view> names = {};
  const char* type = "value";
  std::size_t count = 0;
  bool count_agrees = true;  // false: each member has its own count (a permute)

  // describe(): "allreduce over [rows, cols] of 4096 float"
  std::string describe() const {
    std::string dims;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!(mask >> i & 1u)) continue;
      if (!dims.empty()) dims += ", ";
      dims += names[i];
    }
    return std::string(operation) + (names.empty() ? "" : " over [" + dims + "]") + " of " +
           std::to_string(count) + " " + type;
  }
};

inline int world_rank();
inline std::string mpi_error_text(int code);

/// checked(code, call, site): nothing when code is MPI_SUCCESS; else meshpp::error naming the
/// world rank, the MPI call, the collective (site) and MPI's text.
inline void checked(int code, const char* call, const call_site& site) {
  if (code == MPI_SUCCESS) return;
  throw error("meshpp: rank " + std::to_string(world_rank()) + ": " + call + " failed in " +
              site.describe() + ": " + mpi_error_text(code));
}

/// checked(code, call): the same, for a call that is no collective of a mesh (a request's
/// wait, a datatype, a communicator).
inline void checked(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  throw error("meshpp: rank " + std::to_string(world_rank()) + ": " + call +
              " failed: " + mpi_error_text(code));
}

/// wait_quietly(request): MPI_Wait where no error could be reported (a destructor, a noexcept
/// path): true if the request completed; false if MPI is finalized or the wait failed
inline bool wait_quietly(MPI_Request& request) noexcept {
  int down = 0;
  if (MPI_Finalized(&down) != MPI_SUCCESS || down) return false;
  return MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS;
}

/// type_name<T>(): a printable name of an element type, for messages
template <class T>
constexpr const char* type_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return "float";
  else if constexpr (std::is_same_v<U, double>)
    return "double";
  else if constexpr (std::is_same_v<U, bool>)
    return "bool";
  else if constexpr (std::is_same_v<U, char>)
    return "char";
  else if constexpr (std::is_same_v<U, signed char>)
    return "int8";
  else if constexpr (std::is_same_v<U, unsigned char>)
    return "uint8";
  else if constexpr (std::is_same_v<U, int>)
    return "int";
  else if constexpr (std::is_same_v<U, unsigned>)
    return "unsigned";
  else if constexpr (std::is_same_v<U, long>)
    return "long";
  else if constexpr (std::is_same_v<U, unsigned long>)
    return "unsigned long";
  else if constexpr (std::is_same_v<U, long long>)
    return "long long";
  else if constexpr (std::is_same_v<U, unsigned long long>)
    return "unsigned long long";
  else
    return "value";
}

// mpi_type<T>(): T's MPI datatype
template <class T>
MPI_Datatype mpi_type() {
  return boost::mpi::get_mpi_datatype<T>();
}

// world_rank(): this process's rank in MPI_COMM_WORLD, or -1 before MPI_Init
inline int world_rank() {
  int rank = -1;
  int up = 0;
  if (MPI_Initialized(&up) == MPI_SUCCESS && up) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// mpi_error_text(code): MPI's text for an error code
inline std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS || length <= 0)
    return "error code " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace meshpp::detail

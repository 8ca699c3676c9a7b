// meshpp/core/checked.hpp — the one path every MPI call of meshpp takes: return codes
// checked, counts of any size, and (in a debug mode) every collective agreed on before it runs.
//
//   detail::call_site site{"allreduce", mask, names, detail::type_name<T>(), n};
//   detail::before_collective(comm, site);                 // the debug mode's agreement
//   detail::checked(MPI_Allreduce(...), "MPI_Allreduce", site);
//
// Its three parts, each in a header of its own in core/detail/: checked calls
// (checked_call.hpp), counts of any size (large_counts.hpp) and the debug mode's collective
// agreement (collective_agreement.hpp); every layer uses them through this header. This header
// includes them all, and holds the few collectives over a bare communicator that meshpp makes of
// them (a reader's agreement, a checkpoint's broadcast): allreduce_in_place, broadcast_in_place,
// broadcast_text, barrier.
#pragma once

#include <cstddef>
#include <string>

#include <mpi.h>

#include "meshpp/core/detail/checked_call.hpp"
#include "meshpp/core/detail/collective_agreement.hpp"
#include "meshpp/core/detail/large_counts.hpp"

namespace meshpp::detail {

/// allreduce_in_place(comm, data, n, type, value_size, op, site): MPI_Allreduce in place of n
/// values of `type` (value_size bytes each) at data, in calls of at most mpi_count_limit
/// values; the debug mode's agreement first.
inline void allreduce_in_place(MPI_Comm comm, void* data, std::size_t n, MPI_Datatype type,
                               std::size_t value_size, MPI_Op op, const call_site& site) {
  before_collective(comm, site);
  auto* bytes = static_cast<std::byte*>(data);
  for_each_piece(n, [&](std::size_t at, std::size_t c) {
    checked(MPI_Allreduce(MPI_IN_PLACE, bytes + at * value_size, as_count(c), type, op, comm),
            "MPI_Allreduce", site);
  });
}

// allreduce_values(comm, data, n, op, operation): allreduce_in_place for a few values of a
// collective that is no mesh's (a reader's agreement); `operation` names it in messages
template <class T>
void allreduce_values(MPI_Comm comm, T* data, std::size_t n, MPI_Op op, const char* operation) {
  allreduce_in_place(comm, data, n, mpi_type<T>(), sizeof(T), op,
                     call_site{operation, 0, {}, type_name<T>(), n});
}

// broadcast_in_place(comm, data, n, root, site): MPI_Bcast of n T from member root, in calls
// of at most mpi_count_limit values
template <class T>
void broadcast_in_place(MPI_Comm comm, T* data, std::size_t n, int root, const call_site& site) {
  before_collective(comm, site);
  for_each_piece(n, [&](std::size_t at, std::size_t c) {
    checked(MPI_Bcast(data + at, as_count(c), mpi_type<T>(), root, comm), "MPI_Bcast", site);
  });
}

// broadcast_values(comm, data, n, root, operation): broadcast_in_place for a collective that is
// no mesh's; `operation` names it in messages
template <class T>
void broadcast_values(MPI_Comm comm, T* data, std::size_t n, int root, const char* operation) {
  broadcast_in_place(comm, data, n, root, call_site{operation, 0, {}, type_name<T>(), n});
}

// broadcast_text(comm, text, root, operation): member root's text on every member (its length,
// then its characters)
inline void broadcast_text(MPI_Comm comm, std::string& text, int root, const char* operation) {
  unsigned long long length = text.size();
  broadcast_values(comm, &length, 1, root, operation);
  text.resize(static_cast<std::size_t>(length));
  broadcast_values(comm, text.data(), text.size(), root, operation);
}

// barrier(comm, operation): MPI_Barrier, checked (and agreed on in the debug mode)
inline void barrier(MPI_Comm comm, const char* operation) {
  const call_site site{operation, 0, {}, "value", 0};
  before_collective(comm, site);
  checked(MPI_Barrier(comm), "MPI_Barrier", site);
}

}  // namespace meshpp::detail

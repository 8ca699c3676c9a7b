// meshpp/core/detail/large_counts.hpp — counts past 2^31: MPI's counts are int, meshpp's
// std::size_t, and this is where one becomes the other.
//
// A collective of more values than mpi_count_limit (INT_MAX) runs as several calls of at most
// that many (for_each_piece: allreduce, broadcast), or through a derived datatype whose extent
// strides over the whole block (strided_type: allgather, alltoall), or through point-to-point
// messages (exchange_messages: alltoall and permute of blocks), or through staged pieces
// (reduce_scatter, gather); as_count() is the one place a count becomes an int (the repo's
// lint test finds no other cast to int on a line that calls MPI). Tests lower mpi_count_limit
// to run these paths with small buffers.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <utility>
#include <vector>

#include <mpi.h>

#include "meshpp/core/detail/checked_call.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp::detail {

/// The most values one MPI call carries (MPI's counts are int). Larger collectives run in
/// pieces; tests lower it to run those paths with small buffers.
inline std::size_t mpi_count_limit = INT_MAX;

/// as_count(n): n as MPI's int count; n must not exceed mpi_count_limit (the callers split
/// larger counts first), so this is a check against a bug in meshpp, not against input.
inline int as_count(std::size_t n) {
  if (n > mpi_count_limit || n > static_cast<std::size_t>(INT_MAX)) {
    throw error("meshpp: internal error: a count of " + std::to_string(n) +
                " reached MPI unsplit (the limit is " + std::to_string(mpi_count_limit) + ")");
  }
  return static_cast<int>(n);
}

/// for_each_piece(n, f): f(at, c) for the pieces [at, at + c) of n values, in order, each of at
/// most `piece` values (none when n is 0): the calls a count past MPI's int becomes.
template <class F>
void for_each_piece(std::size_t n, F&& f, std::size_t piece = mpi_count_limit) {
  for (std::size_t at = 0; at < n;) {
    const std::size_t c = std::min(n - at, piece);
    f(at, c);
    at += c;
  }
}

/// as_int(n): n as an int where MPI takes one that counts no values (requests, the bytes of a
/// fingerprint): only INT_MAX bounds it
inline int as_int(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw error("meshpp: internal error: " + std::to_string(n) + " does not fit MPI's int");
  return static_cast<int>(n);
}

/// exchange_messages(comm, type, value_size, send, recv, site): member j of comm gets
/// send(j) = {pointer, count} from this rank, and this rank gets recv(j) from member j, as
/// point-to-point messages of at most mpi_count_limit values (in order between two ranks, so
/// the pieces match up); this rank's own entries are skipped (the caller copies its block).
/// The path of an alltoall or permute whose counts or displacements outgrow MPI's int.
template <class Send, class Recv>
void exchange_messages(MPI_Comm comm, MPI_Datatype type, std::size_t value_size, Send&& send,
                       Recv&& recv, const call_site& site) {
  constexpr int tag = 0x7065;  // 'pe'
  int p = 1, me = 0;
  checked(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  checked(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  std::vector<MPI_Request> requests;
  for (int j = 0; j < p; ++j) {
    if (j == me) continue;
    // (not structured bindings: clang 14 does not let the lambdas below capture them)
    const auto sent = send(static_cast<std::size_t>(j));
    const auto received = recv(static_cast<std::size_t>(j));
    const auto* to = static_cast<const std::byte*>(sent.first);
    const std::size_t to_count = sent.second;
    auto* from = static_cast<std::byte*>(received.first);
    const std::size_t from_count = received.second;
    for_each_piece(from_count, [&](std::size_t at, std::size_t c) {
      requests.emplace_back();
      checked(MPI_Irecv(from + at * value_size, as_count(c), type, j, tag, comm, &requests.back()),
              "MPI_Irecv", site);
    });
    for_each_piece(to_count, [&](std::size_t at, std::size_t c) {
      requests.emplace_back();
      checked(MPI_Isend(to + at * value_size, as_count(c), type, j, tag, comm, &requests.back()),
              "MPI_Isend", site);
    });
  }
  checked(MPI_Waitall(as_int(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall",
          site);
}

/// strided_type: c values of `type` whose extent is `stride` values, so that block j of a
/// collective lands j * stride values further: one piece of a block too large for one count.
class strided_type {
 public:
  strided_type(MPI_Datatype type, std::size_t c, std::size_t stride) {
    MPI_Aint lower = 0, extent = 0;
    checked(MPI_Type_get_extent(type, &lower, &extent), "MPI_Type_get_extent");
    MPI_Datatype piece;
    checked(MPI_Type_contiguous(as_count(c), type, &piece), "MPI_Type_contiguous");
    const int resized =
        MPI_Type_create_resized(piece, 0, static_cast<MPI_Aint>(stride) * extent, &type_);
    MPI_Type_free(&piece);
    checked(resized, "MPI_Type_create_resized");
    checked(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~strided_type() { MPI_Type_free(&type_); }
  strided_type(const strided_type&) = delete;
  strided_type& operator=(const strided_type&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace meshpp::detail

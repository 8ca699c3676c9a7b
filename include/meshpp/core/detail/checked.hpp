// meshpp/core/detail/checked.hpp — the one path every MPI call of meshpp takes: return codes
// checked, counts of any size, and (in a debug mode) every collective agreed on before it runs.
//
//   detail::call_site site{"allreduce", mask, names, detail::type_name<T>(), n};
//   detail::before_collective(comm, site);                 // the debug mode's agreement
//   detail::checked(MPI_Allreduce(...), "MPI_Allreduce", site);
//
// Checked calls. Boost.MPI's environment sets MPI_ERRORS_RETURN on MPI_COMM_WORLD, and the
// mesh's sub-communicators inherit it, so a failing call returns its code instead of ending
// the job; checked() turns any code but MPI_SUCCESS into meshpp::error naming the world rank,
// the MPI call, the operation, its mesh dims, the type and the count, and MPI's own text:
//   meshpp: rank 1: MPI_Allreduce failed in allreduce over [rows] of 4096 float: <MPI's text>
// Such a failure need not happen on every rank alike; the job then ends as an uncaught
// exception does (core/environment.hpp).
//
// Counts of any size. MPI counts and displacements are int. A collective of more values than
// mpi_count_limit (INT_MAX) runs as several calls of at most that many (allreduce, broadcast),
// or through a derived datatype whose extent strides over the whole block (allgather,
// alltoall), or through staged pieces (reduce_scatter, gather); counts are std::size_t
// everywhere else, and as_count() is the one place one becomes an int (the repo's lint test
// finds no other cast to int on a line that calls MPI). Tests lower mpi_count_limit to run
// these paths with small buffers.
//
// Collective mismatch detection (MESHPP_CHECK_COLLECTIVES=1 in the environment; off by
// default, and then one predictable branch per collective). Before each collective, every
// member of its group sends the others a fingerprint of the call — operation, mesh dims,
// type, count, and the call's sequence number on that group — and checks what it receives:
//   - all agree: the collective runs;
//   - one differs (a rank called another collective, or skipped one): meshpp::error on every
//     member, naming both sides ("rank 0 calls allreduce over [rows] of 4 float (call 3 on
//     this group); rank 1 calls allgather over [rows] of 2 float (call 3)"), before any data
//     moves, so the ranks stay in step;
//   - a member does not arrive within MESHPP_COLLECTIVE_TIMEOUT seconds (default 60): the
//     ranks waiting print which members they wait for and in which call, and abort the job
//     (MPI_Abort), since those members may never come.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <mpi.h>
#include <boost/mpi/datatype.hpp>

#include "meshpp/core/error.hpp"

namespace meshpp::detail {

/// The most values one MPI call carries (MPI's counts are int). Larger collectives run in
/// pieces; tests lower it to run those paths with small buffers.
inline std::size_t mpi_count_limit = INT_MAX;

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

/// allreduce_in_place(comm, data, n, type, value_size, op, site): MPI_Allreduce in place of n
/// values of `type` (value_size bytes each) at data, in calls of at most mpi_count_limit
/// values; the debug mode's agreement first. Declared here, defined below.
inline void allreduce_in_place(MPI_Comm comm, void* data, std::size_t n, MPI_Datatype type,
                               std::size_t value_size, MPI_Op op, const call_site& site);

// --- collective mismatch detection -------------------------------------------------------------

/// Whether MESHPP_CHECK_COLLECTIVES=1 (read once)
inline bool check_collectives() {
  static const bool on = [] {
    const char* v = std::getenv("MESHPP_CHECK_COLLECTIVES");
    return v && std::string_view(v) == "1";
  }();
  return on;
}

/// The seconds a collective waits for its group's fingerprints (MESHPP_COLLECTIVE_TIMEOUT,
/// default 60), read once
inline double collective_timeout() {
  static const double seconds = [] {
    const char* v = std::getenv("MESHPP_COLLECTIVE_TIMEOUT");
    char* end = nullptr;
    const double s = v ? std::strtod(v, &end) : 0.0;
    return v && end != v && s > 0 ? s : 60.0;
  }();
  return seconds;
}

/// A call's fingerprint, as sent: fixed size, text included, so that a mismatch can name the
/// other side's call in words
struct fingerprint {
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  char call[112] = {};  // site.describe(), cut to fit

  bool same_call(const fingerprint& o) const {
    return sequence == o.sequence && count == o.count && std::strcmp(call, o.call) == 0;
  }
  std::string text() const {
    return std::string(call) + " (call " + std::to_string(sequence) + " on this group)";
  }
};

// comm_attribute<T>(comm): the T meshpp keeps on communicator comm (an MPI attribute, one key
// per T), or nullptr; set_comm_attribute(comm, value): keeps value there instead, freeing the
// one before, and returns it. A value is freed with its communicator and is not copied to a
// duplicate of it (MPI_COMM_NULL_COPY_FN).
template <class T>
int comm_attribute_key() {
  static const int key = [] {
    int k = MPI_KEYVAL_INVALID;
    auto release = [](MPI_Comm, int, void* value, void*) -> int {
      delete static_cast<T*>(value);
      return MPI_SUCCESS;
    };
    checked(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, release, &k, nullptr),
            "MPI_Comm_create_keyval");
    return k;
  }();
  return key;
}
template <class T>
T* comm_attribute(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  checked(MPI_Comm_get_attr(comm, comm_attribute_key<T>(), &value, &found), "MPI_Comm_get_attr");
  return found ? static_cast<T*>(value) : nullptr;
}
template <class T>
T& set_comm_attribute(MPI_Comm comm, std::unique_ptr<T> value) {
  checked(MPI_Comm_set_attr(comm, comm_attribute_key<T>(), value.get()), "MPI_Comm_set_attr");
  return *value.release();  // (on failure the unique_ptr still owns it)
}

// The number of collectives this process has started on each communicator, kept on the
// communicator (comm_attribute): it is freed with it and starts again at 0 on a new one. (A map
// keyed by the handle went wrong when MPI handed a freed communicator's handle to a new one on
// some members and not on others: their counts no longer agreed.)
struct collective_count {
  std::uint64_t calls = 0;
};
inline std::uint64_t next_sequence(MPI_Comm comm) {
  collective_count* count = comm_attribute<collective_count>(comm);
  if (!count) count = &set_comm_attribute(comm, std::make_unique<collective_count>());
  return ++count->calls;
}

// world_rank_of(comm, member): the world rank of group member `member`
inline int world_rank_of(MPI_Comm comm, int member) {
  MPI_Group group, world;
  int out = -1;
  if (MPI_Comm_group(comm, &group) != MPI_SUCCESS) return -1;
  if (MPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
    MPI_Group_translate_ranks(group, 1, &member, world, &out);
    MPI_Group_free(&world);
  }
  MPI_Group_free(&group);
  return out;
}

/// agree_on_call(comm, site): the debug mode's check (see the top of this file); collective
/// over comm
inline void agree_on_call(MPI_Comm comm, const call_site& site) {
  constexpr int tag = 0x6d70;  // 'mp': meshpp's fingerprints; meshpp sends nothing else
  int p = 1, me = 0;
  checked(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  checked(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  if (p == 1) return;
  fingerprint mine;
  mine.sequence = next_sequence(comm);
  // a permute's counts are each member's own: the fingerprint leaves them out
  call_site agreed = site;
  if (!site.count_agrees) agreed.count = 0;
  mine.count = agreed.count;
  const std::string text = agreed.describe();
  std::memcpy(mine.call, text.data(), std::min(text.size(), sizeof(mine.call) - 1));

  const auto up = static_cast<std::size_t>(p);
  std::vector<fingerprint> theirs(up);
  std::vector<MPI_Request> requests(2 * up, MPI_REQUEST_NULL);
  for (int j = 0; j < p; ++j) {
    if (j == me) continue;
    checked(MPI_Irecv(&theirs[static_cast<std::size_t>(j)], as_int(sizeof(fingerprint)), MPI_BYTE,
                      j, tag, comm, &requests[static_cast<std::size_t>(j)]),
            "MPI_Irecv", site);
    checked(MPI_Isend(&mine, as_int(sizeof(fingerprint)), MPI_BYTE, j, tag, comm,
                      &requests[up + static_cast<std::size_t>(j)]),
            "MPI_Isend", site);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(collective_timeout());
  for (;;) {
    int done = 0;
    checked(MPI_Testall(as_int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
            "MPI_Testall", site);
    if (done) break;
    if (std::chrono::steady_clock::now() > deadline) {
      // Which members have not sent theirs: a receive not yet complete
      std::string missing;
      for (int j = 0; j < p; ++j) {
        if (j == me) continue;
        int arrived = 0;
        if (requests[static_cast<std::size_t>(j)] != MPI_REQUEST_NULL)
          MPI_Test(&requests[static_cast<std::size_t>(j)], &arrived, MPI_STATUS_IGNORE);
        else
          arrived = 1;
        if (!arrived)
          missing += (missing.empty() ? "" : ", ") + std::to_string(world_rank_of(comm, j));
      }
      std::fprintf(stderr,
                   "meshpp: rank %d: collective check: %s has waited %.0f s for rank(s) %s, "
                   "which never arrived in it (skipped it, or stopped before it); aborting the "
                   "job\n",
                   world_rank(), mine.text().c_str(), collective_timeout(), missing.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    std::this_thread::yield();
  }
  for (int j = 0; j < p; ++j) {
    if (j == me || theirs[static_cast<std::size_t>(j)].same_call(mine)) continue;
    throw error("meshpp: collective mismatch: rank " + std::to_string(world_rank()) + " calls " +
                mine.text() + "; rank " + std::to_string(world_rank_of(comm, j)) + " calls " +
                theirs[static_cast<std::size_t>(j)].text());
  }
}

/// before_collective(comm, site): the debug mode's agreement on the call, when it is on
inline void before_collective(MPI_Comm comm, const call_site& site) {
  if (check_collectives()) agree_on_call(comm, site);
}

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

// meshpp/core/detail/collective_agreement.hpp — before_collective(comm, site): with
// MESHPP_CHECK_COLLECTIVES=1, every collective agreed on by its group before any data moves.
//
// Off by default, and then one predictable branch per collective. When on, every member of the
// collective's group sends the others a fingerprint of the call — operation, mesh dims, type,
// count, and the call's sequence number on that group — and checks what it receives:
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
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <mpi.h>

#include "meshpp/core/detail/checked_call.hpp"
#include "meshpp/core/detail/large_counts.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp::detail {

inline bool check_collectives();
inline void agree_on_call(MPI_Comm comm, const call_site& site);

/// before_collective(comm, site): the debug mode's agreement on the call, when it is on
inline void before_collective(MPI_Comm comm, const call_site& site) {
  if (check_collectives()) agree_on_call(comm, site);
}

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

}  // namespace meshpp::detail

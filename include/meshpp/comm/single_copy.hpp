// meshpp/comm/single_copy.hpp — detail: copying straight between ranks' memory, one copy from
// one rank's buffer into another's, for collectives among the ranks of one node.
//
// An alltoall through MPI copies each value twice on one node (Open MPI 4.1's shared-memory
// transport: the single-copy read of the kernel's cross-memory attach for a contiguous
// message, plus the sender's copy of its own block), but a block that is strided on either
// side costs one more: MPI packs derived datatypes through its own fragments, and meshpp's
// staged path packs them itself. Linux's process_vm_readv(2) and process_vm_writev(2) copy a
// list of runs of another process's memory from or to a list of runs of ours in one copy,
// whatever their strides: the same cross-memory attach, given the runs. A relayout among the
// ranks of one node uses them (ops/relayout.hpp, alltoall_step):
//
//   1. each member copies its own block, and the members share their source's and
//      destination's addresses (one MPI_Allgather of two pointers);
//   2. each block goes straight from its sender's source to its receiver's destination, moved
//      by the side whose runs it has more of: the sender writes it (process_vm_writev) where it
//      makes more runs in the source than in the destination, the receiver reads it
//      (process_vm_readv) otherwise, ties included;
//   3. one MPI_Allreduce of a flag ends it: no member's buffer is released or used before
//      every copy into or out of it is done, and every member learns whether all copies
//      succeeded. If one did not, the members run the MPI path for that call (the sources are
//      untouched; the destinations are written whole again), and the group does not try the
//      direct copies again.
//
// single_copy_peers(comm) decides once per communicator (cached as an MPI attribute): the
// group must lie on one node (MPI_Comm_split_type shared), every member must be able to read
// the others (a probe reads each member's token; writing takes the same permission), and
// MESHPP_SINGLE_COPY must not be 0 on any member. The outcome is agreed, so all members take
// the same path. Elsewhere than Linux: never.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#if defined(__linux__)
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#endif

#include "meshpp/core/checked.hpp"

namespace meshpp::detail {

/// Whether relayouts among the ranks of one node copy blocks directly between the ranks'
/// memory (process_vm_readv/writev) rather than through MPI_Alltoallv. Every member of a group
/// must hold the same value when it relayouts (tests turn it off to run the MPI path);
/// MESHPP_SINGLE_COPY=0 turns the direct copies off for a whole run.
inline bool single_copy_relayout = true;

/// The relayout steps this process has moved by direct copies (tests check which path ran).
inline std::size_t single_copy_steps = 0;

/// For tests: while true, this member's direct copies report failure, as a copy the kernel
/// refused would (the probe's included), so that the agreed fallback can be checked.
inline bool single_copy_fail_copies = false;

/// The members of a communicator whose memory this process can copy from and to: their process
/// ids, in
/// rank order; empty when the group cannot (not one node, not permitted, turned off, not
/// Linux, or a group of one).
struct single_copy_group {
  std::vector<std::int64_t> pids;
  bool usable() const { return !pids.empty(); }
};

#if defined(__linux__)

/// remote_copy(pid, way): copies runs of process pid's memory into runs of ours (way read,
/// process_vm_readv) or runs of ours into runs of its memory (way write, process_vm_writev),
/// batching them into calls of at most 1024 runs a side (IOV_MAX); adjacent runs merge. The
/// kernel pins the other process's pages run by run, so the caller lets the side with fewer,
/// longer runs be the other process's (a strided block of 2 KiB rows cost about twice the
/// copy when it was the remote side). ok() is false once a call copied less than asked (the
/// rest are then skipped).
class remote_copy {
 public:
  enum way { read, write };
  remote_copy(std::int64_t pid, way w) : pid_(static_cast<pid_t>(pid)), way_(w) {}
  remote_copy(const remote_copy&) = delete;
  remote_copy& operator=(const remote_copy&) = delete;
  ~remote_copy() = default;

  // add(here, there, bytes): `bytes` bytes between `here` (ours) and address `there` (the
  // other process's), in the object's direction
  void add(void* here, std::uintptr_t there, std::size_t bytes) {
    while (bytes > 0 && ok_) {
      // (one call moves at most max_run bytes: the kernel copies less than asked past 2 GiB)
      const std::size_t n = std::min(bytes, max_run - pending_);
      append(local_, here, n);
      // NOLINTNEXTLINE(performance-no-int-to-ptr): the other process's address, never ours
      append(remote_, reinterpret_cast<void*>(there), n);
      pending_ += n;
      if (local_.size() == max_iov || remote_.size() == max_iov || pending_ >= max_run) flush();
      here = static_cast<char*>(here) + n;
      there += n;
      bytes -= n;
    }
  }

  // flush(): issues the runs gathered so far; ok() after it says whether every copy succeeded
  bool flush() {
    if (single_copy_fail_copies) ok_ = false;
    if (ok_ && pending_ > 0) {
      const ssize_t got = way_ == read ? process_vm_readv(pid_, local_.data(), local_.size(),
                                                          remote_.data(), remote_.size(), 0)
                                       : process_vm_writev(pid_, local_.data(), local_.size(),
                                                           remote_.data(), remote_.size(), 0);
      ok_ = got >= 0 && static_cast<std::size_t>(got) == pending_;
    }
    local_.clear();
    remote_.clear();
    pending_ = 0;
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  static constexpr std::size_t max_iov = 1024;
  static constexpr std::size_t max_run = std::size_t{1} << 30;  // below the kernel's 2 GiB cap

  static void append(std::vector<iovec>& runs, void* at, std::size_t n) {
    if (!runs.empty()) {
      iovec& last = runs.back();
      if (static_cast<char*>(last.iov_base) + last.iov_len == static_cast<char*>(at)) {
        last.iov_len += n;
        return;
      }
    }
    runs.push_back({at, n});
  }

  pid_t pid_;
  way way_;
  std::vector<iovec> local_, remote_;
  std::size_t pending_ = 0;
  bool ok_ = true;
};

// what each member reads of the others in the probe: a value of this process's own (its pid
// beside "mesh"), so that a pid naming another process of the same binary does not pass
inline std::uint64_t single_copy_token = 0;

/// single_copy_peers(comm, site): the cached decision for comm, made on first use by every
/// member together (collective then, free afterwards)
inline const single_copy_group& single_copy_peers(MPI_Comm comm, const call_site& site) {
  if (const auto* cached = comm_attribute<single_copy_group>(comm)) return *cached;
  int p = 0;
  checked(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  checked(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type", site);
  int on_node = 0;
  checked(MPI_Comm_size(node, &on_node), "MPI_Comm_size");
  checked(MPI_Comm_free(&node), "MPI_Comm_free");
  // each member's process id, its token's address and value; every member probes, so that all call
  // the same collectives whatever they find
  struct card {
    std::int64_t pid;
    std::uint64_t token_at, token;
  };
  single_copy_token = 0x6d65736800000000ull ^ static_cast<std::uint64_t>(getpid());
  const card mine{static_cast<std::int64_t>(getpid()),
                  static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&single_copy_token)),
                  single_copy_token};
  std::vector<card> cards(static_cast<std::size_t>(p));
  checked(MPI_Allgather(&mine, sizeof(card), MPI_BYTE, cards.data(), sizeof(card), MPI_BYTE, comm),
          "MPI_Allgather", site);
  const char* env = std::getenv("MESHPP_SINGLE_COPY");
  int ok = p > 1 && on_node == p && !(env && std::string_view(env) == "0");
  for (std::size_t j = 0; ok && j < cards.size(); ++j) {
    std::uint64_t seen = 0;
    remote_copy reader(cards[j].pid, remote_copy::read);
    reader.add(&seen, static_cast<std::uintptr_t>(cards[j].token_at), sizeof seen);
    ok = reader.flush() && seen == cards[j].token;
  }
  checked(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", site);
  auto group = std::make_unique<single_copy_group>();
  if (ok)
    for (const card& c : cards) group->pids.push_back(c.pid);
  return set_comm_attribute(comm, std::move(group));
}

/// share_addresses(comm, {a, b}, site): every member's two addresses, member j's at 2j and
/// 2j + 1 (step 1: a member's buffers are ready once they are shared)
inline std::vector<std::uintptr_t> share_addresses(MPI_Comm comm,
                                                   const std::array<const void*, 2>& at,
                                                   const call_site& site) {
  int p = 0;
  checked(MPI_Comm_size(comm, &p), "MPI_Comm_size");
  const std::array<std::uint64_t, 2> mine{reinterpret_cast<std::uintptr_t>(at[0]),
                                          reinterpret_cast<std::uintptr_t>(at[1])};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(p));
  checked(MPI_Allgather(mine.data(), 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm),
          "MPI_Allgather", site);
  return {all.begin(), all.end()};
}

/// all_copied(comm, ok, site): whether every member's copies succeeded (step 3; no member's
/// buffers are touched by another after it). When one did not, the group stops trying: every
/// member forgets the group's readiness together, which frees the single_copy_group that
/// single_copy_peers returned (not to be used after this call).
inline bool all_copied(MPI_Comm comm, bool ok, const call_site& site) {
  int all = ok ? 1 : 0;
  checked(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", site);
  if (all) return true;
  set_comm_attribute(comm, std::make_unique<single_copy_group>());
  return false;
}

#else

class remote_copy {
 public:
  enum way { read, write };
  remote_copy(std::int64_t, way) {}
  void add(void*, std::uintptr_t, std::size_t) {}
  bool flush() { return false; }
  bool ok() const { return false; }
};
inline const single_copy_group& single_copy_peers(MPI_Comm, const call_site&) {
  static const single_copy_group none;
  return none;
}
inline std::vector<std::uintptr_t> share_addresses(MPI_Comm, const std::array<const void*, 2>&,
                                                   const call_site&) {
  return {};
}
inline bool all_copied(MPI_Comm, bool, const call_site&) { return false; }

#endif

}  // namespace meshpp::detail

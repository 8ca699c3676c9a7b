// small_pieces guard(bytes): until the guard goes, relayout's alltoalls stage `bytes` at a time
// (detail::alltoall_staging_bytes), so that small tensors move in many pieces: partial ones,
// and pieces of one dim under single indices of the dims outside it; and through MPI, not by
// direct copies (comm/single_copy.hpp), which need no pieces. Every rank of a group must set the
// same value (relayout.hpp). direct_copies guard(on) turns the direct copies on or off alone.
#pragma once

#include <meshpp/ops/relayout.hpp>

#include <cstddef>

namespace meshpp_test {

// direct_copies guard(on): until the guard goes, relayouts among one node's ranks copy the blocks
// straight between the ranks' memory (on) or go through MPI (off); every rank sets the same
class direct_copies {
 public:
  explicit direct_copies(bool on) : saved_(meshpp::detail::single_copy_relayout) {
    meshpp::detail::single_copy_relayout = on;
  }
  ~direct_copies() { meshpp::detail::single_copy_relayout = saved_; }
  direct_copies(const direct_copies&) = delete;
  direct_copies& operator=(const direct_copies&) = delete;

 private:
  bool saved_;
};

class small_pieces {
 public:
  explicit small_pieces(std::size_t bytes)
      : saved_(meshpp::detail::alltoall_staging_bytes),
        saved_direct_(meshpp::detail::single_copy_relayout) {
    meshpp::detail::alltoall_staging_bytes = bytes;
    meshpp::detail::single_copy_relayout = false;
  }
  ~small_pieces() {
    meshpp::detail::alltoall_staging_bytes = saved_;
    meshpp::detail::single_copy_relayout = saved_direct_;
  }
  small_pieces(const small_pieces&) = delete;
  small_pieces& operator=(const small_pieces&) = delete;

 private:
  std::size_t saved_;
  bool saved_direct_;
};

}  // namespace meshpp_test

// small_pieces guard(bytes): until the guard goes, relayout's alltoalls stage `bytes` at a time
// (detail::alltoall_staging_bytes), so that small tensors move in many pieces: partial ones,
// and pieces of one dim under single indices of the dims outside it. Every rank of a group
// must set the same value (relayout.hpp).
#pragma once

#include <meshpp/ops/relayout.hpp>

#include <cstddef>

namespace meshpp_test {

class small_pieces {
 public:
  explicit small_pieces(std::size_t bytes) : saved_(meshpp::detail::alltoall_staging_bytes) {
    meshpp::detail::alltoall_staging_bytes = bytes;
  }
  ~small_pieces() { meshpp::detail::alltoall_staging_bytes = saved_; }
  small_pieces(const small_pieces&) = delete;
  small_pieces& operator=(const small_pieces&) = delete;

 private:
  std::size_t saved_;
};

}  // namespace meshpp_test

// The checked MPI path (core/checked.hpp): counts past MPI's int, MPI errors as
// meshpp::error, and the debug mode's fingerprints when no one is at fault.
//
// Counts past INT_MAX. Every collective, relayout, shift (permute), gather to a root and
// gradient bucket is run twice: with detail::mpi_count_limit at INT_MAX, and lowered to a
// handful of values, which sends the same data through the split paths (calls in pieces,
// strided derived datatypes, staged pieces, point-to-point messages) that counts over 2^31
// take; the results must be the same bits. A real count over 2^31 is the `large` test
// (checked_mpi_large.cpp).
#include <meshpp/comm/buckets.hpp>
#include <meshpp/comm/collectives.hpp>
#include <meshpp/comm/permute.hpp>
#include <meshpp/comm/reduce_scatter_ring.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/detail/checked.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/ops/relayout.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/ops/shift.hpp>

#include <climits>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(a);
MESHPP_DIM(b);

namespace {
using mesh_t = mp::mesh<mp::axes<rows, cols>>;

// with_limit(n, f): f() with mpi_count_limit = n, restored after (also when f throws)
template <class F>
auto with_limit(std::size_t n, F&& f) {
  struct restore {
    std::size_t old = mp::detail::mpi_count_limit;
    ~restore() { mp::detail::mpi_count_limit = old; }
  } r;
  mp::detail::mpi_count_limit = n;
  return f();
}

// value(r, i): what world rank r holds at i: distinct, and not ordered by r or i
float value(int r, std::size_t i) {
  return static_cast<float>((r * 37 + static_cast<int>(i) * 11) % 101) - 50.0f;
}

std::vector<float> mine(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(world().rank(), i);
  return v;
}
}  // namespace

TEST_CASE("collectives in pieces give the same bits as in one call") {
  const int n = world().size();
  const auto g = meshpp_test::grid2(n);
  mesh_t m(g);
  const std::size_t p = static_cast<std::size_t>(m.communicator<rows, cols>().size());
  for (std::size_t limit : {std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
    CAPTURE(limit);
    const std::size_t len = 12 * p + 5;  // not a multiple of the limits
    {                                    // allreduce: sum and max
      auto whole = mine(len), pieces = mine(len);
      mp::allreduce<mp::over<rows, cols>>::run(m, std::span(whole));
      with_limit(limit, [&] { mp::allreduce<mp::over<rows, cols>>::run(m, std::span(pieces)); });
      CHECK(whole == pieces);
      auto most = mine(len), most_pieces = mine(len);
      mp::allreduce<mp::over<cols>, mp::op::max>::run(m, std::span(most));
      with_limit(limit, [&] {
        mp::allreduce<mp::over<cols>, mp::op::max>::run(m, std::span(most_pieces));
      });
      CHECK(most == most_pieces);
    }
    {  // allgather: blocks of len
      const auto in = mine(len);
      std::vector<float> whole(len * p), pieces(len * p);
      mp::allgather<mp::over<rows, cols>>::run(m, std::span<const float>(in), std::span(whole));
      with_limit(limit, [&] {
        mp::allgather<mp::over<rows, cols>>::run(m, std::span<const float>(in), std::span(pieces));
      });
      CHECK(whole == pieces);
    }
    {  // alltoall and reduce_scatter: p blocks of len
      const auto in = mine(len * p);
      std::vector<float> whole(len * p), pieces(len * p);
      mp::alltoall<mp::over<rows, cols>>::run(m, std::span<const float>(in), std::span(whole));
      with_limit(limit, [&] {
        mp::alltoall<mp::over<rows, cols>>::run(m, std::span<const float>(in), std::span(pieces));
      });
      CHECK(whole == pieces);
      std::vector<float> sum(len), sum_pieces(len);
      mp::reduce_scatter<mp::over<rows, cols>>::run(m, std::span<const float>(in), std::span(sum));
      with_limit(limit, [&] {
        mp::reduce_scatter<mp::over<rows, cols>>::run(m, std::span<const float>(in),
                                                      std::span(sum_pieces));
      });
      CHECK(sum == sum_pieces);
      // the same through the reduce_scatter ring at every group size (2 members: as above)
      const std::size_t ring_from = mp::detail::reduce_scatter_ring_from;
      mp::detail::reduce_scatter_ring_from = 0;
      std::vector<float> ring(len), ring_pieces(len);
      mp::reduce_scatter<mp::over<rows, cols>>::run(m, std::span<const float>(in), std::span(ring));
      with_limit(limit, [&] {
        mp::reduce_scatter<mp::over<rows, cols>>::run(m, std::span<const float>(in),
                                                      std::span(ring_pieces));
      });
      mp::detail::reduce_scatter_ring_from = ring_from;
      CHECK(ring == ring_pieces);
    }
    {  // broadcast from the group's last member
      auto whole = mine(len), pieces = mine(len);
      const int root = m.communicator<rows, cols>().size() - 1;
      mp::broadcast<mp::over<rows, cols>>::run(m, std::span(whole), root);
      with_limit(limit,
                 [&] { mp::broadcast<mp::over<rows, cols>>::run(m, std::span(pieces), root); });
      CHECK(whole == pieces);
    }
    {  // permute: member j sends j + 1 + i values to member i (the offsets outgrow the limit)
      const auto& comm = m.communicator<rows, cols>();
      const std::size_t me = static_cast<std::size_t>(comm.rank());
      std::vector<std::size_t> send_counts(p), recv_counts(p);
      for (std::size_t j = 0; j < p; ++j) {
        send_counts[j] = me + 1 + j;
        recv_counts[j] = j + 1 + me;
      }
      std::size_t s = 0, r = 0;
      for (std::size_t j = 0; j < p; ++j) s += send_counts[j], r += recv_counts[j];
      const auto send = mine(s);
      std::vector<float> whole(r), pieces(r);
      mp::permute<mp::over<rows, cols>>::run(
          m, std::span<const float>(send), std::span<const std::size_t>(send_counts),
          std::span(whole), std::span<const std::size_t>(recv_counts));
      with_limit(limit, [&] {
        mp::permute<mp::over<rows, cols>>::run(
            m, std::span<const float>(send), std::span<const std::size_t>(send_counts),
            std::span(pieces), std::span<const std::size_t>(recv_counts));
      });
      CHECK(whole == pieces);
      // and the values are where the permute's contract puts them: from member j, its values
      // from its send offset for this member on
      std::size_t at = 0;
      bool placed = true;
      for (std::size_t j = 0; j < p; ++j) {
        std::size_t their_offset = 0;  // member j's send offset for this member
        for (std::size_t k = 0; k < me; ++k) their_offset += j + 1 + k;
        const int their_world = meshpp::detail::world_rank_of(MPI_Comm(comm), static_cast<int>(j));
        for (std::size_t i = 0; i < recv_counts[j]; ++i)
          placed = placed && pieces[at + i] == value(their_world, their_offset + i);
        at += recv_counts[j];
      }
      CHECK(placed);
    }
  }
}

TEST_CASE("the einsum rings (reduce_scatter_ring, allreduce_ring) in pieces give the same bits") {
  mesh_t m(meshpp_test::grid2(world().size()));
  const std::size_t p = static_cast<std::size_t>(m.communicator<rows, cols>().size());
  const std::size_t block = 11;
  // this member's part of block b: written (accumulate false) or added
  auto make = [&](std::size_t b, float* dst, bool accumulate) {
    for (std::size_t i = 0; i < block; ++i) {
      const float x = value(world().rank(), b * block + i);
      dst[i] = accumulate ? dst[i] + x : x;
    }
  };
  for (std::size_t limit : {std::size_t{1}, std::size_t{4}}) {
    CAPTURE(limit);
    std::vector<float> mine_block(block), mine_pieces(block);
    mp::reduce_scatter_ring<mp::over<rows, cols>>::run<float>(m, std::span(mine_block), make);
    with_limit(limit, [&] {
      mp::reduce_scatter_ring<mp::over<rows, cols>>::run<float>(m, std::span(mine_pieces), make);
    });
    CHECK(mine_block == mine_pieces);
    std::vector<float> all(block * p), all_pieces(block * p);
    mp::allreduce_ring<mp::over<rows, cols>>::run<float>(m, std::span(all), make);
    with_limit(limit, [&] {
      mp::allreduce_ring<mp::over<rows, cols>>::run<float>(m, std::span(all_pieces), make);
    });
    CHECK(all == all_pieces);
    // and the sum is right: block j of `all` holds the sum over members of their part of j
    float expected = 0;
    for (int r = 0; r < world().size(); ++r) expected += value(r, block * (p - 1) + 3);
    CHECK(all[block * (p - 1) + 3] == doctest::Approx(expected));
  }
}

TEST_CASE("relayout, shift, gather to a root and gradient buckets in pieces give the same bits") {
  const int n = world().size();
  mesh_t m(meshpp_test::grid2(n));
  using from = mp::layout<mp::split<a, rows>, mp::split<b, cols>>;
  using to = mp::layout<mp::split<b, rows>, mp::split<a, cols>>;
  const auto sizes = mp::extents{a{} = 6 * n, b{} = 10 * n};
  using t_from = mp::tensor<float, mp::shape<a, b>, from, mesh_t>;
  const auto t = mp::random_uniform<t_from>(m, sizes, 7);
  for (std::size_t limit : {std::size_t{1}, std::size_t{5}}) {
    CAPTURE(limit);
    const auto whole = mp::relayout<to>(t);
    const auto pieces = with_limit(limit, [&] { return mp::relayout<to>(t); });
    CHECK(meshpp_test::bit_equal(whole.local(), pieces.local()));
    // split unevenly, some stripes empty where a dim is shorter than its mesh dim: blocks of
    // their own sizes, none at all for some members, in point-to-point messages
    for (const auto& uneven :
         {mp::extents{a{} = 2 * n + 1, b{} = n + 1}, mp::extents{a{} = 1, b{} = 2 * n + 1}}) {
      const auto u = mp::random_uniform<t_from>(m, uneven, 8);
      const auto u_whole = mp::relayout<to>(u);
      const auto u_pieces = with_limit(limit, [&] { return mp::relayout<to>(u); });
      CHECK(meshpp_test::bit_equal(u_whole.local(), u_pieces.local()));
      CHECK(meshpp_test::bit_equal(mp::gather(u_pieces), mp::gather(u)));
    }

    const auto shifted = mp::shift<a>(t, 5, mp::boundary::wrap);
    const auto shifted_pieces =
        with_limit(limit, [&] { return mp::shift<a>(t, 5, mp::boundary::wrap); });
    CHECK(meshpp_test::bit_equal(shifted.local(), shifted_pieces.local()));

    const int root = n - 1;
    const auto at_root = mp::gather(t, root);
    const auto at_root_pieces = with_limit(limit, [&] { return mp::gather(t, root); });
    CHECK(meshpp_test::bit_equal(at_root, at_root_pieces));
    if (world().rank() == root) CHECK(at_root.size() == static_cast<std::size_t>(60 * n * n));

    // a gradient bucket of two spans, one longer than the limit
    auto g1 = mine(9), g2 = mine(4);
    auto h1 = g1, h2 = g2;
    auto sum_bucket = [&](std::vector<float>& x, std::vector<float>& y) {
      mp::detail::bucket_queue q(1 << 20);
      auto bx = q.add(m, 3u, std::span(x));
      auto by = q.add(m, 3u, std::span(y));
      q.flush();
      bx->wait();
      by->wait();
    };
    sum_bucket(g1, g2);
    with_limit(limit, [&] { sum_bucket(h1, h2); });
    CHECK(g1 == h1);
    CHECK(g2 == h2);
  }
}

TEST_CASE("a failing MPI call is a meshpp::error naming the rank, the call and the collective") {
  mesh_t m(meshpp_test::grid2(world().size()));
  std::vector<float> data(4, 1.0f);
  const mp::detail::call_site site{"allreduce", 3u, mp::detail::mesh_names<mesh_t>, "float", 4};
  // a negative count: every MPI reports MPI_ERR_COUNT, on every rank, before communicating;
  // the mesh's communicators return the error instead of ending the job
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        mp::detail::checked(MPI_Allreduce(MPI_IN_PLACE, data.data(), -1, MPI_FLOAT, MPI_SUM,
                                          MPI_Comm(m.communicator<rows, cols>())),
                            "MPI_Allreduce", site);
      },
      {"meshpp: rank " + std::to_string(world().rank()) +
       ": MPI_Allreduce failed in allreduce "
       "over [rows, cols] of 4 float: "}));
  // the ranks are still in step: a real allreduce after it
  mp::allreduce<mp::over<rows, cols>>::run(m, std::span(data));
  CHECK(data[0] == static_cast<float>(world().size()));
}

TEST_CASE("as_count refuses a count over the limit (a bug in meshpp, named as one)") {
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [] { (void)mp::detail::as_count(std::size_t{INT_MAX} + 1); },
      {"internal error", "2147483648"}));
  CHECK(with_limit(5, [] { return mp::detail::as_count(5); }) == 5);
}

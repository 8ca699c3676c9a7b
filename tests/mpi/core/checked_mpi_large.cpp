// Counts past 2^31 for real (label `large`: about 2.2 GB per rank for the allreduce, 3.3 GB for
// the relayout; ctest runs it at 2 ranks). checked_mpi.cpp runs the same split paths with a
// lowered limit and small buffers; this file shows they hold at the real one.
//   - an allreduce of 2^31 + 2^20 uint8 values per rank: more than one MPI count carries, so
//     two MPI_Allreduce calls (INT_MAX values, then the rest); every value checked
//   - a relayout of a uint8 tensor of 2^16 x 33280 = 2 181 038 080 values (past 2^31 in all;
//     global offsets past int) from split rows to split columns; every value checked against
//     its global index
#include <meshpp/comm/collectives.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/core/detail/checked.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/ops/relayout.hpp>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(ranks);
MESHPP_DIM(a);
MESHPP_DIM(b);

namespace {
using mesh_t = mp::mesh<mp::axes<ranks>>;
using u8 = unsigned char;

// what rank r holds at i before the allreduce: 0, 1 or 2, so that sums stay small
u8 part(int r, std::size_t i) { return static_cast<u8>((i * 7 + static_cast<std::size_t>(r)) % 3); }

// the relayout's value at global (i, j): not periodic along either dim within a block
u8 at(std::size_t i, std::size_t j) { return static_cast<u8>((i * 31 + j * 17 + (i >> 8)) % 251); }
}  // namespace

TEST_CASE("an allreduce of 2^31 + 2^20 values per rank sums every value") {
  mesh_t m({world().size()});
  const std::size_t n = (std::size_t{1} << 31) + (std::size_t{1} << 20);
  REQUIRE(n > static_cast<std::size_t>(INT_MAX));
  const int me = world().rank(), p = world().size();
  std::vector<u8> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = part(me, i);
  mp::allreduce<mp::over<ranks>>::run(m, std::span(v));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    unsigned expected = 0;
    for (int r = 0; r < p; ++r) expected += part(r, i);
    wrong += v[i] != expected;
  }
  CHECK(wrong == 0);
  const auto c = m.counters().total(mp::collective::allreduce);
  CHECK(c.calls == 1);  // counted once, as the one collective it is
  CHECK(c.values == n);
}

TEST_CASE("a relayout of a tensor of more than 2^31 values") {
  mesh_t m({world().size()});
  const std::size_t rows = std::size_t{1} << 16, cols = 33280;
  REQUIRE(rows * cols > static_cast<std::size_t>(INT_MAX));
  using t_rows = mp::tensor<u8, mp::shape<a, b>, mp::layout<mp::split<a, ranks>>, mesh_t>;
  using to = mp::layout<mp::split<b, ranks>>;
  const auto sizes = mp::extents{a{} = static_cast<long>(rows), b{} = static_cast<long>(cols)};
  const auto t = mp::generate<t_rows>(m, sizes, [](const auto& g) { return at(g[0], g[1]); });
  const auto moved = mp::relayout<to>(t);
  // this rank's columns: a contiguous stripe of cols / p
  const auto p = static_cast<std::size_t>(world().size());
  const std::size_t width = cols / p, first = width * static_cast<std::size_t>(world().rank());
  const auto& local = moved.local();
  REQUIRE(local.shape()[0] == rows);
  REQUIRE(local.shape()[1] == width);
  std::size_t wrong = 0;
  const u8* x = local.data();
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < width; ++j) wrong += x[i * width + j] != at(i, first + j);
  CHECK(wrong == 0);
}

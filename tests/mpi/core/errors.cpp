// Run-time errors that only sizes can reveal fail together: every rank throws the same
// meshpp::error before any communication, and the ranks stay in step afterwards.
//
// The Mesh-TensorFlow README's illegal layout "channels:processor_rows" (channels 3 on
// processor_rows 2) is no error in meshpp: a split dim whose size the mesh dim does not
// divide is split into near-equal blocks. The first two cases check that every maker lays
// such a dim out so, with the values of the whole array.
#include <meshpp/core/create.hpp>
#include <meshpp/core/detail/agree.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <algorithm>
#include <array>
#include <string>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::ranks_in_step;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(channels);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

namespace {
// The mesh [processor_rows p, processor_cols n/p], with p = 2 wherever n is even.
std::array<int, 2> processor_grid(int n) {
  return n % 2 == 0 ? std::array{2, n / 2} : std::array{1, n};
}

}  // namespace

// A split dim its mesh dim does not divide is no error: it is split into near-equal blocks,
// the last ones shorter (core/divides.hpp). Every maker gives each rank its block, with
// the values of the same element of the whole array.
TEST_CASE("channels:processor_rows with channels 3 splits channels 2 + 1") {
  const int n = world().size();
  const auto g = processor_grid(n);
  using rules = mp::layout<mp::split<channels, processor_rows>>;
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, rules>;
  mesh_t m(g);
  const auto sizes = mp::extents{batch{} = 10, rows{} = 4, cols{} = 4, channels{} = 3};
  const auto t = mp::random_uniform<float, batch, rows, cols, channels>(m, sizes, 1);
  const int row = m.coordinates()[0];
  const std::size_t begin = g[0] == 1 ? 0 : (row == 0 ? 0 : 2),
                    size = g[0] == 1 ? 3 : (row == 0 ? 2 : 1);
  CHECK_ALL_RANKS(t.local_offsets()[3] == begin && t.local_shape()[3] == size);
  CHECK_ALL_RANKS(t.local_shape()[0] == 10 && t.local_offsets()[0] == 0);
  using whole_mesh = mp::mesh<mp::axes<processor_rows, processor_cols>>;
  const whole_mesh w(g);
  CHECK_ALL_RANKS(mp::gather(t) ==
                  mp::gather(mp::random_uniform<float, batch, rows, cols, channels>(w, sizes, 1)));
  CHECK(ranks_in_step());
}

TEST_CASE("a split dim its mesh dim does not divide: every maker gives each rank its block") {
  const int n = world().size();
  // the last mesh dim holds all n ranks: sizes n + 1 (blocks 2, 1, ..., 1) and 1 (the first
  // rank holds it, the others nothing) do not divide for n >= 2
  using rules = mp::layout<mp::split<cols, processor_cols>>;
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, rules>;
  mesh_t m({1, n});
  const auto me = static_cast<std::size_t>(m.rank());
  for (const std::size_t size : {static_cast<std::size_t>(n) + 1, std::size_t{1}}) {
    CAPTURE(size);
    const auto sizes = mp::extents{rows{} = 2, cols{} = size};
    using t = mp::tensor_of<double, mp::shape<rows, cols>, mesh_t>;
    const auto np = static_cast<std::size_t>(n);
    const std::size_t block = size / np + (me < size % np ? 1 : 0);
    const std::size_t begin = me * (size / np) + std::min(me, size % np);
    auto code = [](const std::array<std::size_t, 2>& i) { return double(i[0] * 100 + i[1]); };
    xt::xtensor<double, 2> global({std::size_t{2}, size});
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t j = 0; j < size; ++j) global(i, j) = code({i, j});
    auto holds_block = [&](const t& x) {
      return x.local_shape() == std::array<std::size_t, 2>{2, block} &&
             x.local_offsets() == std::array<std::size_t, 2>{0, begin};
    };
    SUBCASE("constructor, zeros, full") {
      CHECK_ALL_RANKS(holds_block(t(m, sizes)));
      CHECK_ALL_RANKS(holds_block(mp::zeros<double, rows, cols>(m, sizes)));
      const auto f = mp::full<t>(m, sizes, 1.5);
      CHECK_ALL_RANKS(holds_block(f) && xt::all(xt::equal(f.local(), 1.5)));
    }
    SUBCASE("generate and scatter: the whole array's values") {
      const auto a = mp::generate<double, rows, cols>(m, sizes, code);
      const auto b = mp::scatter<rows, cols>(m, sizes, global);
      CHECK_ALL_RANKS(holds_block(a) && holds_block(b));
      CHECK_ALL_RANKS(a.local() == xt::view(global, xt::all(), xt::range(begin, begin + block)));
      CHECK_ALL_RANKS(mp::gather(a) == global && mp::gather(b) == global);
      CHECK_ALL_RANKS(mp::gather(b, 0) == (me == 0 ? global : xt::xtensor<double, 2>{}));
    }
  }
  CHECK(ranks_in_step());
}

TEST_CASE("a negative dim size throws") {
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [] {
        (void)mp::extents{batch{} = 4, rows{} = -1};
      },
      {"meshpp: dim 'rows' was given the negative size -1"}));
  CHECK_ALL_RANKS(
      meshpp_test::throws_with<mp::error>([] { (void)(channels{} = -7L); }, {"'channels'", "-7"}));
  // zero is a size, not an error
  CHECK_NOTHROW((void)(channels{} = 0));
  CHECK(ranks_in_step());
}

TEST_CASE("a bad mesh throws on every rank and leaves them in step") {
  const int n = world().size();
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>>;
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>([&] { mesh_t m({2, n}); }, {"needs"}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>([&] { mesh_t m({n, 0}); }, {"size 0"}));
  CHECK(ranks_in_step());
  // a good mesh made right after works, its collectives included
  mesh_t m({1, n});
  int count = 0;
  boost::mpi::all_reduce(m.communicator<processor_cols>(), 1, count, std::plus<int>());
  CHECK(count == n);
}

TEST_CASE("agree_or_throw: a problem on one rank becomes an error on every rank") {
  const int n = world().size();
  const int me = world().rank();
  for (int bad = 0; bad < n; ++bad) {
    CAPTURE(bad);
    const std::string problem = me == bad ? "rank-local trouble" : "";
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { mp::agree_or_throw(world(), problem); },
        {me == bad ? "rank-local trouble" : "rank " + std::to_string(bad) + " found bad input"}));
  }
  // two ranks with problems: each reports its own, the others name the lowest
  if (n >= 2) {
    const std::string problem = me >= n - 2 ? "mine " + std::to_string(me) : "";
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { mp::agree_or_throw(world(), problem); },
        {me >= n - 2 ? "mine " + std::to_string(me)
                     : "rank " + std::to_string(n - 2) + " found bad input"}));
  }
  CHECK_NOTHROW(mp::agree_or_throw(world(), ""));
  CHECK(ranks_in_step());
}

// Run-time errors that only sizes can reveal fail together: every rank throws the same
// meshpp::error before any communication, and the ranks stay in step afterwards.
//
// The Mesh-TensorFlow README's illegal layout "channels:processor_rows" (channels 3 on
// processor_rows 2), generalised: a split dim whose size the mesh dim does not divide. A mesh
// dim of size >= 2 exists only at 2 ranks or more; at 1 rank every mesh dim has size 1, which
// divides every size, so there the same programs must *not* throw (that half is checked at
// every rank count, with sizes that do divide).
#include <meshpp/core/create.hpp>
#include <meshpp/core/detail/agree.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <string>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xbuilder.hpp>

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

TEST_CASE("channels:processor_rows with channels 3 throws on every rank") {
  const int n = world().size();
  const auto g = processor_grid(n);
  using rules = mp::layout<mp::split<channels, processor_rows>>;
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, rules>;
  mesh_t m(g);
  const auto sizes = mp::extents{batch{} = 100, rows{} = 28, cols{} = 28, channels{} = 3};
  auto make = [&] { (void)mp::random_uniform<float, batch, rows, cols, channels>(m, sizes, 1); };
  if (g[0] >= 2) {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        make, {"meshpp::tensor: dim 'channels' of size 3 is split over mesh dim "
               "'processor_rows' of size 2, and 3 is not divisible by 2 (tensor [batch, rows, "
               "cols, channels], layout channels:processor_rows)"}));
  } else {
    CHECK_NOTHROW(make());  // processor_rows has size 1
  }
  CHECK(ranks_in_step());
}

TEST_CASE("a split dim not divisible by its mesh dim throws on every rank, by every maker") {
  const int n = world().size();
  // the last mesh dim holds all n ranks: size n + 1 does not divide for n >= 2, n * 3 always does
  const std::size_t bad = static_cast<std::size_t>(n) + 1;
  const std::size_t good = static_cast<std::size_t>(n) * 3;
  using rules = mp::layout<mp::split<cols, processor_cols>>;
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, rules>;
  mesh_t m({1, n});
  const auto bad_sizes = mp::extents{rows{} = 2, cols{} = bad};
  const auto good_sizes = mp::extents{rows{} = 2, cols{} = good};
  using t = mp::tensor_of<double, mp::shape<rows, cols>, mesh_t>;
  const xt::xtensor<double, 2> bad_global = xt::zeros<double>({std::size_t{2}, bad});
  const xt::xtensor<double, 2> good_global = xt::zeros<double>({std::size_t{2}, good});

  const std::string message = "dim 'cols' of size " + std::to_string(bad) +
                              " is split over mesh dim 'processor_cols' of size " +
                              std::to_string(n) + ", and " + std::to_string(bad) +
                              " is not divisible by " + std::to_string(n);
  auto check_maker = [&](auto&& make_bad, auto&& make_good) {
    if (n >= 2) {
      CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(make_bad, {message}));
    } else {
      CHECK_NOTHROW(make_bad());
    }
    CHECK_NOTHROW(make_good());
    CHECK(ranks_in_step());
  };
  SUBCASE("constructor") {
    check_maker([&] { t x(m, bad_sizes); }, [&] { t x(m, good_sizes); });
  }
  SUBCASE("zeros") {
    check_maker([&] { (void)mp::zeros<double, rows, cols>(m, bad_sizes); },
                [&] { (void)mp::zeros<double, rows, cols>(m, good_sizes); });
  }
  SUBCASE("full") {
    check_maker([&] { (void)mp::full<t>(m, bad_sizes, 1.0); },
                [&] { (void)mp::full<t>(m, good_sizes, 1.0); });
  }
  SUBCASE("generate") {
    auto f = [](const std::array<std::size_t, 2>&) { return 1.0; };
    check_maker([&] { (void)mp::generate<double, rows, cols>(m, bad_sizes, f); },
                [&] { (void)mp::generate<double, rows, cols>(m, good_sizes, f); });
  }
  SUBCASE("random_normal") {
    check_maker([&] { (void)mp::random_normal<double, rows, cols>(m, bad_sizes, 1); },
                [&] { (void)mp::random_normal<double, rows, cols>(m, good_sizes, 1); });
  }
  SUBCASE("scatter") {
    check_maker([&] { (void)mp::scatter<rows, cols>(m, bad_sizes, bad_global); },
                [&] { (void)mp::scatter<rows, cols>(m, good_sizes, good_global); });
  }
}

TEST_CASE("the error names the offending dim among several split ones") {
  const int n = world().size();
  using rules = mp::layout<mp::split<batch, processor_rows>, mp::split<cols, processor_cols>>;
  using mesh_t = mp::mesh<mp::axes<processor_rows, processor_cols>, rules>;
  const auto g = processor_grid(n);
  mesh_t m(g);
  // batch divides; cols is one more than a multiple of processor_cols
  const std::size_t cols_size = static_cast<std::size_t>(g[1]) * 2 + 1;
  const auto sizes = mp::extents{batch{} = 4, rows{} = 3, cols{} = cols_size};
  auto make = [&] { (void)mp::zeros<float, batch, rows, cols>(m, sizes); };
  if (g[1] >= 2) {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        make, {"dim 'cols' of size " + std::to_string(cols_size),
               "'processor_cols' of size " + std::to_string(g[1])}));
  } else {
    CHECK_NOTHROW(make());
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

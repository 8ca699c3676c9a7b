// scatter and gather: a replicated global array scattered under a layout and gathered back is
// the same array bit for bit; gather(t, root) delivers to root alone; bad input fails on
// every rank. Runs at any rank count: meshes are built from the communicator's size.
#include <meshpp/core/random.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace {
const auto sizes = mp::extents{i{} = 4, j{} = 12, k{} = 8};
const std::array<std::size_t, 3> global_shape{4, 12, 8};

// The global array every rank holds: distinct values, including ones whose bits matter
// (negative zero, a denormal) so that only a bitwise copy passes.
template <class T>
xt::xtensor<T, 3> global_array() {
  auto g = meshpp_test::filled<T>(global_shape, [](std::uint64_t n) {
    return static_cast<T>(mp::normal_at<double>(5, n) * 100);
  });
  if constexpr (!std::is_integral_v<T>) {
    g(0, 0, 1) = T(-0.0);
    g(3, 11, 7) = std::numeric_limits<T>::denorm_min();
  }
  return g;
}

// Scatters the global array under Mesh's rules and checks the slice, gather(t), and
// gather(t, root) for every root.
template <class T, class Mesh>
void round_trip(const Mesh& m) {
  const auto global = global_array<T>();
  const auto t = mp::scatter<i, j, k>(m, sizes, global);
  static_assert(std::is_same_v<typename std::decay_t<decltype(t)>::value_type, T>);
  CAPTURE(t.describe());
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      t.local(), meshpp_test::block(global, t.local_offsets(), t.local_shape())));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), global));

  for (int root = 0; root < m.size(); ++root) {
    CAPTURE(root);
    const auto on_root = mp::gather(t, root);
    if (world().rank() == root) {
      CHECK_ALL_RANKS(meshpp_test::bit_equal(on_root, global));
    } else {
      CHECK_ALL_RANKS(on_root.size() == 0);
    }
  }
}

template <class T>
void round_trip_every_layout() {
  const int n = world().size();
  SUBCASE("empty layout") { round_trip<T>(mp::mesh<mp::axes<all>>({n})); }
  SUBCASE("1-D mesh") {
    round_trip<T>(mp::mesh<mp::axes<all>, mp::layout<mp::split<j, all>>>({n}));
    round_trip<T>(mp::mesh<mp::axes<all>, mp::layout<mp::split<k, all>>>({n}));
  }
  SUBCASE("2-D mesh, both mesh dims used") {
    round_trip<T>(
        mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<k, rows>, mp::split<j, cols>>>(
            meshpp_test::grid2(n)));
  }
  SUBCASE("2-D mesh, one mesh dim replicating") {
    // the slices repeat along the unused mesh dim: gather(t, root) must take them from root's
    // side of it, gather(t) from each rank's own
    round_trip<T>(
        mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<j, rows>>>(meshpp_test::grid2(n)));
    round_trip<T>(
        mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<i, cols>>>(meshpp_test::grid2(n)));
    round_trip<T>(mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<j, cols>>>({1, n}));
    round_trip<T>(mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<j, cols>>>({n, 1}));
  }
  SUBCASE("3-D mesh") {
    round_trip<T>(
        mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<i, x>, mp::split<j, y>, mp::split<k, z>>>(
            meshpp_test::grid3(n)));
    round_trip<T>(
        mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<k, x>, mp::split<i, y>, mp::split<j, z>>>(
            meshpp_test::grid3(n)));
    round_trip<T>(mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<k, z>>>({1, 1, n}));
  }
}
}  // namespace

TEST_CASE_TEMPLATE("scatter then gather is the identity, bit for bit", T, double, float, int) {
  round_trip_every_layout<T>();
}

TEST_CASE("scatter evaluates an xtensor expression") {
  const int n = world().size();
  mp::mesh<mp::axes<all>, mp::layout<mp::split<k, all>>> m({n});
  const auto global = global_array<double>();
  const auto t = mp::scatter<i, j, k>(m, sizes, global * 2.0 + 1.0);
  const xt::xtensor<double, 3> expected = global * 2.0 + 1.0;
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), expected));
}

TEST_CASE("scatter with the explicit tensor type, into a different dim order") {
  const int n = world().size();
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<j, all>>>;
  mesh_t m({n});
  // a [k, i] tensor: the global array is in the tensor's own dim order
  const auto global = meshpp_test::filled<float>(std::array<std::size_t, 2>{8, 4},
                                                 [](std::uint64_t v) { return v * 0.5f; });
  using t_ki = mp::tensor_of<float, mp::shape<k, i>, mesh_t>;
  const auto t = mp::scatter<t_ki>(m, sizes, global);
  CHECK(t.local_shape() == std::array<std::size_t, 2>{8, 4});  // no rule for k or i: replicated
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), global));
  using t_kj = mp::tensor_of<float, mp::shape<k, j>, mesh_t>;
  const auto g2 = meshpp_test::filled<float>(std::array<std::size_t, 2>{8, 12},
                                             [](std::uint64_t v) { return v * 0.25f; });
  const auto t2 = mp::scatter<t_kj>(m, sizes, g2);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t2), g2));
}

TEST_CASE("scatter with a wrongly shaped array throws on every rank") {
  const int n = world().size();
  const int me = world().rank();
  mp::mesh<mp::axes<all>, mp::layout<mp::split<j, all>>> m({n});
  const auto global = global_array<double>();
  const xt::xtensor<double, 3> wrong = xt::zeros<double>({4, 12, 7});

  SUBCASE("every rank passes the wrong shape") {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { (void)mp::scatter<i, j, k>(m, sizes, wrong); },
        {"meshpp::scatter: the global array on rank " + std::to_string(me) +
         " has shape [4, 12, 7], but the extents give [i:4, j:12, k:8]"}));
  }
  SUBCASE("only the last rank passes the wrong shape") {
    const int bad = n - 1;
    const bool mine_bad = me == bad;
    auto call = [&] { (void)mp::scatter<i, j, k>(m, sizes, mine_bad ? wrong : global); };
    if (mine_bad) {
      CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(call, {"has shape [4, 12, 7]"}));
    } else {
      // the others learn which rank found the problem
      CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
          call, {"rank " + std::to_string(bad) + " found bad input"}));
    }
  }
  SUBCASE("only rank 0 passes an array with the wrong number of dims") {
    const xt::xarray<double> flat = xt::zeros<double>({4, 96});
    const xt::xarray<double> right = global;
    auto call = [&] { (void)mp::scatter<i, j, k>(m, sizes, me == 0 ? flat : right); };
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        call, {me == 0 ? "has 2 dims; the tensor [i, j, k] has 3" : "rank 0 found bad input"}));
  }
  // nobody was left behind in a collective: the next ones work, in step
  int sum = 0;
  boost::mpi::all_reduce(world(), me, sum, std::plus<int>());
  CHECK(sum == n * (n - 1) / 2);
  const auto t = mp::scatter<i, j, k>(m, sizes, global);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), global));
}

TEST_CASE("gather to a root that is not a rank of the mesh throws on every rank") {
  const int n = world().size();
  mp::mesh<mp::axes<all>, mp::layout<mp::split<j, all>>> m({n});
  const auto t = mp::scatter<i, j, k>(m, sizes, global_array<double>());
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::gather(t, -1); },
      {"meshpp::gather(t, root): root -1 is not a rank of the mesh (it has " + std::to_string(n) +
       ")"}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>([&] { (void)mp::gather(t, n); },
                                                      {"root " + std::to_string(n)}));
  // and the next gather works
  const auto on_last = mp::gather(t, n - 1);
  CHECK_ALL_RANKS(world().rank() == n - 1 ? meshpp_test::bit_equal(on_last, global_array<double>())
                                          : on_last.size() == 0);
}

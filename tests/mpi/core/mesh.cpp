// mesh<axes<...>>: row-major coordinates, one sub-communicator per subset of mesh dims, and
// the errors for a mesh that does not fit the communicator. Runs at any rank count: the
// meshes are built from the communicator's size.
#include <meshpp/core/mesh.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

#include <boost/mpi/collectives/all_gather.hpp>
#include <boost/mpi/collectives/all_reduce.hpp>
#include <boost/serialization/array.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

using line_t = mp::mesh<mp::axes<all>>;
using grid_t = mp::mesh<mp::axes<rows, cols>>;
using cube_t = mp::mesh<mp::axes<x, y, z>>;

namespace {

// The row-major rank of coordinates c on a mesh of the given sizes (last dim fastest),
// computed here independently of the mesh.
template <std::size_t N>
int row_major(const std::array<int, N>& c, const std::array<int, N>& sizes) {
  int r = 0;
  for (std::size_t i = 0; i < N; ++i) r = r * sizes[i] + c[i];
  return r;
}

// Checks the coordinates of every rank of m: this rank's are its row-major digits,
// coordinates_of agrees with what every rank reports about itself, and no two ranks share
// coordinates.
template <class Mesh>
void check_coordinates(const Mesh& m) {
  const int n = world().size();
  CHECK(m.size() == n);
  CHECK(m.rank() == world().rank());
  const auto mine = m.coordinates();
  bool in_range = true;
  for (std::size_t i = 0; i < Mesh::ndims; ++i) {
    in_range = in_range && mine[i] >= 0 && mine[i] < m.sizes()[i];
  }
  CHECK_ALL_RANKS(in_range);
  CHECK_ALL_RANKS(row_major(mine, m.sizes()) == world().rank());
  CHECK_ALL_RANKS(m.coordinates_of(world().rank()) == mine);

  std::vector<typename Mesh::coordinates_type> everyone;
  boost::mpi::all_gather(world(), mine, everyone);
  bool agree = true;
  for (int r = 0; r < n; ++r) {
    agree = agree && m.coordinates_of(r) == everyone[r] && row_major(everyone[r], m.sizes()) == r;
  }
  CHECK_ALL_RANKS(agree);
  std::sort(everyone.begin(), everyone.end());
  CHECK(std::adjacent_find(everyone.begin(), everyone.end()) == everyone.end());
}

// Checks communicator(mask) for every subset of m's dims against the definition: the ranks
// that share this rank's coordinates outside the subset, ordered row-major by their
// coordinates inside it.
template <class Mesh>
void check_subset_communicators(const Mesh& m) {
  constexpr std::size_t nd = Mesh::ndims;
  const auto mine = m.coordinates();
  for (unsigned mask = 0; mask < (1u << nd); ++mask) {
    CAPTURE(mask);
    const auto& comm = m.communicator(mask);
    int expected_size = 1;
    for (std::size_t i = 0; i < nd; ++i) {
      if (mask & (1u << i)) expected_size *= m.sizes()[i];
    }
    CHECK_ALL_RANKS(comm.size() == expected_size);

    // Expected members, from coordinates alone, in the order they must have.
    std::vector<int> expected;
    for (int r = 0; r < m.size(); ++r) {
      const auto c = m.coordinates_of(r);
      bool same_outside = true;
      for (std::size_t i = 0; i < nd; ++i) {
        if (!(mask & (1u << i)) && c[i] != mine[i]) same_outside = false;
      }
      if (same_outside) expected.push_back(r);
    }
    // coordinates_of lists ranks row-major over all dims; restricted to those sharing the
    // outside coordinates, that is row-major over the subset: sort by the subset digits.
    auto subset_rank = [&](int r) {
      const auto c = m.coordinates_of(r);
      int k = 0;
      for (std::size_t i = 0; i < nd; ++i) {
        if (mask & (1u << i)) k = k * m.sizes()[i] + c[i];
      }
      return k;
    };
    std::sort(expected.begin(), expected.end(),
              [&](int a, int b) { return subset_rank(a) < subset_rank(b); });

    std::vector<int> members;
    boost::mpi::all_gather(comm, world().rank(), members);
    CHECK_ALL_RANKS(members == expected);

    // Member j's coordinates along the subset are j's row-major digits.
    bool digits = members.size() == static_cast<std::size_t>(comm.size());
    for (int j = 0; digits && j < comm.size(); ++j) {
      const auto c = m.coordinates_of(members[j]);
      int rest = j;
      for (std::size_t i = nd; i-- > 0;) {
        if (mask & (1u << i)) {
          digits = digits && c[i] == rest % m.sizes()[i];
          rest /= m.sizes()[i];
        } else {
          digits = digits && c[i] == mine[i];
        }
      }
      digits = digits && rest == 0;
    }
    CHECK_ALL_RANKS(digits);
    CHECK_ALL_RANKS(comm.rank() == subset_rank(world().rank()));

    // the communicator works: a sum over it counts its members
    int count = 0;
    boost::mpi::all_reduce(comm, 1, count, std::plus<int>());
    CHECK_ALL_RANKS(count == expected_size);
  }
  // communicator<>() is this rank alone; communicator over every dim is the whole mesh
  CHECK(m.communicator(0).size() == 1);
  CHECK(m.communicator((1u << nd) - 1).size() == m.size());
}

}  // namespace

TEST_CASE("a 1-D mesh of every rank") {
  const int n = world().size();
  line_t m({n});
  CHECK(m.sizes() == std::array<int, 1>{n});
  CHECK(m.size<all>() == n);
  CHECK_ALL_RANKS(m.coordinate<all>() == world().rank());
  check_coordinates(m);
  check_subset_communicators(m);
  CHECK(m.describe() == "[all:" + std::to_string(n) + "]");
}

TEST_CASE("a 2-D mesh is row-major: rank = r * cols + c") {
  const auto g = meshpp_test::grid2(world().size());
  grid_t m(g);
  CHECK(m.size<rows>() == g[0]);
  CHECK(m.size<cols>() == g[1]);
  CHECK_ALL_RANKS(m.coordinate<rows>() * g[1] + m.coordinate<cols>() == world().rank());
  CHECK_ALL_RANKS(m.coordinate<rows>() == world().rank() / g[1]);
  CHECK_ALL_RANKS(m.coordinate<cols>() == world().rank() % g[1]);
  check_coordinates(m);
  check_subset_communicators(m);
  // the typed spelling names the same communicators as the bit sets
  CHECK(&m.communicator<rows>() == &m.communicator(grid_t::mask_v<rows>));
  CHECK(&m.communicator<cols>() == &m.communicator(2u));
  CHECK(&m.communicator<rows, cols>() == &m.communicator(3u));
  CHECK(&m.communicator<>() == &m.communicator(0u));
  CHECK(m.describe() == "[rows:" + std::to_string(g[0]) + ", cols:" + std::to_string(g[1]) + "]");
}

TEST_CASE("a 2-D mesh of one row of every rank") {
  const int n = world().size();
  grid_t m({1, n});
  CHECK_ALL_RANKS(m.coordinate<rows>() == 0 && m.coordinate<cols>() == world().rank());
  check_coordinates(m);
  check_subset_communicators(m);
}

TEST_CASE("a 3-D mesh is row-major: rank = (x * ny + y) * nz + z") {
  const auto g = meshpp_test::grid3(world().size());
  cube_t m(g);
  CHECK_ALL_RANKS((m.coordinate<x>() * g[1] + m.coordinate<y>()) * g[2] + m.coordinate<z>() ==
                  world().rank());
  check_coordinates(m);
  check_subset_communicators(m);
  static_assert(cube_t::mask_v<x, z> == 5u && cube_t::mask_v<y> == 2u);
  CHECK(&m.communicator<z, x>() == &m.communicator(5u));  // a set: order does not matter
}

TEST_CASE("a 3-D mesh with every rank on its middle dim") {
  const int n = world().size();
  cube_t m({1, n, 1});
  CHECK_ALL_RANKS(m.coordinates() == std::array<int, 3>{0, world().rank(), 0});
  check_coordinates(m);
  check_subset_communicators(m);
}

TEST_CASE("coordinates_of covers the mesh in row-major order") {
  const auto g = meshpp_test::grid3(world().size());
  cube_t m(g);
  int r = 0;
  for (int a = 0; a < g[0]; ++a) {
    for (int b = 0; b < g[1]; ++b) {
      for (int c = 0; c < g[2]; ++c, ++r) CHECK(m.coordinates_of(r) == std::array<int, 3>{a, b, c});
    }
  }
  CHECK(r == world().size());
}

TEST_CASE("a mesh made from extents") {
  const auto g = meshpp_test::grid2(world().size());
  grid_t m(mp::extents{rows{} = g[0], cols{} = g[1]});
  grid_t from_array(g);
  CHECK(m.sizes() == g);
  CHECK(m.coordinates() == from_array.coordinates());
  CHECK(m.describe() == from_array.describe());
  check_subset_communicators(m);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        grid_t bad(mp::extents{rows{} = g[0], cols{} = g[1] + 1});
      },
      {"needs"}));
}

TEST_CASE("copies of a mesh share its state") {
  line_t m({world().size()});
  const line_t copy = m;
  CHECK(copy == m);
  CHECK(&copy.communicator<all>() == &m.communicator<all>());
  const line_t other({world().size()});
  CHECK_FALSE(other == m);
}

TEST_CASE("a mesh whose product is not the rank count throws on every rank") {
  const int n = world().size();
  const std::string ranks = std::to_string(n);
  const std::string more = std::to_string(n + 1);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { line_t m({n + 1}); }, {"meshpp::mesh: mesh shape [all:" + more + "] needs " + more +
                                   " ranks, but the communicator has " + ranks}));
  // exact text once, as a user sees it
  CHECK_THROWS_WITH_AS(grid_t({2, n}),
                       ("meshpp::mesh: mesh shape [rows:2, cols:" + ranks + "] needs " +
                        std::to_string(2 * n) + " ranks, but the communicator has " + ranks)
                           .c_str(),
                       mp::error);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        cube_t m({n, 2, 1});
      },
      {"[x:" + ranks + ", y:2, z:1]", "has " + ranks}));
  // every rank is still in step: nobody went on into the sub-communicator splits
  int sum = 0;
  boost::mpi::all_reduce(world(), 1, sum, std::plus<int>());
  CHECK(sum == n);
}

TEST_CASE("a mesh dim of size 0 or less throws on every rank") {
  const int n = world().size();
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        grid_t m({0, n});
      },
      {"[rows:0, cols:" + std::to_string(n) + "]", "size 0"}));
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] {
        grid_t m({-1, -n});
      },
      {"size -1", "at least 1 rank"}));
  CHECK_ALL_RANKS(
      meshpp_test::throws_with<mp::error>([&] { line_t m({0}); }, {"[all:0]", "size 0"}));
}

TEST_CASE("a mesh over a sub-communicator") {
  // Split the world into halves (or one group at odd sizes); each half is a mesh of its own.
  const int n = world().size();
  const int half = n >= 2 ? n / 2 : 1;
  const bool first = world().rank() < half;
  const auto comm = world().split(first ? 0 : 1);
  line_t m({comm.size()}, comm);
  CHECK_ALL_RANKS(m.size() == (first ? half : n - half));
  CHECK_ALL_RANKS(m.rank() == (first ? world().rank() : world().rank() - half));
  CHECK_ALL_RANKS(m.coordinate<all>() == m.rank());
  std::vector<int> members;
  boost::mpi::all_gather(m.communicator<all>(), world().rank(), members);
  std::vector<int> expected;
  for (int r = first ? 0 : half; r < (first ? half : n); ++r) expected.push_back(r);
  CHECK_ALL_RANKS(members == expected);
}

// every way to write n as N ascending factors, for balanced_grid's check
template <std::size_t N>
void factorizations(int n, int least, std::array<int, N>& now, std::size_t k,
                    std::vector<std::array<int, N>>& out) {
  if (k == N - 1) {
    if (n >= least) {
      now[k] = n;
      out.push_back(now);
    }
    return;
  }
  for (int f = least; f <= n; ++f) {
    if (n % f) continue;
    now[k] = f;
    factorizations<N>(n / f, f, now, k + 1, out);
  }
}

template <std::size_t N>
void check_balanced_grid(int n) {
  const auto g = mp::balanced_grid<N>(n);
  long product = 1;
  for (int x : g) product *= x;
  CHECK(product == n);
  CHECK(std::is_sorted(g.begin(), g.end()));
  std::vector<std::array<int, N>> all;
  std::array<int, N> now{};
  factorizations<N>(n, 1, now, 0, all);
  REQUIRE(!all.empty());
  int least_spread = n;
  for (const auto& f : all) least_spread = std::min(least_spread, f[N - 1] - f[0]);
  INFO("n = " << n << ", N = " << N);
  CHECK(g[N - 1] - g[0] == least_spread);
}

TEST_CASE("balanced_grid: the factors of the rank count closest to each other") {
  CHECK(mp::balanced_grid<2>(8) == std::array<int, 2>{2, 4});
  CHECK(mp::balanced_grid<2>(7) == std::array<int, 2>{1, 7});
  CHECK(mp::balanced_grid<2>(36) == std::array<int, 2>{6, 6});
  CHECK(mp::balanced_grid<3>(12) == std::array<int, 3>{2, 2, 3});
  CHECK(mp::balanced_grid<3>(2) == std::array<int, 3>{1, 1, 2});
  CHECK(mp::balanced_grid<4>(16) == std::array<int, 4>{2, 2, 2, 2});
  CHECK(mp::balanced_grid<1>(5) == std::array<int, 1>{5});
  for (int n = 1; n <= 300; ++n) {
    check_balanced_grid<2>(n);
    check_balanced_grid<3>(n);
  }
  // the world's size fits a mesh of each rank
  const int n = world().size();
  grid_t fitted(mp::balanced_grid<2>(n));
  cube_t cube(mp::balanced_grid<3>(n));
  CHECK_ALL_RANKS(fitted.size() == n && cube.size() == n);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>([] { mp::balanced_grid<2>(0); },
                                                      {"balanced_grid", "at least 1", "not 0"}));
}

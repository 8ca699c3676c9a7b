// Reductions over named dims, part 4: layouts on 2-D, 3-D and 4-D meshes: (c) reduced dims
// split over two mesh dims, (d) kept dims split while the reduced one is whole; the output
// keeps the input's layout on the kept dims (checked on the type) and lists its dims in the
// named output order; exactly one allreduce runs, of the output's local size, over exactly
// the mesh dims the reduced dims are split over, and none when no reduced dim is split.
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh. Meshes are built from the communicator's size.
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/reduce.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "reductions_fixture.hpp"

TEST_CASE("(c), (d) on a 2-D mesh: batch:rows, hidden:cols") {
  using mesh_t =
      mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;
  mesh_t m(grid2(world().size()));
  const auto a = input(m, 5);
  const auto A = to_double(mp::gather(a));
  constexpr unsigned r = mesh_t::mask_v<rows>, c = mesh_t::mask_v<cols>;
  // seq reduced and whole, both kept dims split: no communication
  using out1 = decltype(mp::reduce_sum<seq>(a));
  static_assert(
      std::is_same_v<layout_of<out1>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum<seq>(a); }, reduction_reference<2>(kind::sum, A, {B, H}), tol,
      0);
  // hidden reduced: an allreduce over cols only, of [batch/rows, seq]
  using out2 = decltype(mp::reduce_sum<hidden>(a));
  static_assert(std::is_same_v<layout_of<out2>, mp::layout<mp::split<batch, rows>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum<hidden>(a); }, reduction_reference<2>(kind::sum, A, {B, S}),
      tol, c);
  // to [hidden, batch]: the kept dims transposed, each still split over its mesh dim
  using out3 = decltype(mp::reduce_sum_to<mp::shape<hidden, batch>>(a));
  static_assert(
      std::is_same_v<layout_of<out3>, mp::layout<mp::split<hidden, cols>, mp::split<batch, rows>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum_to<mp::shape<hidden, batch>>(a); },
      reduction_reference<2>(kind::sum, A, {H, B}), tol, 0);
  // everything: over rows and cols at once
  check_reduction(
      m, [&] { return mp::reduce_sum(a); }, reduction_reference<0>(kind::sum, A, {}), tol, r | c);
}

TEST_CASE("a 3-D mesh: batch:x, seq:y, hidden:z") {
  using rules = mp::layout<mp::split<batch, x>, mp::split<seq, y>, mp::split<hidden, z>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
  mesh_t m(grid3(world().size()));
  const auto a = input(m, 6);
  const auto A = to_double(mp::gather(a));
  check_reduction(
      m, [&] { return mp::reduce_sum(a); }, reduction_reference<0>(kind::sum, A, {}), tol,
      mesh_t::mask_v<x, y, z>);
  using out = decltype(mp::reduce_sum<seq>(a));
  static_assert(
      std::is_same_v<layout_of<out>, mp::layout<mp::split<batch, x>, mp::split<hidden, z>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum<seq>(a); }, reduction_reference<2>(kind::sum, A, {B, H}), tol,
      mesh_t::mask_v<y>);
  check_reduction(
      m, [&] { return mp::reduce_min_to<mp::shape<hidden>>(a); },
      reduction_reference<1>(kind::min, A, {H}), 0, mesh_t::mask_v<x, y>);
}

TEST_CASE("every shape of a 4-D mesh: batch:x, seq:y, hidden whole") {
  // one mesh type, every shape with n ranks: a reduced dim on a mesh dim of size 1 is still
  // counted (its allreduce sends nothing), so the expected counters depend on the types only
  using rules = mp::layout<mp::split<batch, x>, mp::split<seq, y>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z, rest>, rules>;
  for (const auto& shape : mesh_shapes<4>(world().size())) {
    mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = input(m, 7);
    const auto A = to_double(mp::gather(a));
    check_reduction(
        m, [&] { return mp::reduce_sum<batch>(a); }, reduction_reference<2>(kind::sum, A, {S, H}),
        tol, mesh_t::mask_v<x>);
    check_reduction(
        m, [&] { return mp::reduce_sum<hidden>(a); }, reduction_reference<2>(kind::sum, A, {B, S}),
        tol, 0);
    check_reduction(
        m, [&] { return mp::reduce_sum_to<mp::shape<hidden>>(a); },
        reduction_reference<1>(kind::sum, A, {H}), tol, mesh_t::mask_v<x, y>);
  }
}

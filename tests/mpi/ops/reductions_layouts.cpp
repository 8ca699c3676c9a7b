// Reductions over named dims, part 3: layouts on 1-D meshes. The reduced dims (a) whole, (b)
// split over one mesh dim, (d) whole while a kept dim is split ((c), split over two mesh dims,
// and larger meshes: reductions_meshes.cpp); the output
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

TEST_CASE("replicated: no reduction communicates") {
  using mesh_t = mp::mesh<mp::axes<all>>;
  mesh_t m({world().size()});
  const auto a = input(m, 1);
  const auto A = to_double(mp::gather(a));
  check_reduction(
      m, [&] { return mp::reduce_sum(a); }, reduction_reference<0>(kind::sum, A, {}), tol, 0);
  check_reduction(
      m, [&] { return mp::reduce_max<seq>(a); }, reduction_reference<2>(kind::max, A, {B, H}), 0,
      0);
}

TEST_CASE("(a), (d): the reduced dims whole, a kept dim split: no communication") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
  mesh_t m({world().size()});
  const auto a = input(m, 2);
  const auto A = to_double(mp::gather(a));
  using out1 = decltype(mp::reduce_sum<batch, seq>(a));
  static_assert(std::is_same_v<shape_of<out1>, mp::shape<hidden>>);
  static_assert(std::is_same_v<layout_of<out1>, mp::layout<mp::split<hidden, all>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum<batch, seq>(a); }, reduction_reference<1>(kind::sum, A, {H}),
      tol, 0);
  // to [hidden, batch]: seq reduced, the kept dims transposed, hidden still split
  using out2 = decltype(mp::reduce_mean_to<mp::shape<hidden, batch>>(a));
  static_assert(std::is_same_v<layout_of<out2>, mp::layout<mp::split<hidden, all>>>);
  check_reduction(
      m, [&] { return mp::reduce_mean_to<mp::shape<hidden, batch>>(a); },
      reduction_reference<2>(kind::mean, A, {H, B}), tol, 0);
  // reducing the split dim too does communicate
  check_reduction(
      m, [&] { return mp::reduce_sum(a); }, reduction_reference<0>(kind::sum, A, {}), tol,
      mesh_t::mask_v<all>);
}

TEST_CASE("(b): the reduced dim split over one mesh dim") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  mesh_t m({world().size()});
  const auto a = input(m, 3);
  const auto b = input(m, 4);
  const auto A = to_double(mp::gather(a));
  const auto Bv = to_double(mp::gather(b));
  constexpr unsigned over_all = mesh_t::mask_v<all>;
  using out1 = decltype(mp::reduce_sum<batch>(a));
  static_assert(std::is_same_v<layout_of<out1>, mp::layout<>>);
  check_reduction(
      m, [&] { return mp::reduce_sum<batch>(a); }, reduction_reference<2>(kind::sum, A, {S, H}),
      tol, over_all);
  // the allreduce carries the whole [seq, hidden] output on every rank (a group of one rank
  // counts nothing)
  m.counters().reset();
  (void)mp::reduce_sum<batch>(a);
  const std::size_t one = m.counters().group_of_one(over_all) ? 0 : 1;
  CHECK(m.counters().at(mp::collective::allreduce, over_all).values == one * ns * nh);
  // (d) batch kept and split, seq reduced and whole: no communication; [hidden, batch] order
  using out2 = decltype(mp::reduce_sum_to<mp::shape<hidden, batch>>(a));
  static_assert(std::is_same_v<shape_of<out2>, mp::shape<hidden, batch>>);
  static_assert(std::is_same_v<layout_of<out2>, mp::layout<mp::split<batch, all>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum_to<mp::shape<hidden, batch>>(a); },
      reduction_reference<2>(kind::sum, A, {H, B}), tol, 0);
  // of an expression
  xt::xtensor<double, 3> E(A.shape());
  for (std::size_t i = 0; i < E.size(); ++i) {
    E.data()[i] =
        static_cast<float>(static_cast<float>(A.data()[i]) * static_cast<float>(Bv.data()[i]));
  }
  check_reduction(
      m, [&] { return mp::reduce_max<batch, seq>(a * b); },
      reduction_reference<1>(kind::max, E, {H}), 0, over_all);
}

TEST_CASE("mixed layouts in a reduced expression: the expression's layout decides") {
  // no rules: each tensor names its layout; sb splits batch, w holds everything whole
  using mesh_t = mp::mesh<mp::axes<all>>;
  using bsh = mp::shape<batch, seq, hidden>;
  using split_b = mp::tensor<float, bsh, mp::layout<mp::split<batch, all>>, mesh_t>;
  using whole = mp::tensor<float, bsh, mp::layout<>, mesh_t>;
  mesh_t m({world().size()});
  const auto sb = mp::random_normal<split_b>(m, sizes, 8);
  const auto w = mp::random_normal<whole>(m, sizes, 9);
  const auto SB = to_double(mp::gather(sb));
  const auto W = to_double(mp::gather(w));
  xt::xtensor<double, 3> E(SB.shape());
  for (std::size_t i = 0; i < E.size(); ++i) {
    E.data()[i] = static_cast<float>(SB.data()[i]) * static_cast<float>(W.data()[i]);
  }
  constexpr unsigned over_all = mesh_t::mask_v<all>;
  // w * sb is split on batch: reducing batch combines the stripes
  check_reduction(
      m, [&] { return mp::reduce_sum<batch>(w * sb); },
      reduction_reference<2>(kind::sum, E, {S, H}), tol, over_all);
  // keeping batch: the output is split like sb, with no communication
  using out = decltype(mp::reduce_sum<seq>(w * sb));
  static_assert(std::is_same_v<layout_of<out>, mp::layout<mp::split<batch, all>>>);
  check_reduction(
      m, [&] { return mp::reduce_sum<seq>(w * sb); }, reduction_reference<2>(kind::sum, E, {B, H}),
      tol, 0);
  // w alone is whole on every rank: reducing it needs nobody else
  check_reduction(
      m, [&] { return mp::reduce_sum<batch>(w); }, reduction_reference<2>(kind::sum, W, {S, H}),
      tol, 0);
}

TEST_CASE("a tensor of no dims reduces and evaluates") {
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
  mesh_t m({world().size()});
  const auto a = input(m, 10);
  const auto A = to_double(mp::gather(a));
  const auto total = mp::reduce_sum(a);
  const double want = reduction_reference<0>(kind::sum, A, {})();
  // reducing a tensor of no dims is the identity, with no communication
  check_reduction(
      m, [&] { return mp::reduce_sum(total); }, reduction_reference<0>(kind::sum, A, {}), tol, 0);
  // and it is an expression like any other
  const auto doubled = mp::eval(total * 2 - 1);
  static_assert(std::is_same_v<shape_of<decltype(doubled)>, mp::shape<>>);
  CHECK_ALL_RANKS(std::abs(doubled.local()() - (2 * want - 1)) <=
                  tol * std::max(1.0, std::abs(2 * want)));
}

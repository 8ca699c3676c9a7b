// The spellings test shared by reductions.cpp (sum, mean) and reductions_extrema.cpp (max,
// min): one reduction kind in all three spellings, of a tensor and of an expression, on the
// mesh [rows, cols] with batch:rows and seq:cols, so that the reduced dims are split over one
// mesh dim, over two, or over none, depending on the call.
#pragma once

#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/reduce.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "reduction_reference.hpp"
#include "testing.hpp"

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace spellings {
namespace mp = meshpp;
using namespace meshpp_test;

constexpr std::size_t nb = 8, ns = 4, nh = 12;
inline const auto sizes = mp::extents{batch{} = nb, seq{} = ns, hidden{} = nh};

template <kind K>
void check_every_spelling() {
  using rules = mp::layout<mp::split<batch, rows>, mp::split<seq, cols>>;
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  mesh_t m(grid2(world().size()));
  const auto a = mp::random_normal<float, batch, seq, hidden>(m, sizes, 1);
  const auto b = mp::random_normal<float, batch, seq, hidden>(m, sizes, 2);
  const auto h = mp::random_normal<float, hidden>(m, sizes, 3);
  const auto A = to_double(mp::gather(a));
  const auto Bv = to_double(mp::gather(b));
  const auto Hv = to_double(mp::gather(h));
  // the expression a * b - h, by a plain loop (in float, as the library computes it, so that
  // max and min compare exactly)
  xt::xtensor<double, 3> E(A.shape());
  for (std::size_t i = 0; i < nb; ++i)
    for (std::size_t j = 0; j < ns; ++j)
      for (std::size_t l = 0; l < nh; ++l) {
        E(i, j, l) =
            static_cast<float>(static_cast<float>(A(i, j, l)) * static_cast<float>(Bv(i, j, l))) -
            static_cast<float>(Hv(l));
      }
  const double tol = tolerance<float>(K);
  constexpr unsigned r = mesh_t::mask_v<rows>, c = mesh_t::mask_v<cols>;

  SUBCASE("reduce<Dims...>(tensor)") {
    check_reduction(
        m, [&] { return reduce<K, batch>(a); }, reduction_reference<2>(K, A, {S, H}), tol, r);
    check_reduction(
        m, [&] { return reduce<K, hidden>(a); }, reduction_reference<2>(K, A, {B, S}), tol, 0);
    check_reduction(
        m, [&] { return reduce<K, seq, batch>(a); }, reduction_reference<1>(K, A, {H}), tol, r | c);
    using out = decltype(reduce<K, batch>(a));
    static_assert(std::is_same_v<typename out::shape_type, mp::shape<seq, hidden>>);
    static_assert(std::is_same_v<typename out::layout_type, mp::layout<mp::split<seq, cols>>>);
    static_assert(std::is_same_v<typename out::value_type, float>);
  }
  SUBCASE("reduce_to<shape<Out...>>(tensor): the output in the named order") {
    check_reduction(
        m, [&] { return reduce<K, mp::shape<hidden, batch>>(a); },
        reduction_reference<2>(K, A, {H, B}), tol, c);
    check_reduction(
        m, [&] { return reduce<K, mp::shape<seq>>(a); }, reduction_reference<1>(K, A, {S}), tol, r);
    using out = decltype(reduce<K, mp::shape<hidden, batch>>(a));
    static_assert(std::is_same_v<typename out::shape_type, mp::shape<hidden, batch>>);
    static_assert(std::is_same_v<typename out::layout_type, mp::layout<mp::split<batch, rows>>>);
  }
  SUBCASE("reduce(tensor): every dim, a tensor of no dims holding one value") {
    const auto want = reduction_reference<0>(K, A, {});
    check_reduction(
        m, [&] { return reduce<K>(a); }, want, tol, r | c);
    const auto out = reduce<K>(a);
    static_assert(std::is_same_v<typename decltype(out)::shape_type, mp::shape<>>);
    static_assert(std::is_same_v<typename decltype(out)::layout_type, mp::layout<>>);
    CHECK(out.local().size() == 1);
    // every rank holds the whole result
    CHECK_ALL_RANKS(std::abs(out.local()() - want()) <= tol * std::max(1.0, std::abs(want())));
  }
  SUBCASE("of an expression, in one pass") {
    check_reduction(
        m, [&] { return reduce<K, batch>(a * b - h); }, reduction_reference<2>(K, E, {S, H}), tol,
        r);
    check_reduction(
        m, [&] { return reduce<K>(a * b - h); }, reduction_reference<0>(K, E, {}), tol, r | c);
    // the expression's dims are the union of its operands': [hidden] * [batch, seq, hidden]
    // is [hidden, batch, seq], and reducing seq leaves [hidden, batch]
    xt::xtensor<double, 3> HA({nh, nb, ns});
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < ns; ++j)
        for (std::size_t l = 0; l < nh; ++l)
          HA(l, i, j) = static_cast<float>(Hv(l) * 2) + static_cast<float>(A(i, j, l));
    check_reduction(
        m, [&] { return reduce<K, seq>(h * 2 + a); }, reduction_reference<2>(K, HA, {0, 1}), tol,
        c);
  }
}
}  // namespace spellings

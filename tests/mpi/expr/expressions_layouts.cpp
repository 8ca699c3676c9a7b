// Named expressions, part 6: broadcasting and transposing by *name*, under layouts over 1-D,
// 2-D and 3-D meshes. Operands with different dim sets and orders combine into the union of
// their dims (first operand's order, then new dims); assigning to a tensor that lists the
// same dims in another order transposes by name; eval(e) has e's dims and layout.
//
// Every result is gathered and compared with a reference computed on one rank without any
// mesh, by plain loops over the gathered inputs, and each rank's slice is compared with its
// block of the reference. Meshes are built from the communicator's size.
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::matches;
using meshpp_test::slice_of;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);
MESHPP_DIM(rest);

namespace {
constexpr std::size_t nb = 8, nh = 12, ns = 4;
const auto sizes = mp::extents{batch{} = nb, hidden{} = nh, seq{} = ns};
constexpr double tol = 1e-6;  // a few float operations against the double reference

template <class E>
using shape_of = typename std::remove_cvref_t<E>::shape_type;
template <class E>
using layout_of = typename std::remove_cvref_t<E>::layout_type;

template <class Mesh>
void check_by_name(const Mesh& m) {
  using rules = typename Mesh::rules;
  const auto a = mp::random_normal<float, batch, hidden>(m, sizes, 11);
  const auto b = mp::random_normal<float, batch, hidden>(m, sizes, 12);
  const auto h = mp::random_normal<float, hidden>(m, sizes, 13);
  const auto t = mp::random_normal<float, hidden, batch>(m, sizes, 14);
  const auto s = mp::random_normal<float, seq>(m, sizes, 15);
  const auto v = mp::random_normal<float, batch>(m, sizes, 16);
  const auto A = mp::gather(a), Bm = mp::gather(b), Tt = mp::gather(t);
  const auto H = mp::gather(h), S = mp::gather(s), V = mp::gather(v);

  // [batch, hidden] + [hidden] + [hidden, batch] + [seq] -> [batch, hidden, seq]
  const auto e = a + h + t + s;
  using bhs = mp::shape<batch, hidden, seq>;
  static_assert(std::is_same_v<shape_of<decltype(e)>, bhs>);
  static_assert(std::is_same_v<layout_of<decltype(e)>, mp::layout_for_t<rules, bhs>>);
  xt::xtensor<double, 3> want_e({nb, nh, ns});
  for (std::size_t i = 0; i < nb; ++i)
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t k = 0; k < ns; ++k)
        want_e(i, j, k) = double(A(i, j)) + H(j) + Tt(j, i) + S(k);

  {  // broadcast by name; eval gives the expression's dims and layout
    const auto r = mp::eval(e);
    static_assert(std::is_same_v<typename decltype(r)::shape_type, bhs>);
    static_assert(std::is_same_v<typename decltype(r)::layout_type, mp::layout_for_t<rules, bhs>>);
    static_assert(std::is_same_v<typename decltype(r)::value_type, float>);
    CHECK(r.global_shape() == std::array<std::size_t, 3>{nb, nh, ns});
    CHECK_ALL_RANKS(matches(r.local(), slice_of(want_e, r), tol));
    CHECK_ALL_RANKS(matches(mp::gather(r), want_e, tol));

    // [seq] first: [seq, batch, hidden]
    const auto e2 = s * a - t;
    static_assert(std::is_same_v<shape_of<decltype(e2)>, mp::shape<seq, batch, hidden>>);
    xt::xtensor<double, 3> want2({ns, nb, nh});
    for (std::size_t k = 0; k < ns; ++k)
      for (std::size_t i = 0; i < nb; ++i)
        for (std::size_t j = 0; j < nh; ++j) want2(k, i, j) = double(S(k)) * A(i, j) - Tt(j, i);
    CHECK_ALL_RANKS(matches(mp::gather(mp::eval(e2)), want2, tol));

    // an operand lacking only the innermost dim: [batch, hidden] - [batch] (every other
    // operand is contiguous there, so rows must not be merged across it)
    const auto e4 = a - v;
    static_assert(std::is_same_v<shape_of<decltype(e4)>, mp::shape<batch, hidden>>);
    xt::xtensor<double, 2> want4({nb, nh});
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nh; ++j) want4(i, j) = double(A(i, j)) - V(i);
    CHECK_ALL_RANKS(matches(mp::gather(mp::eval(e4)), want4, tol));

    // an outer product of two 1-dim tensors, scaled: [hidden, seq]
    const auto e3 = 2 * h * s;
    static_assert(std::is_same_v<shape_of<decltype(e3)>, mp::shape<hidden, seq>>);
    xt::xtensor<double, 2> want3({nh, ns});
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t k = 0; k < ns; ++k) want3(j, k) = 2.0 * H(j) * S(k);
    CHECK_ALL_RANKS(matches(mp::gather(mp::eval(e3)), want3, tol));
  }

  {  // assigning to another dim order transposes by name
    mp::tensor_of<float, mp::shape<hidden, batch>, Mesh> ht = a + b;
    xt::xtensor<double, 2> want({nh, nb});
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t i = 0; i < nb; ++i) want(j, i) = double(A(i, j)) + Bm(i, j);
    CHECK_ALL_RANKS(matches(ht.local(), slice_of(want, ht), tol));
    CHECK_ALL_RANKS(matches(mp::gather(ht), want, tol));

    // `ht = expr` into the existing tensor: every element is overwritten
    ht = a * t;
    for (std::size_t j = 0; j < nh; ++j)
      for (std::size_t i = 0; i < nb; ++i) want(j, i) = double(A(i, j)) * Tt(j, i);
    CHECK_ALL_RANKS(matches(mp::gather(ht), want, tol));

    // three dims, every one moved: [batch, hidden, seq] into [seq, hidden, batch]
    mp::tensor_of<float, mp::shape<seq, hidden, batch>, Mesh> u = e;
    xt::xtensor<double, 3> want_u({ns, nh, nb});
    for (std::size_t i = 0; i < nb; ++i)
      for (std::size_t j = 0; j < nh; ++j)
        for (std::size_t k = 0; k < ns; ++k) want_u(k, j, i) = want_e(i, j, k);
    CHECK_ALL_RANKS(matches(u.local(), slice_of(want_u, u), tol));
    CHECK_ALL_RANKS(matches(mp::gather(u), want_u, tol));
  }
}
}  // namespace

TEST_CASE("broadcasting and transposing by name, under every shape of a 4-D mesh") {
  // rules batch:x, hidden:y, seq:z over [x, y, z, rest]: every shape with n ranks, so one
  // compiled mesh type runs replicated ({1, 1, 1, n}), 1-D split ({n, 1, 1, 1}, ...), and
  // split on two dims ({2, 2, 1, 1}, {1, 2, 2, 1}, ...) at 4 ranks
  using rules = mp::layout<mp::split<batch, x>, mp::split<hidden, y>, mp::split<seq, z>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z, rest>, rules>;
  const auto shapes = meshpp_test::mesh_shapes<4>(world().size());
  CHECK(shapes.size() == (world().size() == 4 ? 10u : world().size() == 2 ? 4u : 1u));
  for (const auto& shape : shapes) {
    mesh_t m(shape);
    CAPTURE(m.describe());
    check_by_name(m);
  }
}

// Named expressions, part 3: operands whose same-named dims differ in size, or that live on
// different meshes, throw meshpp::error on every rank (the check needs no communication);
// expressions own the rvalue tensors they are built from and refer to the lvalue ones.
//
// Results are gathered and compared with references computed on one rank without any mesh.
// The tensors are split over a 1-D mesh of every rank (hidden:all).
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

#include "reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::map;
using meshpp_test::matches;
using meshpp_test::world;
using meshpp_test::zip;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(seq);
MESHPP_DIM(all);

namespace {
constexpr std::size_t nb = 8, nh = 12;
const auto sizes = mp::extents{batch{} = nb, hidden{} = nh, seq{} = 4};
using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
using tensor_t = mp::tensor_of<float, mp::shape<batch, hidden>, mesh_t>;
constexpr double tol = 1e-6;

template <class E>
auto result(const E& e) {
  return mp::gather(mp::eval(e));
}

struct inputs {
  mesh_t m{mesh_t::coordinates_type{world().size()}};
  tensor_t a = mp::random_normal<float, batch, hidden>(m, sizes, 1);
  tensor_t b = mp::random_normal<float, batch, hidden>(m, sizes, 2);
  xt::xtensor<float, 2> A = mp::gather(a), Bm = mp::gather(b);
};
}  // namespace

TEST_CASE("operands whose same-named dims differ in size throw on every rank") {
  inputs in;
  // references, not a structured binding: lambdas below capture them, which C++20 allows of
  // bindings but clang before 16 rejects
  const auto& m = in.m;
  const auto& a = in.a;
  const auto h8 = mp::zeros<float, hidden>(m, mp::extents{hidden{} = 8});
  const auto s = mp::zeros<float, seq>(m, sizes);
  using meshpp_test::throws_with;
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)(a + h8); }, {"'hidden'", "12 and 8"}));
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)(h8 * a); }, {"'hidden'", "8 and 12"}));
  // deep in a chain, among broadcast dims
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)(mp::relu(a * 2 + s) - mp::sigmoid(h8)); },
                                         {"'hidden'", "12 and 8"}));
  // where() meets its operands in its result's dim order: the branches first, then the
  // condition, so the branch's size comes first
  CHECK_ALL_RANKS(
      throws_with<mp::error>([&] { (void)mp::where(a > 0, h8, 1.0f); }, {"'hidden'", "8 and 12"}));
  // equal slices do not hide different global sizes: hidden 8 split over the ranks and
  // hidden 4 held whole have slices of 4 at 2 ranks
  using whole_h = mp::tensor<float, mp::shape<hidden>, mp::layout<>, mesh_t>;
  const auto whole4 = mp::zeros<whole_h>(m, mp::extents{hidden{} = 4});
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { (void)(h8 + whole4); }, {"'hidden'", "8 and 4"}));
  // assignment to a tensor of other sizes
  auto dest = mp::zeros<float, batch, hidden>(m, mp::extents{batch{} = nb, hidden{} = 8});
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { dest = a * 2; }, {"'hidden'", "size 12", "size 8"}));
  // with agreeing sizes the same expressions are fine, and the ranks are still in step
  CHECK_ALL_RANKS(matches(result(h8 * 3 + mp::zeros<whole_h>(m, mp::extents{hidden{} = 8})),
                          xt::xtensor<double, 1>(xt::xtensor<double, 1>::shape_type{8}, 0.0), 0));
}

TEST_CASE("operands on different meshes of one type throw on every rank") {
  inputs in;
  mesh_t other(mesh_t::coordinates_type{world().size()});
  const auto c = mp::ones<float, batch, hidden>(other, sizes);
  CHECK_ALL_RANKS(
      meshpp_test::throws_with<mp::error>([&] { (void)(in.a + c); }, {"different meshes"}));
}

TEST_CASE("an expression takes its tensors' sizes when it is evaluated, not when it is made") {
  inputs in;
  const auto& m = in.m;
  using meshpp_test::throws_with;
  auto x = mp::ones<float, batch, hidden>(m, sizes);
  const auto y = mp::ones<float, batch, hidden>(m, sizes);
  const auto both = x + y;  // refers to x and y, hidden 12 in both
  const auto alone = x * 2;
  x = mp::zeros<float, batch, hidden>(m, mp::extents{batch{} = nb, hidden{} = 8});
  auto dest = mp::zeros<float, batch, hidden>(m, sizes);  // hidden 12, as x was
  // the operands no longer agree: an error, not a read past x's slice
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { dest = both; }, {"'hidden'", "8 and 12"}));
  // one operand: the expression is x's new size, which the destination no longer has
  CHECK_ALL_RANKS(throws_with<mp::error>([&] { dest = alone; }, {"'hidden'", "size 8", "size 12"}));
  const auto now = mp::eval(alone);
  CHECK_ALL_RANKS(now.sizes().get<hidden>() == 8);
  CHECK_ALL_RANKS(matches(
      mp::gather(now), xt::xtensor<double, 2>(xt::xtensor<double, 2>::shape_type{nb, 8}, 0.0), 0));
}

TEST_CASE("expressions own rvalue tensors and refer to lvalue ones") {
  inputs in;
  // references, not a structured binding: lambdas below capture them, which C++20 allows of
  // bindings but clang before 16 rejects
  auto& m = in.m;
  auto& a = in.a;
  auto& b = in.b;
  auto& A = in.A;
  auto& Bm = in.Bm;
  // the temporary eval(a + b) lives inside the expression after this statement ends
  const auto owned = mp::relu(mp::eval(a + b));
  // a tensor made inside a function and returned inside an expression
  const auto made = [&] {
    auto t = mp::random_normal<float, batch, hidden>(m, sizes, 33);
    return std::move(t) * 3;
  }();
  const auto T33 = mp::gather(mp::random_normal<float, batch, hidden>(m, sizes, 33));
  const auto referring = a * 2;

  // overwrite a and b, and make new tensors that may reuse freed memory
  a.local().fill(1.0f);
  b.local().fill(-1.0f);
  const auto noise = mp::random_normal<float, batch, hidden>(m, sizes, 99);
  const auto noise2 = mp::random_normal<float, batch, hidden>(m, sizes, 98);

  CHECK_ALL_RANKS(matches(
      result(owned), zip(A, Bm, [](double u, double v) { return std::max(u + v, 0.0); }), tol));
  CHECK_ALL_RANKS(matches(result(made), map(T33, [](double v) { return 3 * v; }), tol));
  // the lvalue operand is read when the expression is evaluated: a is all ones now
  CHECK_ALL_RANKS(matches(result(referring), map(A, [](double) { return 2.0; }), 0));
  // an expression copied into a bigger one keeps what it owns
  const auto bigger = owned - made;
  xt::xtensor<double, 2> want(A.shape());
  for (std::size_t i = 0; i < A.size(); ++i) {
    want.data()[i] = std::max(double(A.data()[i] + Bm.data()[i]), 0.0) - 3 * double(T33.data()[i]);
  }
  CHECK_ALL_RANKS(matches(result(bigger), want, tol));
  CHECK(noise.local().size() == noise2.local().size());
}

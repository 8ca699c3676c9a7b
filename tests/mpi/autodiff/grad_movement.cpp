// Gradients of relayout (autodiff/movement.hpp), checked by central differences (double) at
// every element: on a mesh whose rules split both dims (meshes grid2(n), [1, n] and [n, 1], so
// each dim is split over 1, 2 and 4 ranks somewhere) and on a mesh with no rules (everything
// replicated, so the relayouts slice). Then the communication of a relayout's gradient alone
// (vjp, counters reset after the forward pass): the transposed collective, and no other.
// Reshape and rename: grad_reshape.cpp; slicing, padding, concatenation, splitting and
// shifting: grad_slicing.cpp.
#include <meshpp/autodiff/movement.hpp>
#include <meshpp/core/counters.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

#include "grad_fixture.hpp"

namespace {
const auto sizes = mp::extents{batch{} = 4, hidden{} = 8};

template <class Mesh>
void check_all(const Mesh& m) {
  const auto a = mp::random_normal<double, batch, hidden>(m, sizes, 1);
  auto check = [&](const char* what, auto f) { check_gradient(what, a, f); };
  using by_hidden = mp::layout<mp::split<hidden, rows>>;
  check("relayout batch:rows -> hidden:rows",
        [](const auto& x) { return weighted_sum(mp::relayout<by_hidden>(x)); });
  check("relayout to replicated",
        [](const auto& x) { return weighted_sum(mp::relayout<mp::layout<>>(x)); });
  check("relayout to batch:cols, hidden:rows (a cycle)", [](const auto& x) {
    return weighted_sum(
        mp::relayout<mp::layout<mp::split<batch, cols>, mp::split<hidden, rows>>>(x));
  });
  check("relayout there and back, used twice", [](const auto& x) {
    const auto y = mp::relayout<by_hidden>(x);
    return weighted_sum(mp::relayout<split_rules>(y) * x);
  });
}
}  // namespace

TEST_CASE("relayout gradients match central differences, split layout") {
  for (const auto& shape : mesh_shapes()) check_all(split_mesh(shape));
}

TEST_CASE("relayout gradients match central differences, replicated layout") {
  check_all(replicated_mesh(meshpp_test::grid2(world().size())));
}

// The gradient of a relayout alone: vjp(y, dy, x) with dy of y's own type seeds y without
// communication, and the reduction graph has no other node, so the counters see only the
// backward step of the relayout.
namespace {
using bh = mp::shape<batch, hidden>;
template <class Layout>
using tensor_t = mp::tensor<double, bh, Layout, split_mesh>;
using batch_rows = mp::layout<mp::split<batch, rows>>;
using hidden_rows = mp::layout<mp::split<hidden, rows>>;
constexpr std::uint64_t total = 4 * 8;

struct expected {
  mp::collective kind;
  unsigned mask;
  std::uint64_t calls, values;
};

// only(m, e): the counters hold exactly e (or nothing at all when e.calls is 0)
bool only(const split_mesh& m, const expected& e) {
  bool ok = true;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    for (unsigned mask = 0; mask < 4; ++mask) {
      const auto& got = m.counters().at(kind, mask);
      // a group of one rank counts nothing
      const bool is_e = kind == e.kind && mask == e.mask && !m.counters().group_of_one(mask);
      ok = ok && got.calls == (is_e ? e.calls : 0) && got.values == (is_e ? e.values : 0);
    }
  }
  if (!ok) MESSAGE(m.counters().report());
  return ok;
}

template <class From, class To>
void check_backward(const split_mesh& m, const expected& e) {
  const auto x = mp::trace(mp::random_normal<tensor_t<From>>(m, sizes, 1));
  const auto y = mp::relayout<To>(x);
  const auto dy = mp::random_normal<tensor_t<To>>(m, sizes, 2);
  m.counters().reset();
  const auto [dx] = mp::vjp(y, dy, x);
  CHECK_ALL_RANKS(only(m, e));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(dx), mp::gather(dy)));
}
}  // namespace

TEST_CASE("the gradient of a relayout communicates exactly the transposed collective") {
  for (const auto& shape : mesh_shapes()) {
    const split_mesh m(shape);
    CAPTURE(m.describe());
    const std::uint64_t pr = static_cast<std::uint64_t>(shape[0]);
    constexpr unsigned over_rows = split_mesh::mask_v<rows>;
    // forward [batch/rows, hidden] |-> [batch, hidden] allgather over rows;
    // backward [batch, hidden] |-> [batch/rows, hidden] a local slice: no collective
    check_backward<batch_rows, mp::layout<>>(m, {mp::collective::allgather, over_rows, 0, 0});
    // forward: a local slice; backward: one allgather over rows of the local stripe
    check_backward<mp::layout<>, batch_rows>(m,
                                             {mp::collective::allgather, over_rows, 1, total / pr});
    // forward [batch/rows, hidden] |-> [batch, hidden/rows] alltoall over rows; backward the
    // reverse alltoall, of the same size
    check_backward<batch_rows, hidden_rows>(m,
                                            {mp::collective::alltoall, over_rows, 1, total / pr});
  }
}

// Batched einsum: batch dims leading (gemm straight on the slices), between the dims of
// strided matrices (gemm in place, rows ld apart), not leading (the copy path), in another
// order in each operand and the output, split in one operand only. Every result is compared with a
// single-rank reference (einsum_check.hpp) and every einsum's counters are checked. Runs at any
// rank count: meshes are built from the communicator's size.
#include <cstdint>
#include <type_traits>

#include "einsum_check.hpp"

namespace mp = meshpp;
using einsum_test::allreduce_over;
using einsum_test::check;
using einsum_test::make;
using einsum_test::no_allreduce;
using meshpp_test::world;

MESHPP_DIM(b);
MESHPP_DIM(h);
MESHPP_DIM(s);
MESHPP_DIM(t);
MESHPP_DIM(d);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
const auto sizes = mp::extents{b{} = 4, h{} = 4, s{} = 4, t{} = 8, d{} = 8};
constexpr unsigned over_rows = 1u, over_cols = 2u;  // bit sets of axes<rows, cols>
using mesh_t = mp::mesh<mp::axes<rows, cols>>;
template <class Rules, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, Rules, T, Dims...>;

// Attention scores q[b, h, s, d] x k[b, h, t, d] -> [b, h, s, t] (batch dims b, h leading:
// gemm straight on the slices, k transposed), and (every) -> [b, h, t, s] (the output
// transposed).
template <class T, class Rules, bool every, class Want>
void attention(Want&& want_for) {
  using R = Rules;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto q = make<tensor_t<R, T, b, h, s, d>>(m, sizes, 1);
    const auto k = make<tensor_t<R, T, b, h, t, d>>(m, sizes, 2);
    check<mp::shape<b, h, s, t>>(q, k, sizes, want_for(m));
    if constexpr (every) check<mp::shape<b, h, t, s>>(q, k, sizes, want_for(m));
  }
}

// Attention with the heads beside the features, [b, s, h, d] (as a projection writes them):
// every operand and output is a batch over (b, h) of matrices whose rows lie h * d apart, read
// and written in place. q[b, s, h, d] x k[b, t, h, d] -> [b, h, s, t] (a strided, b strided
// and transposed); p[b, h, s, t] x k -> [b, s, h, d] (b strided, as the values v of attention,
// the output strided) and -> [b, d, h, s] (the output strided and transposed); k x p -> [b,
// h, d, s] (a strided and transposed). The cases split b, h, s or d, never t, so that the
// products with p (which contract t) communicate nothing; no einsum copies an operand or its
// output, whatever the split.
template <class T, class Rules, class WantQK, class WantPV>
void strided(WantQK&& want_qk, WantPV&& want_pv) {
  using R = Rules;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto q = make<tensor_t<R, T, b, s, h, d>>(m, sizes, 1);
    const auto k = make<tensor_t<R, T, b, t, h, d>>(m, sizes, 2);
    const auto p = make<tensor_t<R, T, b, h, s, t>>(m, sizes, 3);
    check<mp::shape<b, h, s, t>>(q, k, sizes, want_qk(m));
    check<mp::shape<b, s, h, d>>(p, k, sizes, want_pv(m));
    check<mp::shape<b, d, h, s>>(p, k, sizes, want_pv(m));
    check<mp::shape<b, h, d, s>>(k, p, sizes, want_pv(m));
    // in place: the einsums stream no bytes through copies
    m.counters().by_operation(true);
    (void)mp::einsum<mp::shape<b, h, s, t>>(q, k);
    (void)mp::einsum<mp::shape<b, s, h, d>>(p, k);
    (void)mp::einsum<mp::shape<b, d, h, s>>(p, k);
    (void)mp::einsum<mp::shape<b, h, d, s>>(k, p);
    std::uint64_t streamed = 0;
    std::size_t einsums = 0;
    for (const auto& o : m.counters().operations()) {
      if (o.name.starts_with("einsum ")) streamed += o.bytes_streamed, einsums += o.runs;
    }
    m.counters().by_operation(false);
    CHECK_ALL_RANKS(einsums == 4);
    CHECK_ALL_RANKS(streamed == 0);
  }
}

// x[s, b, d] x y[b, d, t] -> [b, s, t]: the batch dim b is not leading in x, so x is copied
// into [b, s, d] first; (every) -> [s, t, b] and [b, t, s] write the output through the
// other paths.
template <class T, class Rules, bool every, class Want>
void batch_not_leading(Want&& want_for) {
  using R = Rules;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto x = make<tensor_t<R, T, s, b, d>>(m, sizes, 3);
    const auto y = make<tensor_t<R, T, b, d, t>>(m, sizes, 4);
    check<mp::shape<b, s, t>>(x, y, sizes, want_for(m));
    if constexpr (every) {
      check<mp::shape<s, t, b>>(x, y, sizes, want_for(m));
      check<mp::shape<b, t, s>>(x, y, sizes, want_for(m));
    }
  }
}
}  // namespace

TEST_CASE("batched einsum, batch dims leading") {
  SUBCASE("replicated") {
    attention<double, mp::layout<>, false>([](const auto&) { return no_allreduce(8); });
  }
  SUBCASE("batch dims split: no communication") {
    attention<double, mp::layout<mp::split<b, rows>, mp::split<h, cols>>, true>(
        [](const auto&) { return no_allreduce(8); });
  }
  SUBCASE("a batch dim and the contracted dim split: allreduce over the contracted dim's") {
    attention<double, mp::layout<mp::split<b, rows>, mp::split<d, cols>>, true>(
        [](const auto& m) { return allreduce_over(over_cols, 8 / m.template size<cols>()); });
  }
  SUBCASE("float") {
    attention<float, mp::layout<mp::split<d, rows>, mp::split<h, cols>>, false>(
        [](const auto& m) { return allreduce_over(over_rows, 8 / m.template size<rows>()); });
  }
}

TEST_CASE("batched einsum, batch dim not leading: the copy path") {
  SUBCASE("replicated") {
    batch_not_leading<double, mp::layout<>, false>([](const auto&) { return no_allreduce(8); });
  }
  SUBCASE("batch dim and contracted dim split") {
    batch_not_leading<double, mp::layout<mp::split<b, rows>, mp::split<d, cols>>, true>(
        [](const auto& m) { return allreduce_over(over_cols, 8 / m.template size<cols>()); });
  }
  SUBCASE("int") {
    batch_not_leading<int, mp::layout<mp::split<s, rows>, mp::split<d, cols>>, false>(
        [](const auto& m) { return allreduce_over(over_cols, 8 / m.template size<cols>()); });
  }
}

TEST_CASE("batched einsum, strided matrices read and written in place") {
  const auto none = [](const auto&) { return no_allreduce(8); };
  SUBCASE("replicated") { strided<double, mp::layout<>>(none, none); }
  SUBCASE("batch dims split") {
    strided<double, mp::layout<mp::split<b, rows>, mp::split<h, cols>>>(none, none);
  }
  SUBCASE("a row dim and a batch dim split") {
    strided<double, mp::layout<mp::split<s, rows>, mp::split<h, cols>>>(none, none);
  }
  SUBCASE("the features split: q x k allreduces over them") {
    strided<double, mp::layout<mp::split<b, rows>, mp::split<d, cols>>>(
        [](const auto& m) { return allreduce_over(over_cols, 8 / m.template size<cols>()); }, none);
  }
  SUBCASE("float") {
    strided<float, mp::layout<mp::split<h, rows>, mp::split<s, cols>>>(none, none);
  }
  SUBCASE("int: the plain loop takes the same strides") {
    strided<int, mp::layout<mp::split<b, rows>, mp::split<d, cols>>>(
        [](const auto& m) { return allreduce_over(over_cols, 8 / m.template size<cols>()); }, none);
  }
}

TEST_CASE("a batch dim split in one operand and held whole in the other") {
  using x_t = mp::tensor<double, mp::shape<s, b, d>, mp::layout<mp::split<b, rows>>, mesh_t>;
  using y_t = mp::tensor<double, mp::shape<b, d, t>, mp::layout<mp::split<d, cols>>, mesh_t>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto x = make<x_t>(m, sizes, 5);
    const auto y = make<y_t>(m, sizes, 6);
    check<mp::shape<b, s, t>>(x, y, sizes, allreduce_over(over_cols, 8 / m.size<cols>()));
  }
}

TEST_CASE("batch dims in another order in each operand and in the output") {
  using R = mp::layout<mp::split<h, rows>, mp::split<d, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto q = make<tensor_t<R, double, b, h, s, d>>(m, sizes, 1);
    const auto k = make<tensor_t<R, double, h, d, b, t>>(m, sizes, 2);
    check<mp::shape<h, t, b, s>>(q, k, sizes, allreduce_over(over_cols, 8 / m.size<cols>()));
  }
}

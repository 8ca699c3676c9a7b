// Batched einsum: batch dims leading (gemm straight on the slices), between the dims of
// strided matrices (gemm in place, rows a leading dimension apart), in no place that allows
// either (the copy path), in another order in each operand and the output, split in one
// operand only. Every result is compared with a single-rank reference (einsum_check.hpp) and
// every einsum's counters are checked; the bytes einsums stream through copies tell in place
// from copied. Runs at any rank count: meshes are built from the communicator's size.
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
MESHPP_DIM(u);
MESHPP_DIM(e);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

// strided_fit_v<S, Batch, Rows, Cols>: which operands read in place as batched [Rows, Cols]
// matrices: Cols last in its order, Rows together in its order, the batch dims anywhere else
namespace fit {
using mp::shape;
using mp::detail::strided_fit_v;
static_assert(strided_fit_v<shape<b, s, h, d>, shape<b, h>, shape<s>, shape<d>>);
static_assert(strided_fit_v<shape<h, s, u, b, d, e>, shape<b, h>, shape<s, u>, shape<d, e>>);
static_assert(!strided_fit_v<shape<b, s, h, u, d>, shape<b, h>, shape<s, u>, shape<d>>,
              "a batch dim between two row dims");
static_assert(!strided_fit_v<shape<b, s, u, h, e, d>, shape<b, h>, shape<s, u>, shape<d, e>>,
              "the column dims in another order");
static_assert(!strided_fit_v<shape<b, s, d, h>, shape<b, h>, shape<s>, shape<d>>,
              "the column dims not last");
static_assert(!strided_fit_v<shape<b, u, s, h, d>, shape<b, h>, shape<s, u>, shape<d>>,
              "the row dims in another order");
static_assert(!strided_fit_v<shape<b, s, d>, shape<>, shape<s>, shape<d>>,
              "no batch dims: the packed orders only");
}  // namespace fit

namespace {
const auto sizes = mp::extents{b{} = 4, h{} = 4, s{} = 4, t{} = 8, d{} = 8};
constexpr unsigned over_rows = 1u, over_cols = 2u;  // bit sets of axes<rows, cols>
using mesh_t = mp::mesh<mp::axes<rows, cols>>;
template <class Rules, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, Rules, T, Dims...>;

// streamed_by(m, f): the bytes the einsums f runs stream through copies (into gemm order, or
// out of it into the output's): 0 where every operand and output is handed to gemm in place
template <class F>
std::uint64_t streamed_by(const mesh_t& m, F&& f) {
  m.counters().reset();
  m.counters().by_operation(true);
  f();
  std::uint64_t bytes = 0;
  for (const auto& o : m.counters().operations()) {
    if (o.name.starts_with("einsum ")) bytes += o.bytes_streamed;
  }
  m.counters().by_operation(false);
  m.counters().reset();
  return bytes;
}

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
// q and k are batches over (b, h) of matrices whose rows lie h * d apart, read in place.
// q[b, s, h, d] x k[b, t, h, d] -> [b, h, s, t] (a strided, b strided and transposed, the
// output packed); p[b, h, s, t] x k -> [b, s, h, d] (b strided, as the values v of attention;
// the output strided, rows h * d apart) and -> [b, d, h, s] (the output strided and
// transposed, rows h * s apart); k x p -> [b, h, d, s] (a strided and transposed). The cases
// split b, h, s or d, never t, so that the products with p (which contract t) communicate
// nothing; no einsum copies an operand or its output, whatever the split.
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
    const auto streamed = streamed_by(m, [&] {
      (void)mp::einsum<mp::shape<b, h, s, t>>(q, k);
      (void)mp::einsum<mp::shape<b, s, h, d>>(p, k);
      (void)mp::einsum<mp::shape<b, d, h, s>>(p, k);
      (void)mp::einsum<mp::shape<b, h, d, s>>(k, p);
    });
    CHECK_ALL_RANKS(streamed == 0);
  }
}

// Groups of two dims, uneven and empty slices: x[h, s, u, b, d, e] x y[b, t, h, d, e], batch
// (b, h): x's rows (s, u) lie b * d * e apart, its columns (d, e) last; y's rows t lie h * d * e
// apart. Sizes that 2 and 4 ranks split unevenly (s = 3 over 4: one slice empty).
const auto sizes2 = mp::extents{b{} = 2, h{} = 3, s{} = 3, u{} = 2, t{} = 5, d{} = 3, e{} = 2};
template <class T, class Rules>
void groups_of_two(std::uint64_t k_local_whole) {
  using R = Rules;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    // in place: rows (s, u) together, columns (d, e) last; y rows t, columns (d, e) last
    const auto x = make<tensor_t<R, T, h, s, u, b, d, e>>(m, sizes2, 5);
    const auto y = make<tensor_t<R, T, b, t, h, d, e>>(m, sizes2, 6);
    // copied: a batch dim between the row dims; the column dims in the other order
    const auto x_split_rows = make<tensor_t<R, T, b, s, h, u, d, e>>(m, sizes2, 7);
    const auto y_other_order = make<tensor_t<R, T, b, t, h, e, d>>(m, sizes2, 8);
    const auto want = no_allreduce(k_local_whole);
    // output packed [b, h, s, u, t], strided [s, u, h, b, t] (rows (s, u) h * b * t apart)
    check<mp::shape<b, h, s, u, t>>(x, y, sizes2, want);
    check<mp::shape<s, u, h, b, t>>(x, y, sizes2, want);
    // output strided and transposed [b, t, h, s, u] (rows t h * s * u apart)
    check<mp::shape<b, t, h, s, u>>(x, y, sizes2, want);
    check<mp::shape<b, h, s, u, t>>(x_split_rows, y, sizes2, want);
    check<mp::shape<b, h, s, u, t>>(x, y_other_order, sizes2, want);
    const auto in_place = streamed_by(m, [&] {
      (void)mp::einsum<mp::shape<b, h, s, u, t>>(x, y);
      (void)mp::einsum<mp::shape<s, u, h, b, t>>(x, y);
      (void)mp::einsum<mp::shape<b, t, h, s, u>>(x, y);
    });
    const auto copied_x =
        streamed_by(m, [&] { (void)mp::einsum<mp::shape<b, h, s, u, t>>(x_split_rows, y); });
    const auto copied_y =
        streamed_by(m, [&] { (void)mp::einsum<mp::shape<b, h, s, u, t>>(x, y_other_order); });
    CHECK_ALL_RANKS(in_place == 0);
    // each copy reads and writes the operand's slice (an empty slice: nothing to copy)
    CHECK_ALL_RANKS(copied_x == 2 * sizeof(T) * x_split_rows.local().size());
    CHECK_ALL_RANKS(copied_y == 2 * sizeof(T) * y_other_order.local().size());
  }
}

// x[s, b, d] x y[b, d, t] -> [b, s, t]: the batch dim b is not leading in x, but x's rows (s)
// and columns (d, last) are strided matrices, read in place (rows b * d apart); x[s, d, b]
// (b last) is not, and is copied into [b, s, d] first; (every) -> [s, t, b] (written through
// a buffer and one transposing copy) and [b, t, s] (transposed).
template <class T, class Rules, bool every, class Want>
void batch_not_leading(Want&& want_for) {
  using R = Rules;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto x = make<tensor_t<R, T, s, b, d>>(m, sizes, 3);
    const auto x_batch_last = make<tensor_t<R, T, s, d, b>>(m, sizes, 9);
    const auto y = make<tensor_t<R, T, b, d, t>>(m, sizes, 4);
    check<mp::shape<b, s, t>>(x, y, sizes, want_for(m));
    check<mp::shape<b, s, t>>(x_batch_last, y, sizes, want_for(m));
    if constexpr (every) {
      check<mp::shape<s, t, b>>(x, y, sizes, want_for(m));
      check<mp::shape<b, t, s>>(x, y, sizes, want_for(m));
    }
    const auto in_place = streamed_by(m, [&] { (void)mp::einsum<mp::shape<b, s, t>>(x, y); });
    const auto copied =
        streamed_by(m, [&] { (void)mp::einsum<mp::shape<b, s, t>>(x_batch_last, y); });
    CHECK_ALL_RANKS(in_place == 0);
    CHECK_ALL_RANKS(copied == 2 * sizeof(T) * x_batch_last.local().size());
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

TEST_CASE("batched einsum, batch dim not leading: in place when strided, else copied") {
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

TEST_CASE("batched einsum, strided matrices of two dims a side, uneven and empty slices") {
  SUBCASE("replicated") { groups_of_two<double, mp::layout<>>(6); }
  SUBCASE("row dims and a batch dim split unevenly") {
    groups_of_two<double, mp::layout<mp::split<s, rows>, mp::split<h, cols>>>(6);
  }
  SUBCASE("a batch dim and an output dim split, float") {
    groups_of_two<float, mp::layout<mp::split<b, rows>, mp::split<t, cols>>>(6);
  }
  SUBCASE("int") { groups_of_two<int, mp::layout<mp::split<u, rows>, mp::split<h, cols>>>(6); }
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

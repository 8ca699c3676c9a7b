// einsum<Out, OutRules>(a, b) with the contracted dim split over mesh dim md and an output dim
// d requested split over md: the product is fused with its reduce_scatter
// (comm/reduce_scatter_ring.hpp): one gemm per block of d, summed around the ring of md.
// Every result is compared with a single-rank reference of the gathered inputs
// (einsum_check.hpp), and the counters with the formula of docs/computation.md ("Distributed
// products"): one reduce_scatter over md of P values per rank, P = this rank's whole partial
// product (the output's local size times |md|), sending (|md| - 1) / |md| * P values' bytes;
// no allreduce, allgather or alltoall; 2 * P * k_local flops; or, where that sends fewer,
// an alltoall and an allgather of the operands instead. 1-D and 2-D meshes, every storage
// order gemm takes as it lies, an output [N, M], two M dims, a type without BLAS.
#include <cstdint>
#include <type_traits>

#include "einsum_check.hpp"

namespace mp = meshpp;
using einsum_test::close_to;
using einsum_test::make;
using einsum_test::reference;

MESHPP_DIM(i);
MESHPP_DIM(e);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
using mesh_t = mp::mesh<mp::axes<rows, cols>>;
constexpr unsigned over_rows = 1u, over_cols = 2u;  // bit sets of axes<rows, cols>
template <class Rules, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, Rules, T, Dims...>;

// fused_counts(counters, mask, p, block, s, k_local): what the fused product records: one
// reduce_scatter over `mask` (a group of p) of p * block values (block: the result's local
// size, s bytes each), (p - 1) * block * s bytes sent, nothing else; 2 * p * block * k_local
// flops in one einsum
bool fused_counts(const mp::counters& c, unsigned mask, std::uint64_t p, std::uint64_t block,
                  std::uint64_t s, std::uint64_t k_local) {
  const auto& rs = c.at(mp::collective::reduce_scatter, mask);
  const std::uint64_t one = p > 1 ? 1 : 0;  // a group of one rank counts nothing
  bool ok = rs.calls == one && rs.values == one * p * block &&
            rs.bytes_sent == (p - 1) * block * s &&
            c.total(mp::collective::reduce_scatter).calls == one;
  for (auto other : {mp::collective::allreduce, mp::collective::allgather, mp::collective::alltoall,
                     mp::collective::broadcast, mp::collective::permute, mp::collective::gather}) {
    ok = ok && c.total(other).calls == 0;
  }
  ok = ok && c.einsum_calls() == 1 && c.einsum_flops() == 2 * p * block * k_local;
  if (!ok) MESSAGE("counted:\n" << c.report());
  return ok;
}

// gathered_counts(counters, mask, p, a_moved, b_moved, s, flops): what moving the operands
// records instead: the input holding d alltoalled over `mask` (values a_moved, (p-1)/p of them
// sent), the other allgathered (values b_moved, p-1 times them sent), no sum across ranks
bool gathered_counts(const mp::counters& c, unsigned mask, std::uint64_t p, std::uint64_t a_moved,
                     std::uint64_t b_moved, std::uint64_t s, std::uint64_t flops) {
  const auto& all_to_all = c.at(mp::collective::alltoall, mask);
  const auto& gathered = c.at(mp::collective::allgather, mask);
  const std::uint64_t one = p > 1 ? 1 : 0;  // a group of one rank counts nothing
  bool ok = all_to_all.calls == one && all_to_all.values == one * a_moved &&
            all_to_all.bytes_sent == (p - 1) * a_moved * s / p && gathered.calls == one &&
            gathered.values == one * b_moved && gathered.bytes_sent == (p - 1) * b_moved * s &&
            c.total(mp::collective::alltoall).calls == one &&
            c.total(mp::collective::allgather).calls == one;
  for (auto other : {mp::collective::allreduce, mp::collective::reduce_scatter,
                     mp::collective::broadcast, mp::collective::permute, mp::collective::gather}) {
    ok = ok && c.total(other).calls == 0;
  }
  ok = ok && c.einsum_calls() == 1 && c.einsum_flops() == flops;
  if (!ok) MESSAGE("counted:\n" << c.report());
  return ok;
}

// check<Out, OutRules>(a, b, sizes, mask, p, k_local): values and counters of one einsum,
// which takes the fused path unless `fused` says otherwise. Where it may move the operands
// instead (both tensors, nothing but the contracted dim summed), it must do so exactly when
// that sends fewer values: (p-1)/p |x| + (p-1) |y| < (p-1)/p P, x the input holding the
// scattered dim d, y the other, P the whole local partial product (p times the result's
// local size), i.e. |x| + p |y| < P.
template <class Out, class OutRules, bool fused = true, class A, class B, class Sizes>
void check(const A& a, const B& b, const Sizes& sizes, unsigned mask, std::uint64_t p,
           std::uint64_t k_local) {
  static_assert(mp::detail::einsum_fuses_reduce_scatter_v<Out, OutRules, A, B> == fused);
  a.mesh().counters().reset();
  const auto c = mp::einsum<Out, OutRules>(a, b);
  using C = std::remove_cvref_t<decltype(c)>;
  static_assert(std::is_same_v<typename C::layout_type, mp::layout_for_t<OutRules, Out>>);
  constexpr std::uint64_t s = sizeof(typename C::value_type);
  const std::uint64_t block = c.local().size(), product = p * block;
  // d: the dim OutRules splits over the ring's mesh dim
  constexpr bool d_in_a = [] {
    bool in_a = false;
    mp::detail::for_each_index<Out::rank>([&](auto i) {
      using dim = mp::dim_at_t<Out, i.value>;
      if constexpr (mp::is_split_in_v<OutRules, dim>)
        in_a = in_a || mp::contains_v<typename A::shape_type, dim>;
    });
    return in_a;
  }();
  const std::uint64_t x = d_in_a ? a.local().size() : b.local().size();
  const std::uint64_t y = d_in_a ? b.local().size() : a.local().size();
  const bool moves_operands = fused && x + p * y < product;
  const bool counted =
      moves_operands
          ? gathered_counts(a.mesh().counters(), mask, p, x, y, s, 2 * block * k_local * p)
          : fused_counts(a.mesh().counters(), mask, p, block, s, k_local);
  CHECK_ALL_RANKS(counted);
  const auto want = reference<Out, typename A::shape_type, typename B::shape_type>(
      mp::gather(a), mp::gather(b), sizes);
  CHECK_ALL_RANKS(close_to(mp::gather(c), want));
}
}  // namespace

TEST_CASE("a contracted dim split over one mesh dim, an output dim scattered over it") {
  const auto sizes = mp::extents{i{} = 8, e{} = 3, j{} = 4, k{} = 8};
  using on_rows = mp::layout<mp::split<k, rows>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<on_rows, double, i, k>>(m, sizes, 1);    // [M, K]
    const auto a_t = make<tensor_t<on_rows, double, k, i>>(m, sizes, 2);  // [K, M]
    const auto b = make<tensor_t<on_rows, double, k, j>>(m, sizes, 3);    // [K, N]
    const auto b_t = make<tensor_t<on_rows, double, j, k>>(m, sizes, 4);  // [N, K]
    const auto p = static_cast<std::uint64_t>(m.size<rows>());
    const std::uint64_t k_local = 8 / p;
    using i_rows = mp::layout<mp::split<i, rows>>;  // d the (first) M dim
    using j_rows = mp::layout<mp::split<j, rows>>;  // d the (first) N dim
    using ij = mp::shape<i, j>;
    using ji = mp::shape<j, i>;
    check<ij, i_rows>(a, b, sizes, over_rows, p, k_local);
    check<ij, j_rows>(a, b, sizes, over_rows, p, k_local);
    check<ij, i_rows>(a_t, b_t, sizes, over_rows, p, k_local);
    check<ij, j_rows>(a_t, b, sizes, over_rows, p, k_local);
    check<ji, i_rows>(a, b_t, sizes, over_rows, p, k_local);  // output [N, M]: C^T = B^T A^T
    check<ji, j_rows>(a_t, b_t, sizes, over_rows, p, k_local);
    // two M dims, the scattered one first: its stripes are still runs of the flattened M
    const auto a2 = make<tensor_t<on_rows, double, i, e, k>>(m, sizes, 5);
    check<mp::shape<i, e, j>, i_rows>(a2, b, sizes, over_rows, p, k_local);
  }
}

TEST_CASE("a 2-D mesh: the rows of the product apart, the contracted dim over cols") {
  // [i/rows, k/cols] x [k/cols, j] |-> [i/rows, j/cols]: a ring over cols in each row
  const auto sizes = mp::extents{i{} = 4, e{} = 3, j{} = 8, k{} = 8};
  using rules = mp::layout<mp::split<i, rows>, mp::split<k, cols>>;
  using out_rules = mp::layout<mp::split<i, rows>, mp::split<j, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<rules, double, i, k>>(m, sizes, 6);
    const auto b = make<tensor_t<rules, double, k, j>>(m, sizes, 7);
    const auto q = static_cast<std::uint64_t>(m.size<cols>());
    check<mp::shape<i, j>, out_rules>(a, b, sizes, over_cols, q, 8 / q);
    // float, whose gemm is cblas_sgemm
    const auto af = make<tensor_t<rules, float, i, k>>(m, sizes, 8);
    const auto bf = make<tensor_t<rules, float, j, k>>(m, sizes, 9);
    check<mp::shape<j, i>, out_rules>(af, bf, sizes, over_cols, q, 8 / q);
  }
}

TEST_CASE("a type without BLAS accumulates its blocks in the plain loop, exactly") {
  const auto sizes = mp::extents{i{} = 4, e{} = 3, j{} = 8, k{} = 8};
  using on_cols = mp::layout<mp::split<k, cols>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<on_cols, std::int64_t, i, k>>(m, sizes, 10);
    const auto b = make<tensor_t<on_cols, std::int64_t, k, j>>(m, sizes, 11);
    const auto q = static_cast<std::uint64_t>(m.size<cols>());
    check<mp::shape<i, j>, mp::layout<mp::split<j, cols>>>(a, b, sizes, over_cols, q, 8 / q);
  }
}

TEST_CASE("an output the ring cannot make in place still equals the reference") {
  // d second of two M dims: its stripes are not runs of the flattened M, so the product is
  // whole, then reduce_scattered (reduce_scatter_along): the same counts, the same values
  const auto sizes = mp::extents{i{} = 4, e{} = 4, j{} = 4, k{} = 8};
  using on_rows = mp::layout<mp::split<k, rows>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<on_rows, double, i, e, k>>(m, sizes, 12);
    const auto b = make<tensor_t<on_rows, double, k, j>>(m, sizes, 13);
    const auto p = static_cast<std::uint64_t>(m.size<rows>());
    check<mp::shape<i, e, j>, mp::layout<mp::split<e, rows>>, false>(a, b, sizes, over_rows, p,
                                                                     8 / p);
  }
}

TEST_CASE("a small contracted dim: the operands move instead of the partial sums") {
  // [i, k/rows] x [k/rows, j] |-> [i/rows, j] with k small: a is alltoalled to [i/rows, k], b
  // allgathered to [k, j]; then no sum across ranks
  const auto sizes = mp::extents{i{} = 16, e{} = 3, j{} = 16, k{} = 4};
  using on_rows = mp::layout<mp::split<k, rows>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto a = make<tensor_t<on_rows, double, i, k>>(m, sizes, 14);
    const auto b = make<tensor_t<on_rows, double, k, j>>(m, sizes, 15);
    const auto b_t = make<tensor_t<on_rows, double, j, k>>(m, sizes, 16);
    const auto p = static_cast<std::uint64_t>(m.size<rows>());
    check<mp::shape<i, j>, mp::layout<mp::split<i, rows>>>(a, b, sizes, over_rows, p, 4 / p);
    check<mp::shape<j, i>, mp::layout<mp::split<j, rows>>>(a, b_t, sizes, over_rows, p, 4 / p);
  }
}

TEST_CASE("einsum<Out>: the allreduce of a split contraction, fused where blocks divide") {
  // [i, k/rows] x [k/rows, j] |-> [i, j]: blocks of the output's outer dim around the ring,
  // then one allgather, counted as the one allreduce it stands for (2 (p-1)/p of the values);
  // an outer dim the ranks do not divide (i = 3) takes MPI_Allreduce, counted alike
  using on_rows = mp::layout<mp::split<k, rows>>;
  for (std::size_t rows_of_c : {std::size_t{8}, std::size_t{3}}) {
    const auto sizes = mp::extents{i{} = rows_of_c, e{} = 3, j{} = 4, k{} = 8};
    for (const auto& shape : einsum_test::mesh_shapes()) {
      const mesh_t m(shape);
      CAPTURE(m.describe());
      CAPTURE(rows_of_c);
      const auto a = make<tensor_t<on_rows, double, i, k>>(m, sizes, 17);
      const auto b = make<tensor_t<on_rows, double, k, j>>(m, sizes, 18);
      const auto b_t = make<tensor_t<on_rows, float, j, k>>(m, sizes, 19);
      const auto a_f = make<tensor_t<on_rows, float, k, i>>(m, sizes, 20);
      const auto want = einsum_test::allreduce_over(over_rows, 8 / m.size<rows>());
      einsum_test::check<mp::shape<i, j>>(a, b, sizes, want);
      einsum_test::check<mp::shape<j, i>>(a_f, b_t, sizes, want);  // [N, M]: blocks of N
    }
  }
}

TEST_CASE("bad input fails on every rank before any communication") {
  using on_rows = mp::layout<mp::split<k, rows>>;
  for (const auto& shape : einsum_test::mesh_shapes()) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const std::size_t p = static_cast<std::size_t>(m.size<rows>());
    // the inputs disagree on k: small enough that the operands would move, were it right
    const auto a = make<tensor_t<on_rows, double, i, k>>(m, mp::extents{i{} = 16, k{} = 4 * p}, 1);
    const auto b = make<tensor_t<on_rows, double, k, j>>(m, mp::extents{k{} = 8 * p, j{} = 16}, 2);
    m.counters().reset();
    CHECK_THROWS_AS((mp::einsum<mp::shape<i, j>, mp::layout<mp::split<i, rows>>>(a, b)), mp::error);
    CHECK_THROWS_AS((mp::einsum<mp::shape<i, j>, mp::layout<mp::split<j, rows>>>(a, b)), mp::error);
    CHECK_THROWS_AS((mp::einsum<mp::shape<i, j>>(a, b)), mp::error);
    bool silent = true;
    for (std::size_t kind = 0; kind < mp::collective_kinds; ++kind)
      silent = silent && m.counters().total(static_cast<mp::collective>(kind)).calls == 0;
    CHECK_ALL_RANKS(silent);
  }
}

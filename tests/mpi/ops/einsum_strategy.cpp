// einsum's strategies (ops/einsum.hpp): each run takes the first that applies and records it in
// its operation's row (operation_count::strategy), the same on every rank and in a plan. Each
// case checks the strategy recorded and the values against a single-rank reference.
#include <meshpp/core/counters.hpp>
#include <meshpp/plan/plan.hpp>

#include <string>

#include "einsum_check.hpp"

namespace mp = meshpp;
using einsum_test::make;
using meshpp_test::world;

MESHPP_DIM(b);
MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(all);

namespace {
using mesh_t = mp::mesh<mp::axes<all>>;
template <class Rules, class T, class... Dims>
using tensor_t = einsum_test::laid_out_t<mesh_t, Rules, T, Dims...>;
using whole = mp::layout<>;
using k_split = mp::layout<mp::split<k, all>>;

// strategy_of(m, run): the strategy the one einsum of run() recorded (none if not one row)
template <class Run>
mp::einsum_strategy strategy_of(const mesh_t& m, const Run& run) {
  m.counters().reset();
  m.counters().by_operation(true);
  run();
  m.counters().by_operation(false);
  const auto& ops = m.counters().operations();
  for (const auto& o : ops)
    if (o.kind == mp::operation_kind::einsum) return o.strategy;
  return mp::einsum_strategy::none;
}

// same(got, want): the strategy on every rank, named in the message if it differs
void same(mp::einsum_strategy got, mp::einsum_strategy want) {
  INFO("recorded " << mp::strategy_name(got) << ", expected " << mp::strategy_name(want));
  CHECK_ALL_RANKS(got == want);
}

}  // namespace

TEST_CASE("the output's form: in place, transposed, strided, strided_transposed, copied") {
  const mesh_t m({world().size()});
  const auto sizes = mp::extents{b{} = 3, i{} = 4, j{} = 5, k{} = 6};
  const auto x = make<tensor_t<whole, double, i, k>>(m, sizes, 1);
  const auto w = make<tensor_t<whole, double, k, j>>(m, sizes, 2);
  using E = mp::einsum_strategy;
  same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<i, j>>(x, w); }), E::in_place);
  same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<j, i>>(x, w); }), E::transposed);
  const auto bx = make<tensor_t<whole, double, b, i, k>>(m, sizes, 3);
  const auto bw = make<tensor_t<whole, double, b, k, j>>(m, sizes, 4);
  same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<b, i, j>>(bx, bw); }), E::in_place);
  same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<i, b, j>>(bx, bw); }), E::strided);
  same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<j, b, i>>(bx, bw); }),
       E::strided_transposed);
  same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<j, i, b>>(bx, bw); }), E::copied);
  // and each still equals the reference
  const auto none = einsum_test::no_allreduce(6);
  einsum_test::check<mp::shape<i, b, j>>(bx, bw, sizes, none);
  einsum_test::check<mp::shape<j, b, i>>(bx, bw, sizes, none);
  einsum_test::check<mp::shape<j, i, b>>(bx, bw, sizes, none);
}

TEST_CASE("a split contraction: the ring allreduce where the output's rows divide, else gemm") {
  const int n = world().size();
  const mesh_t m({n});
  using E = mp::einsum_strategy;
  for (std::size_t rows : {4, 6}) {
    CAPTURE(rows);
    const auto sizes = mp::extents{i{} = rows, j{} = 5, k{} = 8};
    const auto x = make<tensor_t<k_split, double, i, k>>(m, sizes, 5);
    const auto w = make<tensor_t<k_split, double, k, j>>(m, sizes, 6);
    // the ring splits the output's outer dim (i; j when transposed) into the group's blocks
    const E want = rows % static_cast<std::size_t>(n) == 0 ? E::ring_allreduce : E::in_place;
    same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<i, j>>(x, w); }), want);
    const E want_t = 5 % n == 0 ? E::ring_allreduce : E::transposed;
    same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<j, i>>(x, w); }), want_t);
    const auto k_local = 8 / static_cast<std::uint64_t>(n);
    einsum_test::check<mp::shape<i, j>>(x, w, sizes, einsum_test::allreduce_over(1u, k_local));
    einsum_test::check<mp::shape<j, i>>(x, w, sizes, einsum_test::allreduce_over(1u, k_local));
  }
}

TEST_CASE("a split contraction into a scattered output: the ring reduce_scatter where it divides") {
  const int n = world().size();
  const mesh_t m({n});
  using E = mp::einsum_strategy;
  using scattered = mp::layout<mp::split<i, all>>;
  for (std::size_t rows : {4, 6}) {
    CAPTURE(rows);
    const auto sizes = mp::extents{i{} = rows, j{} = 5, k{} = 8};
    const auto x = make<tensor_t<k_split, double, i, k>>(m, sizes, 7);
    const auto w = make<tensor_t<k_split, double, k, j>>(m, sizes, 8);
    const E want = rows % static_cast<std::size_t>(n) == 0 ? E::ring_reduce_scatter : E::in_place;
    same(strategy_of(m, [&] { (void)mp::einsum<mp::shape<i, j>, scattered>(x, w); }), want);
    // the values, whole again, against the reference of the plain einsum
    m.counters().reset();
    const auto y = mp::einsum<mp::shape<i, j>, scattered>(x, w);
    const auto whole_y = mp::gather(y);
    const auto ref = mp::gather(mp::einsum<mp::shape<i, j>>(x, w));
    bool close = whole_y.size() == ref.size();
    for (std::size_t e = 0; close && e < ref.size(); ++e)
      close = std::abs(whole_y.data()[e] - ref.data()[e]) <= 1e-12;
    CHECK_ALL_RANKS(close);
  }
}

TEST_CASE("a plan records the strategy the run takes") {
  const int n = world().size();
  const auto sizes = mp::extents{i{} = 4, j{} = 5, k{} = 8};
  const auto step = [&](const mesh_t& m) {
    const auto x = make<tensor_t<k_split, double, i, k>>(m, sizes, 9);
    const auto w = make<tensor_t<k_split, double, k, j>>(m, sizes, 10);
    (void)mp::einsum<mp::shape<i, j>>(x, w);
  };
  const auto p = mp::make_plan<mesh_t>({n}, step);
  const mesh_t m({n});
  m.counters().by_operation(true);
  step(m);
  m.counters().by_operation(false);
  CHECK_ALL_RANKS(p.operations() == m.counters().operations());
  bool recorded = false;
  for (const auto& o : p.operations())
    recorded = recorded || o.strategy == (4 % n == 0 ? mp::einsum_strategy::ring_allreduce
                                                     : mp::einsum_strategy::in_place);
  CHECK_ALL_RANKS(recorded);
}

// The fused core of attention (nn/fused_attention.hpp: scores, softmax and the values'
// weighted sum a head of a sequence at a time) against the same computation as separate
// operations (einsum, softmax<memory_length>(s, causal<length>{}) or softmax, einsum), in float
// and double, with the causal mask and without, with batch and heads split over rows and cols
// of every mesh shape the rank count allows (uneven at 2 and 4 ranks, a slice empty at 4):
//   - the output and the gradients of q, k and v equal the unfused ones exactly (the same gemm
//     calls per head and the same softmax rows, in the same order);
//   - only the gradients asked for are made (q, k, then v alone);
//   - under no_grad the output is the same and the probabilities are not kept;
//   - with no batch dim, or two (q [length, heads, d_k], [beam, batch, length, heads, d_k]),
//     the same equalities hold;
//   - the fused step counts the products' flops and einsum calls the unfused one counts,
//     forward and backward, and communicates nothing;
// multihead_attention, under a layout that splits length (which the fused core does not take),
// runs the separate operations and matches the fused layer's output; and layout_enumeration
// prices the fused operation, from a reference plan, with no communication where it runs and
// with the separate operations' allreduces where a candidate splits d_k or memory_length.
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/nn/attention.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/plan/enumerate.hpp>
#include <meshpp/plan/plan.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::weighted_sum;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(beam);
MESHPP_DIM(length);
MESHPP_DIM(memory_length);
MESHPP_DIM(d_model);
MESHPP_DIM(heads);
MESHPP_DIM(d_k);
MESHPP_DIM(d_v);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
// length 5 and memory_length 7 (the keys longer than the queries), d_k 4 and d_v 3, so a
// transposed or swapped index shows; batch 3 and heads 2 or 3 split unevenly over 2 ranks, and
// batch 1 leaves a rank with no sequences at 2 and 4 ranks
using mesh_t =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<heads, cols>>>;

template <class T, class... D>
using var_t = mp::variable<mp::tensor_of<T, mp::shape<D...>, mesh_t>>;

template <class T>
struct operands {
  var_t<T, batch, length, heads, d_k> q;
  var_t<T, batch, memory_length, heads, d_k> k;
  var_t<T, batch, memory_length, heads, d_v> v;
};

template <class T, class Sizes>
operands<T> make(const mesh_t& m, const Sizes& sizes) {
  return {var_t<T, batch, length, heads, d_k>(
              mp::random_normal<T, batch, length, heads, d_k>(m, sizes, 11), "q"),
          var_t<T, batch, memory_length, heads, d_k>(
              mp::random_normal<T, batch, memory_length, heads, d_k>(m, sizes, 12), "k"),
          var_t<T, batch, memory_length, heads, d_v>(
              mp::random_normal<T, batch, memory_length, heads, d_v>(m, sizes, 13), "v")};
}

template <class Q, class K, class V>
auto fused(const Q& q, const K& k, const V& v, bool causal) {
  return mp::detail::fused_attention<length, memory_length, heads, d_k, d_v>(q, k, v, causal);
}

template <class Q, class K, class V>
auto separate(const Q& q, const K& k, const V& v, bool causal) {
  const auto s = mp::einsum<mp::shape<batch, heads, length, memory_length>>(q, k);
  const auto p =
      causal ? mp::softmax<memory_length>(s, mp::causal<length>{}) : mp::softmax<memory_length>(s);
  return mp::einsum<mp::shape<batch, length, heads, d_v>>(p, v);
}

template <class Tensor>
std::vector<typename Tensor::value_type> whole(const Tensor& t) {
  const auto a = mp::gather(t);
  return {a.begin(), a.end()};
}

template <class T>
void check_equal(const mesh_t& m, std::size_t nb, std::size_t nh, bool causal) {
  CAPTURE(m.describe());
  CAPTURE(nb);
  CAPTURE(nh);
  CAPTURE(causal);
  const auto sizes = mp::extents{batch{} = nb, length{} = 5, memory_length{} = 7,
                                 heads{} = nh, d_k{} = 4,    d_v{} = 3};
  auto a = make<T>(m, sizes);
  auto b = make<T>(m, sizes);

  // forward, then backward: the same products counted, no collective in the fused step (the
  // losses' own sums excluded: counted before their backward)
  const auto collectives = [&] {
    std::uint64_t calls = 0;
    for (const auto c : {mp::collective::allreduce, mp::collective::allgather,
                         mp::collective::reduce_scatter, mp::collective::alltoall})
      calls += m.counters().total(c).calls;
    return calls;
  };
  m.counters().reset();
  const auto of = fused(a.q, a.k, a.v, causal);
  const auto fused_flops = m.counters().einsum_flops();
  const auto fused_calls = m.counters().einsum_calls();
  CHECK(collectives() == 0);
  m.counters().reset();
  const auto os = separate(b.q, b.k, b.v, causal);
  CHECK(fused_flops == m.counters().einsum_flops());
  CHECK(fused_calls == m.counters().einsum_calls());
  if (a.q.value().local().size() > 0) CHECK(fused_flops > 0);  // (a rank with no sequences: 0)

  CHECK_ALL_RANKS(whole(of.value()) == whole(os.value()));
  // under no_grad: the same output, the probabilities not kept (no pass counted for them)
  const auto streamed = [&](const auto& run) {
    m.counters().reset();
    m.counters().by_operation(true);
    const auto o = run();
    std::uint64_t bytes = 0;
    for (const auto& op : m.counters().operations())
      if (op.name.starts_with("attention ")) bytes += op.bytes_streamed;
    m.counters().by_operation(false);
    return std::pair{whole(o.value()), bytes};
  };
  const auto [o_kept, kept_bytes] = streamed([&] { return fused(a.q, a.k, a.v, causal); });
  const auto [o_free, free_bytes] = streamed([&] {
    mp::no_grad scope;
    return fused(a.q, a.k, a.v, causal);
  });
  // and outside no_grad with no input requiring a gradient (plain tensors): none kept either
  const auto [o_plain, plain_bytes] =
      streamed([&] { return fused(a.q.value(), a.k.value(), a.v.value(), causal); });
  CHECK_ALL_RANKS(o_free == whole(os.value()));
  CHECK_ALL_RANKS(o_kept == o_free);
  CHECK_ALL_RANKS(o_plain == o_free);
  CHECK(free_bytes == 0);
  CHECK(plain_bytes == 0);
  CHECK(kept_bytes == a.q.value().local().size() / 4 * 7 * sizeof(T));  // [b, h, 5, 7] of p
  const auto lf = weighted_sum(of);
  const auto ls = weighted_sum(os);
  m.counters().reset();
  mp::backward(lf);
  const auto fused_back_flops = m.counters().einsum_flops();
  const auto fused_back_calls = m.counters().einsum_calls();
  m.counters().reset();
  mp::backward(ls);
  CHECK(fused_back_flops == m.counters().einsum_flops());
  CHECK(fused_back_calls == m.counters().einsum_calls());
  CHECK_ALL_RANKS(whole(*a.q.grad()) == whole(*b.q.grad()));
  CHECK_ALL_RANKS(whole(*a.k.grad()) == whole(*b.k.grad()));
  CHECK_ALL_RANKS(whole(*a.v.grad()) == whole(*b.v.grad()));
  // the gradients are not all zero: the checks above compare something
  const auto gq = whole(*a.q.grad());
  CHECK(std::any_of(gq.begin(), gq.end(), [](T x) { return x != T(0); }));

  // one input wanting its gradient: only that one is made (the others plain tensors)
  auto cq = make<T>(m, sizes);
  mp::backward(weighted_sum(fused(cq.q, a.k.value(), a.v.value(), causal)));
  auto dq = make<T>(m, sizes);
  mp::backward(weighted_sum(separate(dq.q, a.k.value(), a.v.value(), causal)));
  CHECK_ALL_RANKS(whole(*cq.q.grad()) == whole(*dq.q.grad()));
  auto ck = make<T>(m, sizes);
  const auto ok = fused(a.q.value(), ck.k, a.v.value(), causal);
  mp::backward(weighted_sum(ok));
  auto dk = make<T>(m, sizes);
  mp::backward(weighted_sum(separate(a.q.value(), dk.k, a.v.value(), causal)));
  CHECK_ALL_RANKS(whole(*ck.k.grad()) == whole(*dk.k.grad()));
  auto cv = make<T>(m, sizes);
  mp::backward(weighted_sum(fused(a.q.value(), a.k.value(), cv.v, causal)));
  auto dv = make<T>(m, sizes);
  mp::backward(weighted_sum(separate(a.q.value(), a.k.value(), dv.v, causal)));
  CHECK_ALL_RANKS(whole(*cv.v.grad()) == whole(*dv.v.grad()));
}

// check_batch_dims<T, X...>(m, sizes): q [X..., length, heads, d_k] with any number of batch
// dims X (none, or batch and beam: the tiles' sequences are the product of X's slices); the
// fused output and gradients equal the separate operations' exactly
template <class T, class... X, class Sizes>
void check_batch_dims(const mesh_t& m, const Sizes& sizes, bool causal) {
  CAPTURE(sizeof...(X));
  CAPTURE(causal);
  const auto make_qkv = [&] {
    return std::tuple{
        var_t<T, X..., length, heads, d_k>(
            mp::random_normal<T, X..., length, heads, d_k>(m, sizes, 21), "q"),
        var_t<T, X..., memory_length, heads, d_k>(
            mp::random_normal<T, X..., memory_length, heads, d_k>(m, sizes, 22), "k"),
        var_t<T, X..., memory_length, heads, d_v>(
            mp::random_normal<T, X..., memory_length, heads, d_v>(m, sizes, 23), "v")};
  };
  auto [qa, ka, va] = make_qkv();
  auto [qb, kb, vb] = make_qkv();
  const auto of = fused(qa, ka, va, causal);
  const auto s = mp::einsum<mp::shape<X..., heads, length, memory_length>>(qb, kb);
  const auto p =
      causal ? mp::softmax<memory_length>(s, mp::causal<length>{}) : mp::softmax<memory_length>(s);
  const auto os = mp::einsum<mp::shape<X..., length, heads, d_v>>(p, vb);
  CHECK_ALL_RANKS(whole(of.value()) == whole(os.value()));
  mp::backward(weighted_sum(of));
  mp::backward(weighted_sum(os));
  CHECK_ALL_RANKS(whole(*qa.grad()) == whole(*qb.grad()));
  CHECK_ALL_RANKS(whole(*ka.grad()) == whole(*kb.grad()));
  CHECK_ALL_RANKS(whole(*va.grad()) == whole(*vb.grad()));
  const auto gk = whole(*ka.grad());
  CHECK(std::any_of(gk.begin(), gk.end(), [](T x) { return x != T(0); }));
}

std::vector<std::array<int, 2>> shapes() {
  const int n = world().size();
  std::vector<std::array<int, 2>> s{{n, 1}, {1, n}};
  if (n == 4) s.push_back({2, 2});
  return s;
}
}  // namespace

TEST_CASE("fused attention equals scores, softmax and weighted sum as separate operations") {
  for (const auto& shape : shapes()) {
    const mesh_t m(mesh_t::coordinates_type{shape[0], shape[1]});
    for (const bool causal : {true, false}) {
      check_equal<double>(m, 3, 2, causal);
      check_equal<float>(m, 3, 3, causal);
      check_equal<float>(m, 1, 2, causal);  // a rank with no sequences where batch splits
    }
  }
}

TEST_CASE("fused attention over no batch dim and over two") {
  // batch split over rows, beam whole; heads split over cols
  const auto sizes = mp::extents{batch{} = 3, beam{} = 2, length{} = 4, memory_length{} = 6,
                                 heads{} = 3, d_k{} = 2,  d_v{} = 5};
  for (const auto& shape : shapes()) {
    const mesh_t m(mesh_t::coordinates_type{shape[0], shape[1]});
    CAPTURE(m.describe());
    for (const bool causal : {true, false}) {
      check_batch_dims<double>(m, sizes, causal);
      check_batch_dims<float, beam, batch>(m, sizes, causal);  // batch split, not first
    }
  }
}

TEST_CASE("fused attention refuses operands whose shared dims differ, on every rank") {
  // sizes are global, so every rank throws before any work, with the same message
  const mesh_t m(meshpp_test::grid2(world().size()));
  const auto base = mp::extents{batch{} = 2, length{} = 3, memory_length{} = 4,
                                heads{} = 2, d_k{} = 2,    d_v{} = 3};
  const auto wide = mp::extents{batch{} = 2, length{} = 3, memory_length{} = 5,
                                heads{} = 3, d_k{} = 3,    d_v{} = 3};
  const auto q = mp::random_normal<float, batch, length, heads, d_k>(m, base, 1);
  const auto k = mp::random_normal<float, batch, memory_length, heads, d_k>(m, base, 2);
  const auto v = mp::random_normal<float, batch, memory_length, heads, d_v>(m, base, 3);
  const auto k_wide = mp::random_normal<float, batch, memory_length, heads, d_k>(m, wide, 2);
  const auto v_wide = mp::random_normal<float, batch, memory_length, heads, d_v>(m, wide, 3);
  const auto refused = [&](const auto& kk, const auto& vv, const std::string& names) {
    std::string message;
    try {
      (void)fused(mp::trace(q), kk, vv, true);
    } catch (const mp::error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK_ALL_RANKS(message.find(names) != std::string::npos);
  };
  refused(k_wide, v, "q and k disagree on the size of dim 'heads': 2 and 3");
  refused(k, v_wide, "q and v disagree on the size of dim 'heads': 2 and 3");
  const auto v_longer = mp::random_normal<float, batch, memory_length, heads, d_v>(
      m, mp::extents{batch{} = 2, memory_length{} = 5, heads{} = 2, d_v{} = 3}, 3);
  refused(k, v_longer, "k and v disagree on the size of dim 'memory_length': 4 and 5");
}

TEST_CASE("multihead_attention with length split runs the separate operations, same output") {
  using length_mesh =
      mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<length, rows>, mp::split<heads, cols>>>;
  const auto sizes =
      mp::extents{batch{} = 2, length{} = 5, d_model{} = 6, heads{} = 2, d_k{} = 3, d_v{} = 4};
  using dims = mp::nn::attention_dims<length, memory_length, d_model, heads, d_k, d_v>;
  const mesh_t fused_mesh(meshpp_test::grid2(world().size()));
  const length_mesh split_mesh(meshpp_test::grid2(world().size()));
  for (const bool causal : {true, false}) {
    CAPTURE(causal);
    mp::nn::multihead_attention<double, mesh_t, dims> a(fused_mesh, sizes, 3, {.causal = causal});
    mp::nn::multihead_attention<double, length_mesh, dims> b(split_mesh, sizes, 3,
                                                             {.causal = causal});
    const auto xa = mp::random_normal<double, batch, length, d_model>(fused_mesh, sizes, 1);
    const auto xb = mp::random_normal<double, batch, length, d_model>(split_mesh, sizes, 1);
    split_mesh.counters().reset();
    split_mesh.counters().by_operation(true);
    const auto yb = b(xb);
    bool separate_ran = false;  // the scores' einsum ran as an operation of its own
    for (const auto& o : split_mesh.counters().operations())
      separate_ran = separate_ran || o.name.starts_with("softmax over memory_length");
    split_mesh.counters().by_operation(false);
    CHECK(separate_ran);
    fused_mesh.counters().reset();
    fused_mesh.counters().by_operation(true);
    const auto ya_traced = a(xa);
    bool fused_ran = false;
    for (const auto& o : fused_mesh.counters().operations())
      fused_ran = fused_ran || o.name.starts_with("attention [batch, length, heads, d_k]");
    fused_mesh.counters().by_operation(false);
    CHECK(fused_ran);
    const auto ya = whole(ya_traced.value()), yb_all = whole(yb.value());
    REQUIRE(ya.size() == yb_all.size());
    double diff = 0;
    for (std::size_t i = 0; i < ya.size(); ++i) diff = std::max(diff, std::abs(ya[i] - yb_all[i]));
    CHECK_ALL_RANKS(diff < 1e-12);
  }
}

TEST_CASE(
    "layout_enumeration prices fused attention as it runs, and split as the separate "
    "operations") {
  // a reference plan of the attention core alone (nothing split), then estimates over 2 ranks
  using one_mesh = mp::mesh<mp::axes<rows>>;
  const std::size_t nb = 2, nl = 4, nm = 6, nh = 3, nk = 2, nv = 5;
  const auto sizes = mp::extents{batch{} = nb, length{} = nl, memory_length{} = nm,
                                 heads{} = nh, d_k{} = nk,    d_v{} = nv};
  const auto reference = mp::make_plan<one_mesh>({1}, [&](const one_mesh& m) {
    using M = one_mesh;
    mp::variable q(mp::random_normal<float, batch, length, heads, d_k>(m, sizes, 1));
    mp::variable k(mp::random_normal<float, batch, memory_length, heads, d_k>(m, sizes, 2));
    mp::variable v(mp::random_normal<float, batch, memory_length, heads, d_v>(m, sizes, 3));
    const auto o =
        mp::detail::fused_attention<length, memory_length, heads, d_k, d_v>(q, k, v, true);
    static_assert(std::is_same_v<typename decltype(o)::mesh_type, M>);
    mp::backward(mp::reduce_sum(o));
  });
  const mp::layout_enumeration e(reference, mp::machine_model::defaults());
  const std::vector<mp::mesh_axis> two{{"rows", 2}};
  const auto split = [&](const std::string& dim) {
    std::vector<int> axis(e.dims().size(), -1);
    const auto at = std::find(e.dims().begin(), e.dims().end(), dim);
    REQUIRE(at != e.dims().end());
    axis[static_cast<std::size_t>(at - e.dims().begin())] = 0;
    return e.estimate(two, axis);
  };
  const std::uint64_t scores = nb * nh * nl * nm, rows_of = nb * nh * nl;
  const std::uint64_t q_values = nb * nl * nh * nk, o_values = nb * nl * nh * nv;
  // heads split: the fused tiles, 2 of 3 heads' on rank 0, no collective but the loss's sum
  const auto heads_split = split("heads");
  CHECK(heads_split.collectives.allreduce.calls == 1);
  CHECK(heads_split.collectives.allreduce.values == 1);
  CHECK(heads_split.flops * 3 == reference.flops() * 2);
  CHECK_FALSE(e.gemms(two, heads_split).empty());
  // d_k split: the scores' sum over d_k, forward
  const auto key_split = split("d_k");
  CHECK(key_split.collectives.allreduce.calls == 1);
  CHECK(key_split.collectives.allreduce.values == scores);
  CHECK(e.gemms(two, key_split).empty());  // priced by flops: the tiles' shapes do not run
  // memory_length split: softmax's maxima and sums and the output's sum forward; the softmax's
  // backward sums and q's gradient backward (k and v split alike: their gradients local)
  const auto memory_split = split("memory_length");
  CHECK(memory_split.collectives.allreduce.calls == 5);
  CHECK(memory_split.collectives.allreduce.values == 3 * rows_of + o_values + q_values);
}

// Uneven splits (1 of 2): dims of sizes 1, 7 and 13 split over mesh dims of 1 to 4 ranks,
// which the mesh dims do not divide, so stripes differ in length and some ranks hold none
// (uneven_fixture.hpp states the convention). On the squarest grid, one row and one column
// of all the ranks, under every layout of a matrix [i, j] on [r, c]:
//   - making tensors: each rank's offsets and shape follow the convention; generated values sit
//     at their global index (iota too); random tensors equal, bit for bit, the same random
//     tensor held whole on every rank;
//   - component-wise expressions broadcasting and transposing by name, where and comparisons;
//   - reductions (sum, mean, max, min, and to a scalar) over split and whole dims;
//   - einsum with the contracted dim split, free dims split, one operand split, batch dims,
//     two contracted dims over both mesh dims, and the output reduce-scattered;
//   - softmax, log_softmax, logsumexp and argmax over a split and a whole dim;
//   - scatter and gather (to every rank and to one root).
// Every result against a single-rank reference in plain loops (uneven.cpp's own, or the
// fixture's), slice and gathered whole. Relayout, reshape, slice, shift and embeddings:
// uneven_movement.cpp; gradients: grad_uneven.cpp.
#include <limits>

#include "uneven_fixture.hpp"

using namespace uneven;

namespace {
using index2 = std::array<std::size_t, 2>;
using index3 = std::array<std::size_t, 3>;
constexpr double exact = 0.0;
constexpr double rounding = 1e-12;  // a few double operations, or a short sum

xt::xtensor<double, 2> transposed(const xt::xtensor<double, 2>& a) {
  xt::xtensor<double, 2> out({a.shape()[1], a.shape()[0]});
  for (std::size_t x = 0; x < a.shape()[0]; ++x)
    for (std::size_t y = 0; y < a.shape()[1]; ++y) out(y, x) = a(x, y);
  return out;
}
}  // namespace

TEST_CASE("uneven: the convention itself, on a few sizes worked by hand") {
  // 7 over 4: blocks 2, 2, 2, 1; 1 over 4: 1, 0, 0, 0; 13 over 2: 7, 6; 13 over 3: 5, 4, 4
  CHECK(stripe_begin(7, 4, 3) == 6);
  CHECK(stripe_size(7, 4, 3) == 1);
  CHECK(stripe_begin(1, 4, 2) == 1);
  CHECK(stripe_size(1, 4, 2) == 0);
  CHECK(stripe_size(13, 2, 0) == 7);
  CHECK(stripe_begin(13, 2, 1) == 7);
  CHECK(stripe_size(13, 3, 2) == 4);
  CHECK(stripe_begin(13, 3, 2) == 9);
}

TEST_CASE("uneven: making tensors (offsets, shapes, values, random) under every layout") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    const index2 shape{s.i, s.j};
    for_each_layout(matrix_layouts{}, [&]<class L>() {
      using t2 = tensor_t<L, double, i, j>;
      const t2 z(m, sizes);
      check("zeros", z, xt::xtensor<double, 2>(shape, 0.0), exact);
      check("generate", input<t2>(m, sizes, 1), reference_input(shape, 1), exact);
      // random: the values of the same tensor held whole on every rank (no gather there)
      const auto whole = mp::random_normal<tensor_t<replicated, double, i, j>>(m, sizes, 5, 1, 2);
      check("random_normal", mp::random_normal<t2>(m, sizes, 5, 1, 2),
            meshpp_test::to_double(whole.local()), exact);
      const auto whole_f =
          mp::random_uniform<tensor_t<replicated, float, i, j>>(m, sizes, 6, -1, 3);
      check("random_uniform float",
            mp::random_uniform<tensor_t<L, float, i, j>>(m, sizes, 6, -1, 3),
            meshpp_test::to_double(whole_f.local()), exact);
    });
    // iota along a split dim: each element's global index, on every shard
    for_each_layout(list<replicated, i_r, i_c>{}, [&]<class L>() {
      auto want = xt::xtensor<double, 1>::from_shape({s.i});
      for (std::size_t a = 0; a < s.i; ++a) want(a) = static_cast<double>(a);
      check("iota<i>", mp::iota<tensor_t<L, std::int32_t, i>>(m, sizes), want, exact);
      // and a causal mask from two iotas: [i, j] with i <= j
      xt::xtensor<double, 2> mask({s.i, s.j});
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) mask(a, b) = a <= b ? 1.0 : 0.0;
      check("iota<i> <= iota<j>",
            mp::eval(mp::iota<tensor_t<L, std::int32_t, i>>(m, sizes) <=
                     mp::iota<tensor_t<std::conditional_t<std::is_same_v<L, i_c>, j_r, j_c>,
                                       std::int32_t, j>>(m, sizes)),
            mask, exact);
    });
    // three dims, two split
    using t3 = tensor_t<layout<split<k, r>, split<i, c>>, double, i, j, k>;
    check("generate [i/c, j, k/r]", input<t3>(m, sizes, 2),
          reference_input(index3{s.i, s.j, s.k}, 2), exact);
  });
}

TEST_CASE("uneven: component-wise expressions, broadcasting and transposing by name") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    const auto X = reference_input(index2{s.i, s.j}, 1), Y = reference_input(index2{s.i, s.j}, 2);
    const auto T = reference_input(index2{s.j, s.i}, 3);
    const auto B = reference_input(std::array<std::size_t, 1>{s.j}, 4);
    const auto V = reference_input(std::array<std::size_t, 1>{s.i}, 5);
    for_each_layout(matrix_layouts{}, [&]<class L>() {
      const auto x = input<tensor_t<L, double, i, j>>(m, sizes, 1);
      const auto y = input<tensor_t<L, double, i, j>>(m, sizes, 2);
      const auto t = input<tensor_t<L, double, j, i>>(m, sizes, 3);
      const auto bias_whole = input<tensor_t<replicated, double, j>>(m, sizes, 4);
      const auto bias = input<tensor_t<L, double, j>>(m, sizes, 4);  // split as x splits j
      const auto v = input<tensor_t<L, double, i>>(m, sizes, 5);
      xt::xtensor<double, 2> want({s.i, s.j});

      // [i, j] + [j] (whole, read at this rank's stripe)
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) want(a, b) = X(a, b) + 2.0 * B(b);
      check("x + 2 bias (bias whole)", mp::eval(x + bias_whole * 2.0), want, rounding);
      // exp([i, j]) - [j] (bias split as x)
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) want(a, b) = std::exp(X(a, b)) - B(b);
      check("exp(x) - bias (bias split)", mp::eval(mp::exp(x) - bias), want, rounding);
      // [i, j] * [j, i] + [i]: transposed by name, broadcast over j
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) want(a, b) = X(a, b) * T(b, a) + V(a);
      check("x * t + v", mp::eval(x * t + v), want, rounding);
      // where and a comparison
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b)
          want(a, b) = X(a, b) > Y(a, b) ? X(a, b) : Y(a, b) - 1.0;
      check("where(x > y, x, y - 1)", mp::eval(mp::where(x > y, x, y - 1.0)), want, exact);
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) want(a, b) = X(a, b) <= T(b, a) ? 1.0 : 0.0;
      check("x <= t (bool)", mp::eval(x <= t), want, exact);
      // assigned to [j, i]: transposed by name
      tensor_t<L, double, j, i> swapped = x - y;
      xt::xtensor<double, 2> want_t({s.j, s.i});
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) want_t(b, a) = X(a, b) - Y(a, b);
      check("[j, i] = x - y", swapped, want_t, rounding);
      // an outer product of two vectors: [j] * [i] -> [j, i]
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t b = 0; b < s.j; ++b) want_t(b, a) = B(b) * V(a);
      check("bias * v", mp::eval(bias * v), want_t, rounding);
    });
  });
}

namespace {
// The reductions of a whole [i, j] along one dim (axis 0: i out, 1: j out)
enum class red { sum, mean, max, min };
xt::xtensor<double, 1> reduced(const xt::xtensor<double, 2>& a, std::size_t axis, red op) {
  const std::size_t n = a.shape()[axis], out_n = a.shape()[1 - axis];
  auto out = xt::xtensor<double, 1>::from_shape({out_n});
  for (std::size_t o = 0; o < out_n; ++o) {
    double acc = op == red::max   ? -std::numeric_limits<double>::infinity()
                 : op == red::min ? std::numeric_limits<double>::infinity()
                                  : 0.0;
    for (std::size_t q = 0; q < n; ++q) {
      const double v = axis == 0 ? a(q, o) : a(o, q);
      acc = op == red::max ? std::max(acc, v) : op == red::min ? std::min(acc, v) : acc + v;
    }
    out(o) = op == red::mean ? acc / static_cast<double>(n) : acc;
  }
  return out;
}
}  // namespace

TEST_CASE("uneven: reductions over split and whole dims") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    const auto X = reference_input(index2{s.i, s.j}, 1);
    const auto E = meshpp_test::map(X, [](double v) { return std::exp(v); });
    double total = 0, largest = -std::numeric_limits<double>::infinity();
    for (std::size_t f = 0; f < X.size(); ++f) {
      total += X.data()[f];
      largest = std::max(largest, X.data()[f]);
    }
    for_each_layout(matrix_layouts{}, [&]<class L>() {
      const auto x = input<tensor_t<L, double, i, j>>(m, sizes, 1);
      check("reduce_sum<i>", mp::reduce_sum<i>(x), reduced(X, 0, red::sum), rounding);
      check("reduce_sum<j>", mp::reduce_sum<j>(x), reduced(X, 1, red::sum), rounding);
      check("reduce_mean<i>", mp::reduce_mean<i>(x), reduced(X, 0, red::mean), rounding);
      check("reduce_mean<j>(exp(x))", mp::reduce_mean<j>(mp::exp(x)), reduced(E, 1, red::mean),
            rounding);
      check("reduce_max<j>", mp::reduce_max<j>(x), reduced(X, 1, red::max), exact);
      check("reduce_max_to<shape<j>>", mp::reduce_max_to<mp::shape<j>>(x), reduced(X, 0, red::max),
            exact);
      check("reduce_min<i>", mp::reduce_min<i>(x), reduced(X, 0, red::min), exact);
      // every dim: a scalar, the same on every rank
      const double sum = mp::reduce_sum(x).item(), mx = mp::reduce_max(x).item();
      const double mean = mp::reduce_mean(x).item();
      INFO("reduce to a scalar under " << layout_text<L>() << " on " << m.describe());
      CHECK_ALL_RANKS(std::abs(sum - total) <= rounding * std::max(1.0, std::abs(total)) * 16);
      CHECK_ALL_RANKS(mx == largest);
      CHECK_ALL_RANKS(std::abs(mean - total / double(s.i * s.j)) <= rounding * 16);
    });
    // three dims: two reduced at once, one split and one whole, and one split and one split
    const auto X3 = reference_input(index3{s.i, s.j, s.k}, 7);
    xt::xtensor<double, 1> want_j({s.j}, 0.0), want_k({s.k}, 0.0);
    for (std::size_t a = 0; a < s.i; ++a)
      for (std::size_t b = 0; b < s.j; ++b)
        for (std::size_t q = 0; q < s.k; ++q) want_j(b) += X3(a, b, q), want_k(q) += X3(a, b, q);
    using l3 = layout<split<i, r>, split<k, c>>;
    const auto x3 = input<tensor_t<l3, double, i, j, k>>(m, sizes, 7);
    check("reduce_sum<i, k> [i/r, j, k/c]", mp::reduce_sum<i, k>(x3), want_j, rounding);
    check("reduce_sum_to<shape<k>> [i/r, j, k/c]", mp::reduce_sum_to<mp::shape<k>>(x3), want_k,
          rounding);
  });
}

namespace {
// einsum reference: out[o...] = sum of a * b over the other dims. Dims as characters: the
// inputs' and the output's dim lists, the sizes of i, j, k.
xt::xtensor<double, 2> matmul(const xt::xtensor<double, 2>& a, const xt::xtensor<double, 2>& b) {
  xt::xtensor<double, 2> out({a.shape()[0], b.shape()[1]}, 0.0);
  for (std::size_t x = 0; x < a.shape()[0]; ++x)
    for (std::size_t q = 0; q < a.shape()[1]; ++q)
      for (std::size_t y = 0; y < b.shape()[1]; ++y) out(x, y) += a(x, q) * b(q, y);
  return out;
}

// x[i, k] w[k, j] -> [i, j] and [j, i], both operands under L (and w under LW), on mesh m
template <class L, class LW = L>
void check_matmul(const mesh_t& m, const sizes3& s, const std::string& what) {
  const auto sizes = extents_of(s);
  const auto X = reference_input(index2{s.i, s.k}, 1), W = reference_input(index2{s.k, s.j}, 2);
  const auto x = input<tensor_t<L, double, i, k>>(m, sizes, 1);
  const auto w = input<tensor_t<LW, double, k, j>>(m, sizes, 2);
  const auto want = matmul(X, W);
  check(what + ": [i, j]", mp::einsum<mp::shape<i, j>>(x, w), want, rounding);
  check(what + ": [j, i]", mp::einsum<mp::shape<j, i>>(x, w), transposed(want), rounding);
}
}  // namespace

TEST_CASE("uneven: einsum, contracted and free dims split") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    check_matmul<replicated>(m, s, "replicated");
    check_matmul<layout<split<k, c>>>(m, s, "k:c, contracted split");
    check_matmul<layout<split<k, r>>>(m, s, "k:r, contracted split");
    check_matmul<layout<split<k, c>, split<i, r>>>(m, s, "k:c, i:r");
    check_matmul<layout<split<k, r>, split<j, c>>>(m, s, "k:r, j:c");
    check_matmul<layout<split<i, r>, split<j, c>>>(m, s, "i:r, j:c, free dims split");
    check_matmul<layout<split<i, c>>>(m, s, "i:c, one free dim split");
    check_matmul<layout<split<k, c>>, replicated>(m, s, "k:c in x only, w whole");
    check_matmul<replicated, layout<split<k, r>, split<j, c>>>(m, s, "x whole, w k:r, j:c");
  });
}

TEST_CASE("uneven: einsum with batch dims, and two contracted dims over both mesh dims") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    // x[j, i, k] w[j, k] -> [j, i]: j a batch dim (split over r), k contracted (split over c)
    using lb = layout<split<j, r>, split<k, c>>;
    const auto X = reference_input(index3{s.j, s.i, s.k}, 1);
    const auto W = reference_input(index2{s.j, s.k}, 2);
    xt::xtensor<double, 2> want({s.j, s.i}, 0.0);
    for (std::size_t b = 0; b < s.j; ++b)
      for (std::size_t a = 0; a < s.i; ++a)
        for (std::size_t q = 0; q < s.k; ++q) want(b, a) += X(b, a, q) * W(b, q);
    const auto x = input<tensor_t<lb, double, j, i, k>>(m, sizes, 1);
    const auto w = input<tensor_t<lb, double, j, k>>(m, sizes, 2);
    check("batched [j/r, i, k/c] x [j/r, k/c]", mp::einsum<mp::shape<j, i>>(x, w), want, rounding);

    // x[i, j, k] w[j, k] -> [i]: two contracted dims, over both mesh dims
    using l2 = layout<split<j, r>, split<k, c>>;
    const auto X4 = reference_input(index3{s.i, s.j, s.k}, 5);
    auto want4 = xt::xtensor<double, 1>::from_shape({s.i});
    for (std::size_t a = 0; a < s.i; ++a) {
      want4(a) = 0.0;
      for (std::size_t b = 0; b < s.j; ++b)
        for (std::size_t q = 0; q < s.k; ++q) want4(a) += X4(a, b, q) * W(b, q);
    }
    check("[i, j/r, k/c] x [j/r, k/c] -> [i]",
          mp::einsum<mp::shape<i>>(input<tensor_t<l2, double, i, j, k>>(m, sizes, 5),
                                   input<tensor_t<l2, double, j, k>>(m, sizes, 2)),
          want4, rounding);
  });
}

TEST_CASE("uneven: einsum with the output reduce-scattered") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    // x[i, k] w[k, j], k split over c: the output split over c too, summed by reduce-scatter
    // (or the ring, or an allreduce and a slice: whichever, the values)
    using lk = layout<split<k, c>>;
    const auto X2 = reference_input(index2{s.i, s.k}, 3), W2 = reference_input(index2{s.k, s.j}, 4);
    const auto want2 = matmul(X2, W2);
    const auto x2 = input<tensor_t<lk, double, i, k>>(m, sizes, 3);
    const auto w2 = input<tensor_t<lk, double, k, j>>(m, sizes, 4);
    check("[i, k/c] x [k/c, j] -> [i/c, j] (reduce-scatter)",
          mp::einsum<mp::shape<i, j>, layout<split<i, c>>>(x2, w2), want2, rounding);
    check("[i, k/c] x [k/c, j] -> [i, j/c] (reduce-scatter)",
          mp::einsum<mp::shape<i, j>, layout<split<j, c>>>(x2, w2), want2, rounding);
    check("[i, k/c] x [k/c, j] -> [j/c, i] (reduce-scatter)",
          mp::einsum<mp::shape<j, i>, layout<split<j, c>>>(x2, w2), transposed(want2), rounding);
    // on both mesh dims: i over r, k over c, the output's j scattered over c
    using lik = layout<split<i, r>, split<k, c>>;
    const auto x3 = input<tensor_t<lik, double, i, k>>(m, sizes, 3);
    const auto w3 = input<tensor_t<lik, double, k, j>>(m, sizes, 4);
    check("[i/r, k/c] x [k/c, j] -> [i/r, j/c] (reduce-scatter per row)",
          mp::einsum<mp::shape<i, j>, layout<split<i, r>, split<j, c>>>(x3, w3), want2, rounding);
  });
}

TEST_CASE("uneven: softmax, log_softmax, logsumexp and argmax over split and whole dims") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    const auto X = reference_input(index2{s.i, s.j}, 1);
    // along j (axis 1) and along i (axis 0)
    auto reference = [&](std::size_t axis, xt::xtensor<double, 2>& soft,
                         xt::xtensor<double, 2>& log_soft, xt::xtensor<double, 1>& lse,
                         xt::xtensor<double, 1>& arg) {
      const std::size_t n = X.shape()[axis], other = X.shape()[1 - axis];
      soft = xt::xtensor<double, 2>(X.shape());
      log_soft = soft;
      lse = xt::xtensor<double, 1>::from_shape({other});
      arg = lse;
      for (std::size_t o = 0; o < other; ++o) {
        auto at = [&](std::size_t q) -> double { return axis == 1 ? X(o, q) : X(q, o); };
        double mx = at(0);
        std::size_t best = 0;
        for (std::size_t q = 1; q < n; ++q)
          if (at(q) > mx) mx = at(q), best = q;
        double sum = 0;
        for (std::size_t q = 0; q < n; ++q) sum += std::exp(at(q) - mx);
        lse(o) = mx + std::log(sum);
        arg(o) = static_cast<double>(best);
        for (std::size_t q = 0; q < n; ++q) {
          double& sv = axis == 1 ? soft(o, q) : soft(q, o);
          double& lv = axis == 1 ? log_soft(o, q) : log_soft(q, o);
          sv = std::exp(at(q) - mx) / sum;
          lv = at(q) - lse(o);
        }
      }
    };
    xt::xtensor<double, 2> soft_j, log_j, soft_i, log_i;
    xt::xtensor<double, 1> lse_j, arg_j, lse_i, arg_i;
    reference(1, soft_j, log_j, lse_j, arg_j);
    reference(0, soft_i, log_i, lse_i, arg_i);
    for_each_layout(matrix_layouts{}, [&]<class L>() {
      const auto x = input<tensor_t<L, double, i, j>>(m, sizes, 1);
      check("softmax<j>", mp::softmax<j>(x), soft_j, rounding);
      check("log_softmax<j>", mp::log_softmax<j>(x), log_j, rounding);
      check("logsumexp<j>", mp::logsumexp<j>(x), lse_j, rounding);
      check("argmax<j>", mp::argmax<j>(x), arg_j, exact);
      check("softmax<i>", mp::softmax<i>(x), soft_i, rounding);
      check("log_softmax<i>", mp::log_softmax<i>(x), log_i, rounding);
      check("logsumexp<i>", mp::logsumexp<i>(x), lse_i, rounding);
      check("argmax<i>", mp::argmax<i>(x), arg_i, exact);
    });
  });
}

TEST_CASE("uneven: scatter and gather, to every rank and to one root") {
  on_every_case([](const mesh_t& m, const sizes3& s) {
    const auto sizes = extents_of(s);
    const index3 shape{s.i, s.j, s.k};
    const auto G = reference_input(shape, 9);
    xt::xtensor<float, 3> Gf(shape);
    for (std::size_t f = 0; f < G.size(); ++f) Gf.data()[f] = static_cast<float>(G.data()[f]);
    const int root = m.size() - 1;
    auto round_trip = [&]<class L>() {
      const auto t = mp::scatter<tensor_t<L, double, i, j, k>>(m, sizes, G);
      check("scatter", t, G, exact);
      const auto at_root = mp::gather(t, root);
      INFO("gather to the root, " << layout_text<L>() << " on " << m.describe());
      CHECK_ALL_RANKS(m.rank() == root ? meshpp_test::bit_equal(at_root, G) : at_root.size() == 0);
      const auto f = mp::scatter<tensor_t<L, float, i, j, k>>(m, sizes, Gf);
      check("scatter float", f, meshpp_test::to_double(Gf), exact);
    };
    round_trip.template operator()<replicated>();
    round_trip.template operator()<layout<split<i, r>>>();
    round_trip.template operator()<layout<split<j, c>>>();
    round_trip.template operator()<layout<split<k, r>, split<i, c>>>();
    round_trip.template operator()<layout<split<i, r>, split<j, c>>>();
    round_trip.template operator()<layout<split<j, r>, split<k, c>>>();
  });
}

// softmax<memory>(x, causal<length>{}) (ops/softmax.hpp, autodiff/softmax.hpp): the causal
// softmax without a mask tensor, on scores [batch, heads, length, memory] of float and double,
// square and not (memory longer and shorter than length, row lengths that are and are not
// whole chunks), under two layouts on every mesh shape (at 1 rank each is whole: the
// replicated case):
//   length_mesh   length:rows, heads:cols    memory whole and last: the row-by-row path, each
//                                            rank's rows from its own global length index
//                                            (uneven blocks at 4 ranks); on one row of ranks
//                                            heads alone is split (empty slices at 4 ranks)
//   memory_mesh   memory:cols, batch:rows    memory split: the mask path (softmax(x, mask))
// (double on the first only: each instance is a large part of this file's compile time)
// Checked: the value equals softmax<memory>(x, mask) with the mask tensor memory <= length
// (==, NaN matching NaN), and a plain loop in double over the gathered input (no mesh) within
// rounding; NaN in the unseen entries never reaches the result. The traced version's value and
// gradient (g finite: the weights of a weighted sum) equal those of the mask form, and the
// gradient a plain loop's y (g - sum g y) within rounding, 0 at every unseen entry. Then
// length first, heads between it and memory ([length, heads, memory]: several rows a length
// index), and rows whose seen part holds NaN or +inf or only -inf: NaN throughout, as under
// the mask.
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/autodiff/softmax.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/ops/softmax.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

MESHPP_DIM(batch);
MESHPP_DIM(heads);
MESHPP_DIM(length);
MESHPP_DIM(memory);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {

namespace mp = meshpp;
using meshpp_test::world;

using axes = mp::axes<rows, cols>;
using length_mesh = mp::mesh<axes, mp::layout<mp::split<length, rows>, mp::split<heads, cols>>>;
using memory_mesh = mp::mesh<axes, mp::layout<mp::split<memory, cols>, mp::split<batch, rows>>>;

inline constexpr std::size_t nb = 2, nheads = 2;

// scores(m, L, M): normal values times 3; -inf at a few seen entries (every 7th of row 25's),
// NaN at every unseen one (memory > length), which neither form lets through
template <class T, class Mesh>
auto scores(const Mesh& m, std::size_t nl, std::size_t nm) {
  const auto sizes = mp::extents{batch{} = nb, heads{} = nheads, length{} = nl, memory{} = nm};
  return mp::generate<T, batch, heads, length, memory>(m, sizes, [](const auto& g) {
    if (g[3] > g[2]) return std::numeric_limits<T>::quiet_NaN();
    if (g[2] == 25 && g[3] % 7 == 0) return -std::numeric_limits<T>::infinity();
    const double v = std::sin(1.3 * double(g[0] * 977 + g[1] * 131 + g[2] * 17 + g[3]));
    return static_cast<T>(3 * v);
  });
}

// the mask form: softmax<memory>(x, memory <= length)
template <class X>
auto mask_of(const X& x) {
  return mp::eval(mp::iota<memory>(x.mesh(), x.sizes()) <= mp::iota<length>(x.mesh(), x.sizes()));
}

// same_values(a, b): the same values on every element (NaN where the other has NaN)
template <class A, class B>
bool same_values(const A& a, const B& b) {
  const auto wa = mp::gather(a), wb = mp::gather(b);
  if (wa.size() != wb.size()) return false;
  for (std::size_t i = 0; i < wa.size(); ++i) {
    const auto p = wa.data()[i], q = wb.data()[i];
    if (!(p == q || (std::isnan(p) && std::isnan(q)))) return false;
  }
  return true;
}

template <class T, class Mesh>
void check(const Mesh& m, std::size_t nl, std::size_t nm) {
  const auto mesh = m.describe();
  CAPTURE(mesh);
  CAPTURE(nl);
  CAPTURE(nm);
  CAPTURE(sizeof(T));
  const auto x = scores<T>(m, nl, nm);
  const auto got = mp::softmax<memory>(x, mp::causal<length>{});
  static_assert(
      std::is_same_v<std::remove_cvref_t<decltype(got)>, std::remove_cvref_t<decltype(x)>>);
  CHECK_ALL_RANKS(same_values(got, mp::softmax<memory>(x, mask_of(x))));

  // the traced form: value and gradient those of the mask form, exactly
  const auto xt = mp::trace(x);
  const auto p = mp::softmax<memory>(xt, mp::causal<length>{});
  const auto [g] = mp::gradients(meshpp_test::weighted_sum(p), xt);
  const auto q = mp::softmax<memory>(xt, mask_of(x));
  const auto [h] = mp::gradients(meshpp_test::weighted_sum(q), xt);
  CHECK_ALL_RANKS(same_values(p.value(), q.value()));
  CHECK_ALL_RANKS(same_values(g, h));

  // plain loops in double over the gathered input, the weights and the results
  const auto X = mp::gather(x), P = mp::gather(got), G = mp::gather(g);
  const auto W =
      mp::gather(mp::random_normal<std::remove_cvref_t<decltype(x)>>(x.mesh(), x.sizes(), 99));
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  double worst = 0;
  bool unseen_zero = true;
  for (std::size_t b = 0; b < nb; ++b) {
    for (std::size_t k = 0; k < nheads; ++k) {
      for (std::size_t l = 0; l < nl; ++l) {
        const auto at = [&](const auto& a, std::size_t j) { return double(a(b, k, l, j)); };
        const std::size_t seen = std::min(nm, l + 1);
        double top = -std::numeric_limits<double>::infinity(), sum = 0, dot = 0;
        for (std::size_t j = 0; j < seen; ++j) top = std::max(top, at(X, j));
        for (std::size_t j = 0; j < seen; ++j) sum += std::exp(at(X, j) - top);
        for (std::size_t j = 0; j < seen; ++j) dot += at(W, j) * std::exp(at(X, j) - top) / sum;
        for (std::size_t j = 0; j < nm; ++j) {
          if (j >= seen) {
            unseen_zero = unseen_zero && P(b, k, l, j) == 0 && G(b, k, l, j) == 0;
            continue;
          }
          const double y = std::exp(at(X, j) - top) / sum;
          worst = std::max(worst, std::abs(at(P, j) - y));
          worst = std::max(worst, std::abs(at(G, j) - y * (at(W, j) - dot)) / 4);
        }
      }
    }
  }
  CAPTURE(worst);
  CHECK_ALL_RANKS(worst <= tol);
  CHECK_ALL_RANKS(unseen_zero);
}

// check_all<Types...>(m): check<T>(m, L, M) for each T and four sizes: square; memory longer
// than length; shorter (the later rows seen whole); rows of whole chunks (32)
template <class... Types, class Mesh>
void check_all(const Mesh& m) {
  for (const auto& [nl, nm] :
       std::vector<std::array<std::size_t, 2>>{{37, 37}, {29, 45}, {45, 21}, {32, 32}}) {
    (check<Types>(m, nl, nm), ...);
  }
}

// check_length_first(m): x [length, heads, memory] (length first, rows of several heads per
// length index) with bad rows at length 3 (NaN seen), 4 (+inf seen) and 5 (all seen -inf):
// value and gradient those of the mask form, the bad rows NaN throughout, the others finite
template <class Mesh>
void check_length_first(const Mesh& m) {
  const auto mesh = m.describe();
  CAPTURE(mesh);
  const auto sizes = mp::extents{length{} = 19, heads{} = 3, memory{} = 23};
  const auto x = mp::generate<float, length, heads, memory>(m, sizes, [](const auto& g) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    if (g[2] > g[0]) return g[2] % 2 ? inf : std::numeric_limits<float>::quiet_NaN();
    if (g[0] == 3 && g[2] == 1) return std::numeric_limits<float>::quiet_NaN();
    if (g[0] == 4 && g[2] == 2) return inf;
    if (g[0] == 5) return -inf;
    return 2 * std::sin(0.9f * static_cast<float>(g[0] * 31 + g[1] * 7 + g[2]));
  });
  const auto got = mp::softmax<memory>(x, mp::causal<length>{});
  CHECK_ALL_RANKS(same_values(got, mp::softmax<memory>(x, mask_of(x))));
  const auto xt = mp::trace(x);
  const auto p = mp::softmax<memory>(xt, mp::causal<length>{});
  const auto [g] = mp::gradients(meshpp_test::weighted_sum(p), xt);
  const auto [h] =
      mp::gradients(meshpp_test::weighted_sum(mp::softmax<memory>(xt, mask_of(x))), xt);
  CHECK_ALL_RANKS(same_values(g, h));
  const auto P = mp::gather(got), G = mp::gather(g);
  bool as_expected = true;
  for (std::size_t l = 0; l < 19; ++l) {
    for (std::size_t k = 0; k < 3; ++k) {
      for (std::size_t j = 0; j < 23; ++j) {
        const bool bad = l >= 3 && l <= 5;
        as_expected = as_expected && (bad ? std::isnan(P(l, k, j)) && std::isnan(G(l, k, j))
                                          : std::isfinite(P(l, k, j)) && std::isfinite(G(l, k, j)));
      }
    }
  }
  CHECK_ALL_RANKS(as_expected);
}

}  // namespace

TEST_CASE("softmax<memory>(x, causal<length>): the mask form's value and gradient, exactly") {
  const int n = world().size();
  for (const auto& shape : std::vector<std::array<int, 2>>{meshpp_test::grid2(n), {1, n}, {n, 1}}) {
    // (at 1 rank every mesh is whole: the replicated case; length_mesh on one row of ranks
    // splits only heads, over more columns than heads at 4 ranks: empty slices; double's chunk
    // of 8 is checked on the row path)
    check_all<float, double>(length_mesh(shape));
    check_all<float>(memory_mesh(shape));
  }
}

TEST_CASE("softmax<memory>(x, causal<length>), length first; NaN, +inf and all -inf rows") {
  const int n = world().size();
  for (const auto& shape : std::vector<std::array<int, 2>>{meshpp_test::grid2(n), {1, n}, {n, 1}}) {
    check_length_first(length_mesh(shape));
    check_length_first(memory_mesh(shape));
  }
}

// Gradients at uneven splits: batch and hidden of sizes 1, 7 and 13 split over rows and cols
// (split_mesh) of meshes the sizes do not divide, so stripes differ in length and some ranks
// hold none (uneven_fixture.hpp states the convention). Checked by central differences
// (double) at every element (gradcheck.hpp), on the squarest grid, one row and one column:
//   - a component-wise chain, and a bias broadcast over the split batch dim;
//   - reductions over split and whole dims (sum, mean, max, and to a scalar);
//   - einsum contracting the split hidden dim, and contracting the split batch dim;
//   - softmax cross-entropy with the class dim split, softmax and log_softmax;
//   - an embedding lookup with its vocab dim split (the table's gradient);
//   - relayouts (an alltoall, an allgather, the cycle);
//   - slice, split_along, pad, concat and shift along split dims, and reshape merging a split
//     dim with the next and back.
// MESHPP_UNEVEN_TEST_EVEN runs the same checks at sizes the meshes divide (4, 8, 12 for 1, 7,
// 13), to check the tests themselves on a tree without uneven splits.
#include <meshpp/meshpp.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "grad_fixture.hpp"

MESHPP_DIM(k);

namespace {
#ifdef MESHPP_UNEVEN_TEST_EVEN
constexpr std::size_t s1 = 4, s7 = 8, s13 = 12;
#else
constexpr std::size_t s1 = 1, s7 = 7, s13 = 13;  // the committed sizes
#endif
constexpr std::size_t nk = 3;  // k is never split

struct sizes2 {
  std::size_t batch, hidden;
};
const std::vector<sizes2> size_cases{{s7, s13}, {s13, s1}, {s1, s7}};

auto extents_of(const sizes2& s) {
  return mp::extents{batch{} = s.batch, hidden{} = s.hidden, k{} = nk};
}

// on_every_case(f): f(mesh, sizes, what) on every mesh shape (split_mesh) and size case
template <class F>
void on_every_case(F&& f) {
  for (const auto& shape : mesh_shapes()) {
    const split_mesh m(shape);
    for (const auto& s : size_cases) {
      const std::string what =
          " (batch " + std::to_string(s.batch) + ", hidden " + std::to_string(s.hidden) + ")";
      f(m, extents_of(s), what);
    }
  }
}
}  // namespace

TEST_CASE("uneven gradients: a component-wise chain and a broadcast bias") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 1);
    const auto bias = mp::random_normal<double, hidden>(m, sizes, 2);
    check_gradient("tanh(x * x + bias) * exp(x / 2), by x" + what, x, [&](const auto& t) {
      return weighted_sum(mp::tanh(t * t + bias) * mp::exp(t * 0.5));
    });
    check_gradient("tanh(x * bias) + bias, by bias (summed over batch)" + what, bias,
                   [&](const auto& b) { return weighted_sum(mp::tanh(x * b) + b); });
    check_gradient("where(x > 0, x * x, -x) - sigmoid(x), by x" + what, x, [&](const auto& t) {
      return weighted_sum(mp::where(x > 0.0, t * t, -t) - mp::sigmoid(t));
    });
  });
}

TEST_CASE("uneven gradients: reductions over split and whole dims") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden, k>(m, sizes, 3);
    check_gradient("reduce_sum<batch>" + what, x,
                   [](const auto& t) { return weighted_sum(mp::reduce_sum<batch>(t)); });
    check_gradient("reduce_mean<hidden>(exp)" + what, x,
                   [](const auto& t) { return weighted_sum(mp::reduce_mean<hidden>(mp::exp(t))); });
    check_gradient("reduce_max<hidden>" + what, x,
                   [](const auto& t) { return weighted_sum(mp::reduce_max<hidden>(t)); });
    check_gradient("reduce_sum<batch, k>" + what, x,
                   [](const auto& t) { return weighted_sum(mp::reduce_sum<batch, k>(t * t)); });
    check_gradient("reduce_sum (every dim) of tanh" + what, x,
                   [](const auto& t) { return mp::reduce_sum(mp::tanh(t)); });
  });
}

TEST_CASE("uneven gradients: einsum contracting a split dim") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 4);
    const auto w = mp::random_normal<double, hidden, k>(m, sizes, 5);
    const auto y = mp::random_normal<double, batch, k>(m, sizes, 6);
    // [batch/rows, hidden/cols] x [hidden/cols, k] -> [batch/rows, k]: hidden contracted
    auto forward = [](const auto& a, const auto& b) {
      return weighted_sum(mp::tanh(mp::einsum<mp::shape<batch, k>>(a, b)));
    };
    check_gradient("einsum<batch, k>, hidden split, by x" + what, x,
                   [&](const auto& t) { return forward(t, w); });
    check_gradient("einsum<batch, k>, hidden split, by w" + what, w,
                   [&](const auto& t) { return forward(x, t); });
    // [batch/rows, hidden/cols] x [batch/rows, k] -> [hidden/cols, k]: batch contracted
    check_gradient("einsum<hidden, k>, batch split, by x" + what, x, [&](const auto& t) {
      return weighted_sum(mp::tanh(mp::einsum<mp::shape<hidden, k>>(t, y)));
    });
    check_gradient("einsum<k, hidden>, batch split, by y" + what, y, [&](const auto& t) {
      return weighted_sum(mp::tanh(mp::einsum<mp::shape<k, hidden>>(x, t)));
    });
  });
}

TEST_CASE("uneven gradients: softmax cross-entropy, softmax and log_softmax") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto logits = mp::random_normal<double, batch, hidden>(m, sizes, 7, 0.0, 2.0);
    const auto n = static_cast<std::uint64_t>(sizes[hidden{}]);
    const auto labels = mp::generate<std::int32_t, batch>(
        m, sizes, [n](const auto& g) { return static_cast<std::int32_t>((g[0] * 5 + 2) % n); });
    check_gradient("softmax_cross_entropy<hidden>" + what, logits, [&](const auto& z) {
      return weighted_sum(mp::softmax_cross_entropy<hidden>(z, labels));
    });
    check_gradient("softmax<hidden>" + what, logits,
                   [](const auto& z) { return weighted_sum(mp::softmax<hidden>(z)); });
    check_gradient("log_softmax<batch>" + what, logits,
                   [](const auto& z) { return weighted_sum(mp::log_softmax<batch>(z)); });
  });
}

TEST_CASE("uneven gradients: an embedding lookup, vocab split") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    // table [hidden/cols, k]: hidden as the vocab; ids [batch/rows]
    const auto table = mp::random_normal<double, hidden, k>(m, sizes, 8);
    const auto n = static_cast<std::uint64_t>(sizes[hidden{}]);
    const auto ids = mp::generate<std::int32_t, batch>(
        m, sizes, [n](const auto& g) { return static_cast<std::int32_t>((g[0] * 3 + 1) % n); });
    check_gradient("take<hidden>(table, ids), by table" + what, table,
                   [&](const auto& t) { return weighted_sum(mp::tanh(mp::take<hidden>(t, ids))); });
  });
}

TEST_CASE("uneven gradients: relayouts") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 9);
    using hidden_rows = mp::layout<mp::split<hidden, rows>>;
    check_gradient("relayout to hidden:rows (an alltoall)" + what, x,
                   [](const auto& t) { return weighted_sum(mp::relayout<hidden_rows>(t)); });
    check_gradient("relayout to replicated (allgathers)" + what, x,
                   [](const auto& t) { return weighted_sum(mp::relayout<mp::layout<>>(t)); });
    check_gradient("relayout to batch:cols, hidden:rows (the cycle)" + what, x, [](const auto& t) {
      return weighted_sum(
          mp::relayout<mp::layout<mp::split<batch, cols>, mp::split<hidden, rows>>>(t));
    });
    check_gradient("relayout there and back, times x" + what, x, [](const auto& t) {
      return weighted_sum(mp::relayout<split_rules>(mp::relayout<hidden_rows>(t)) * t);
    });
  });
}

namespace {
// at even sizes, results whose sizes the meshes divide (4, n - 4); else 1 and n - 1
constexpr std::size_t piece = s1;
}  // namespace

TEST_CASE("uneven gradients: slice and split_along along the split batch dim") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 10);
    const std::size_t nb = sizes[batch{}];
    if (nb <= piece) return;
    check_gradient("slice<batch> from " + std::to_string(piece) + what, x, [&](const auto& t) {
      return weighted_sum(mp::slice<batch>(t, piece, nb - piece));
    });
    check_gradient("split_along<batch>, a piece times the other's sum" + what, x,
                   [&](const auto& t) {
                     const auto parts = mp::split_along<batch>(t, {piece, nb - piece});
                     return weighted_sum(mp::tanh(parts[1]) * mp::reduce_sum<batch>(parts[0]));
                   });
  });
}

TEST_CASE("uneven gradients: pad and concat along the split hidden dim") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 10);
    check_gradient("pad<hidden>" + what, x,
                   [&](const auto& t) { return weighted_sum(mp::pad<hidden>(t, piece, piece)); });
    check_gradient("concat<hidden>(x, x * x)" + what, x,
                   [](const auto& t) { return weighted_sum(mp::concat<hidden>(t, t * t)); });
  });
}

TEST_CASE("uneven gradients: shift along split dims") {
  on_every_case([](const split_mesh& m, const auto& sizes, const std::string& what) {
    const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 10);
    for (const long offset : {1L, -3L}) {
      check_gradient("shift<hidden> " + std::to_string(offset) + " (wrap)" + what, x,
                     [&](const auto& t) {
                       return weighted_sum(mp::shift<hidden>(t, offset, mp::boundary::wrap) * t);
                     });
      check_gradient("shift<batch> " + std::to_string(offset) + " (zero)" + what, x,
                     [&](const auto& t) { return weighted_sum(mp::shift<batch>(t, offset) * t); });
    }
  });
}

MESHPP_DIM(merged);

TEST_CASE("uneven gradients: reshape merging a split dim with the next, and back") {
  // merged = batch * hidden, split over rows as batch is
  using mesh_t = split_mesh_with<mp::split<merged, rows>>;
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    for (const auto& s : size_cases) {
      const auto sizes = mp::extents{batch{} = s.batch, hidden{} = s.hidden, k{} = nk,
                                     merged{} = s.batch * s.hidden};
      const std::string what =
          " (batch " + std::to_string(s.batch) + ", hidden " + std::to_string(s.hidden) + ")";
      const auto x = mp::random_normal<double, batch, hidden>(m, sizes, 11);
      check_gradient("reshape to [merged]" + what, x, [&](const auto& t) {
        return weighted_sum(mp::tanh(mp::reshape<mp::shape<merged>>(t, sizes)));
      });
      const auto y = mp::random_normal<double, merged>(m, sizes, 12);
      check_gradient("reshape [merged] to [batch, hidden]" + what, y, [&](const auto& t) {
        return weighted_sum(mp::tanh(mp::reshape<mp::shape<batch, hidden>>(t, sizes)));
      });
    }
  }
}

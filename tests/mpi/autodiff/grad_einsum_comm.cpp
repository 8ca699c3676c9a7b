// What the backward pass of einsum communicates, from the mesh's counters: for the paper's
// layer y[batch, hidden] = x[batch, io] w[io, hidden] with batch split over rows, d/dw alone
// is one allreduce over rows of w's slice (the einsum for dw contracts batch), and d/dx alone
// allreduces nothing of w's size; for the paper's two layers, the whole forward and backward
// pass allreduces exactly Table 1's count (docs/table1.md). Gradients are also compared
// with the einsums written by hand.
#include <meshpp/autodiff/einsum.hpp>
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/movement.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/counters.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/einsum.hpp>
#include <meshpp/ops/relayout.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(ff);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {
constexpr std::size_t b = 4, d_io = 6, d_h = 4;
const auto sizes = mp::extents{batch{} = b, io{} = d_io, hidden{} = d_h};
using bh = mp::shape<batch, hidden>;
using bi = mp::shape<batch, io>;
using ih = mp::shape<io, hidden>;

// Table 1's 2-D layout [batch:rows, hidden:cols]
using mesh_2d =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;
// pure data parallelism [batch:rows]
using mesh_1d = mp::mesh<mp::axes<rows>, mp::layout<mp::split<batch, rows>>>;

// Every mesh shape [rows, cols] of n ranks (both divide batch and hidden, 4)
std::vector<std::array<int, 2>> shapes_2d(int n) {
  std::vector<std::array<int, 2>> out;
  for (int r = 1; r <= n; ++r) {
    if (n % r == 0 && 4 % r == 0 && 4 % (n / r) == 0) out.push_back({r, n / r});
  }
  return out;
}

// collectives_other_than_allreduce(c): calls of every other kind of collective
std::uint64_t collectives_other_than_allreduce(const mp::counters& c) {
  std::uint64_t calls = 0;
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    if (kind != mp::collective::allreduce) calls += c.total(kind).calls;
  }
  return calls;
}
}  // namespace

TEST_CASE("einsum backward communicates what the einsum for each gradient implies, 2-D layout") {
  for (const auto& shape : shapes_2d(world().size())) {
    const mesh_2d m(shape);
    CAPTURE(m.describe());
    const std::size_t r = static_cast<std::size_t>(shape[0]),
                      c = static_cast<std::size_t>(shape[1]);
    constexpr unsigned over_rows = mesh_2d::mask_v<rows>, over_cols = mesh_2d::mask_v<cols>;
    const auto x0 = mp::random_normal<double, batch, io>(m, sizes, 1);
    const auto w0 = mp::random_normal<double, io, hidden>(m, sizes, 2);
    const auto dy = mp::random_normal<double, batch, hidden>(m, sizes, 3);
    const auto x = mp::trace(x0);
    const auto w = mp::trace(w0);
    const auto y = mp::einsum<bh>(x, w);  // contracts io, whole: no communication
    const auto& counts = m.counters();
    // a sum over a mesh dim of one rank counts nothing
    const std::size_t on_r = r > 1 ? 1 : 0, on_c = c > 1 ? 1 : 0;

    // d/dw = einsum<[io, hidden]>(dy, x): contracts batch, split over rows: one allreduce of
    // w's slice [io, hidden/cols] over rows, and nothing else
    m.counters().reset();
    const auto [dw] = mp::vjp(y, dy, w);
    CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, over_rows).calls == on_r);
    CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) == on_r * d_io * d_h / c);
    CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) == on_r * w0.local().size());
    CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) == 0);

    // d/dx = einsum<[batch, io]>(dy, w): contracts hidden, split over cols: one allreduce of
    // x's slice [batch/rows, io] over cols; nothing over rows, nothing of w's size
    m.counters().reset();
    const auto [dx] = mp::vjp(y, dy, x);
    CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, over_rows).calls == 0);
    CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, over_cols).calls == on_c);
    CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) == on_c * b * d_io / r);
    CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) == 0);

    // the values: the einsums written by hand
    CHECK(meshpp_test::max_abs_difference(dw, mp::einsum<ih>(x0, dy)) < 1e-12);
    CHECK(meshpp_test::max_abs_difference(dx, mp::einsum<bi>(dy, w0)) < 1e-12);
  }
}

TEST_CASE("einsum backward communicates what the einsum for each gradient implies, data parallel") {
  const mesh_1d m({world().size()});
  CAPTURE(m.describe());
  const auto x0 = mp::random_normal<double, batch, io>(m, sizes, 1);
  const auto w0 = mp::random_normal<double, io, hidden>(m, sizes, 2);
  const auto dy = mp::random_normal<double, batch, hidden>(m, sizes, 3);
  const auto x = mp::trace(x0);
  const auto w = mp::trace(w0);
  const auto y = mp::einsum<bh>(x, w);
  const auto& counts = m.counters();

  // the data-parallel gradient sum: all of w, over rows, once (a group of one rank counts
  // nothing)
  const std::size_t on_r = counts.group_of_one(mesh_1d::mask_v<rows>) ? 0 : 1;
  m.counters().reset();
  const auto [dw] = mp::vjp(y, dy, w);
  CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, mesh_1d::mask_v<rows>).calls == on_r);
  CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) == on_r * d_io * d_h);
  CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) == 0);

  // d/dx contracts hidden, whole: no communication at all
  m.counters().reset();
  const auto [dx] = mp::vjp(y, dy, x);
  CHECK_ALL_RANKS(counts.total(mp::collective::allreduce).calls == 0);
  CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) == 0);

  CHECK(meshpp_test::max_abs_difference(dw, mp::einsum<ih>(x0, dy)) < 1e-12);
  CHECK(meshpp_test::max_abs_difference(dx, mp::einsum<bi>(dy, w0)) < 1e-12);
}

TEST_CASE("the paper's two layers, forward and backward by autodiff, allreduce Table 1's count") {
  for (const auto& shape : shapes_2d(world().size())) {
    const mesh_2d m(shape);
    CAPTURE(m.describe());
    const std::size_t r = static_cast<std::size_t>(shape[0]),
                      c = static_cast<std::size_t>(shape[1]);
    const auto x = mp::trace(mp::random_normal<double, batch, io>(m, sizes, 1));
    const auto w = mp::trace(mp::random_normal<double, io, hidden>(m, sizes, 2));
    const auto bias = mp::trace(mp::random_normal<double, hidden>(m, sizes, 3));
    const auto v = mp::trace(mp::random_normal<double, hidden, io>(m, sizes, 4));
    const auto dy = mp::random_normal<double, batch, io>(m, sizes, 5);
    m.counters().reset();
    const auto h = mp::relu(mp::einsum<bh>(x, w) + bias);  // contracts io: whole
    const auto y = mp::einsum<bi>(h, v);                   // contracts hidden: over cols
    // a sum over a mesh dim of one rank counts nothing (docs/table1.md)
    const std::size_t on_r = r > 1 ? 1 : 0, on_c = c > 1 ? 1 : 0;
    CHECK_ALL_RANKS(m.counters().values(mp::collective::allreduce) == on_c * b * d_io / r);
    // dv, dw contract batch (rows), dbias reduces batch (rows), dx contracts hidden (cols)
    const auto [dx, dw, dbias, dv] = mp::vjp(y, dy, x, w, bias, v);
    CHECK_ALL_RANKS(m.counters().values(mp::collective::allreduce) ==
                    on_c * 2 * b * d_io / r + on_r * (2 * d_io * d_h / c + d_h / c));
    CHECK_ALL_RANKS(collectives_other_than_allreduce(m.counters()) == 0);
  }
}

// einsum<Out, OutRules> of traced tensors: with io (contracted) split over cols and hidden
// requested split over cols, forward reduce_scatters the sums over cols (no allreduce), and
// backward allgathers the gradient over cols back to the product's natural layout before the
// two gradient einsums, which then communicate what they do for einsum<Out>: d/dw allreduces
// w's slice over rows, d/dx nothing.
TEST_CASE("einsum<Out, OutRules> of traced tensors: reduce_scatter forward, allgather backward") {
  using mesh_k =
      mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<io, cols>>>;
  using scattered = mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>;
  for (const auto& shape : shapes_2d(world().size())) {
    const mesh_k m(shape);
    CAPTURE(m.describe());
    const std::size_t r = static_cast<std::size_t>(shape[0]),
                      c = static_cast<std::size_t>(shape[1]);
    constexpr unsigned over_rows = mesh_k::mask_v<rows>, over_cols = mesh_k::mask_v<cols>;
    const auto x0 = mp::random_normal<double, batch, io>(m, sizes, 1);
    const auto w0 = mp::random_normal<double, io, hidden>(m, sizes, 2);
    const auto dy0 = mp::random_normal<double, batch, hidden>(m, sizes, 3);  // [batch:rows]
    const auto dy = mp::relayout<scattered>(dy0);  // the gradient as the result lies
    const auto x = mp::trace(x0);
    const auto w = mp::trace(w0);
    const auto& counts = m.counters();
    // a collective over a mesh dim of one rank counts nothing
    const std::size_t on_r = r > 1 ? 1 : 0, on_c = c > 1 ? 1 : 0;

    m.counters().reset();
    const auto y = mp::einsum<bh, scattered>(x, w);
    CHECK_ALL_RANKS(counts.at(mp::collective::reduce_scatter, over_cols).calls == on_c);
    CHECK_ALL_RANKS(counts.values(mp::collective::reduce_scatter) == on_c * b / r * d_h);
    CHECK_ALL_RANKS(counts.total(mp::collective::allreduce).calls == 0);
    CHECK_ALL_RANKS(y.value().local().size() == b / r * (d_h / c));
    CHECK(meshpp_test::max_abs_difference(
              mp::relayout<mp::layout<mp::split<batch, rows>>>(y.value()), mp::einsum<bh>(x0, w0)) <
          1e-12);

    // d/dw: the allgather of dy's slice over cols, then one allreduce of w's slice over rows
    m.counters().reset();
    const auto [dw] = mp::vjp(y, dy, w);
    CHECK_ALL_RANKS(counts.at(mp::collective::allgather, over_cols).calls == on_c);
    CHECK_ALL_RANKS(counts.values(mp::collective::allgather) == on_c * b / r * (d_h / c));
    CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, over_rows).calls == on_r);
    CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) ==
                    on_r * w0.local().size());  // io/cols
    CHECK_ALL_RANKS(counts.total(mp::collective::reduce_scatter).calls == 0);

    // d/dx: the same allgather; hidden, contracted, is whole in the natural layout: no sum
    m.counters().reset();
    const auto [dx] = mp::vjp(y, dy, x);
    CHECK_ALL_RANKS(counts.at(mp::collective::allgather, over_cols).calls == on_c);
    CHECK_ALL_RANKS(counts.total(mp::collective::allreduce).calls == 0);

    // the values: the einsums written by hand, with dy as the natural layout has it
    CHECK(meshpp_test::max_abs_difference(dw, mp::einsum<ih>(x0, dy0)) < 1e-12);
    CHECK(meshpp_test::max_abs_difference(dx, mp::einsum<bi>(dy0, w0)) < 1e-12);
  }
}

// Gradient buckets and deferred sums (autodiff/traced.hpp, comm/buckets.hpp): backward() sums
// every data-parallel gradient in one bucket, one allreduce call, and reading a grad() waits
// for it; the results are those of the einsums written by hand, however the gradients were
// bucketed, accumulated, cleared or abandoned while in flight.
namespace {
struct bucket_case {
  mesh_1d m{{world().size()}};
  mp::tensor_of<double, bi, mesh_1d> x0 = mp::random_normal<double, batch, io>(m, sizes, 1);
  mp::tensor_of<double, bh, mesh_1d> dy = mp::random_normal<double, batch, hidden>(m, sizes, 2);
  mp::tensor_of<double, bh, mesh_1d> dz = mp::random_normal<double, batch, hidden>(m, sizes, 3);
  mp::variable<mp::tensor_of<double, ih, mesh_1d>> w{
      mp::random_normal<double, io, hidden>(m, sizes, 4), "w"};
  mp::variable<mp::tensor_of<double, ih, mesh_1d>> u{
      mp::random_normal<double, io, hidden>(m, sizes, 5), "u"};
  mp::variable<mp::tensor_of<double, mp::shape<hidden>, mesh_1d>> bias{
      mp::random_normal<double, hidden>(m, sizes, 6), "bias"};

  // loss = sum((x w + bias) dy) + sum((x u) dz) + sum(w w): w's gradient is partial sums over
  // rows from the einsum and whole on every rank from w w
  auto loss() const {
    return mp::reduce_sum((mp::einsum<bh>(x0, w) + bias) * dy) +
           mp::reduce_sum(mp::einsum<bh>(x0, u) * dz) + mp::reduce_sum(w * w);
  }
  // check(times): each grad() is `times` the hand-written gradient
  void check(double times) const {
    CHECK(meshpp_test::max_abs_difference(
              *w.grad(), mp::eval((mp::einsum<ih>(x0, dy) + 2.0 * w.value()) * times)) < 1e-12);
    CHECK(meshpp_test::max_abs_difference(*u.grad(), mp::eval(mp::einsum<ih>(x0, dz) * times)) <
          1e-12);
    CHECK(meshpp_test::max_abs_difference(
              *bias.grad(), mp::eval(mp::reduce_sum_to<mp::shape<hidden>>(dy) * times)) < 1e-12);
  }
  std::uint64_t values() const {
    return w.value().local().size() + u.value().local().size() + bias.value().local().size();
  }
};
}  // namespace

TEST_CASE("backward sums every data-parallel gradient in one bucket: one allreduce call") {
  bucket_case t;
  CAPTURE(t.m.describe());
  const auto loss = t.loss();
  t.m.counters().reset();
  mp::backward(loss);
  const auto& counts = t.m.counters();  // a bucket is counted when it starts
  // a group of one rank counts nothing
  const std::uint64_t one = counts.group_of_one(mesh_1d::mask_v<rows>) ? 0 : 1;
  CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, mesh_1d::mask_v<rows>).calls == one);
  CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) == one * t.values());
  CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) == 0);
  t.check(1);  // reading grad() waits for the bucket
}

TEST_CASE("bucket_bytes = 0: every gradient its own allreduce, the same sums") {
  bucket_case t;
  const auto loss = t.loss();
  t.m.counters().reset();
  mp::backward(loss, {.bucket_bytes = 0});
  // a group of one rank counts nothing
  const std::uint64_t one = t.m.counters().group_of_one(mesh_1d::mask_v<rows>) ? 0 : 1;
  CHECK_ALL_RANKS(t.m.counters().total(mp::collective::allreduce).calls == one * 3);
  CHECK_ALL_RANKS(t.m.counters().values(mp::collective::allreduce) == one * t.values());
  t.check(1);
}

TEST_CASE("a second backward before the first's buckets are read adds up (in flight)") {
  bucket_case t;
  mp::backward(t.loss());
  mp::backward(t.loss(), {.bucket_bytes = 0});
  t.check(2);
}

TEST_CASE("zero_grad() while a bucket is in flight, then backward: one gradient's worth") {
  bucket_case t;
  mp::backward(t.loss());
  t.w.zero_grad();  // its bucket still sums u and bias
  CHECK(!t.w.grad().has_value());
  mp::backward(t.loss());
  CHECK(meshpp_test::max_abs_difference(*t.u.grad(), mp::eval(mp::einsum<ih>(t.x0, t.dz) * 2.0)) <
        1e-12);
  CHECK(meshpp_test::max_abs_difference(
            *t.w.grad(), mp::eval(mp::einsum<ih>(t.x0, t.dy) + 2.0 * t.w.value())) < 1e-12);
}

TEST_CASE("a variable that goes away while its bucket is in flight leaves the others' sums") {
  bucket_case t;
  {
    mp::variable extra(mp::random_normal<double, io, hidden>(t.m, sizes, 7), "extra");
    mp::backward(t.loss() + mp::reduce_sum(mp::einsum<bh>(t.x0, extra) * t.dy));
  }  // extra, and the graph, are gone; the bucket holding its gradient is not read yet
  t.check(1);
}

// Partial sums reaching a split tensor (autodiff/traced.hpp, scatter_partial): x [batch/rows,
// io] is gathered whole (relayout) and multiplied by w [io, hidden/rows]; d/dx contracts
// hidden, split over rows, so x's gradient arrives as partial sums over rows, which one
// reduce_scatter over rows completes into x's stripes (the adjoint of the forward's allgather:
// Megatron's sequence-parallel backward), b d_io values in, no allreduce. The batch of 5 is
// split unevenly at 2 and 4 ranks. Where the gradient arrives split over another mesh dim
// (batch:cols, x batch:rows), the stripes do not line up: it is allreduced over rows, then
// moved to x's layout.
TEST_CASE("partial sums into a split tensor: one reduce_scatter, the adjoint of its allgather") {
  using mesh_m = mp::mesh<mp::axes<rows>, mp::layout<mp::split<hidden, rows>>>;
  using split_batch = mp::layout<mp::split<batch, rows>>;
  constexpr std::size_t b5 = 5;
  const auto sizes5 = mp::extents{batch{} = b5, io{} = d_io, hidden{} = d_h};
  const mesh_m m({world().size()});
  CAPTURE(m.describe());
  const std::size_t p = static_cast<std::size_t>(world().size());
  if (d_h % p != 0) return;  // hidden 4 split evenly (1, 2, 4 ranks)
  const auto x0 = mp::relayout<split_batch>(mp::random_normal<double, batch, io>(m, sizes5, 1));
  const auto w0 = mp::random_normal<double, io, hidden>(m, sizes5, 2);  // [io, hidden/rows]
  const auto dy = mp::random_normal<double, batch, hidden>(m, sizes5, 3);
  const auto x = mp::trace(x0);
  const auto w = mp::trace(w0);
  const auto& counts = m.counters();
  const std::size_t one = p > 1 ? 1 : 0;  // a group of one rank counts nothing

  m.counters().reset();
  const auto y = mp::einsum<bh>(mp::relayout<mp::layout<>>(x), w);  // x allgathered
  CHECK_ALL_RANKS(counts.total(mp::collective::allgather).calls == one);
  m.counters().reset();
  const auto [dx] = mp::vjp(y, dy, x);
  CHECK_ALL_RANKS(counts.total(mp::collective::reduce_scatter).calls == one);
  CHECK_ALL_RANKS(counts.values(mp::collective::reduce_scatter) == one * b5 * d_io);
  CHECK_ALL_RANKS(counts.total(mp::collective::allreduce).calls == 0);
  CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) ==
                  counts.total(mp::collective::reduce_scatter).calls);
  CHECK_ALL_RANKS(dx.local().size() == x0.local().size());
  CHECK(meshpp_test::max_abs_difference(dx, mp::einsum<bi>(dy, w0)) < 1e-12);

  // the reduce_scatter's sums are the gradient, also when later contributions join them: a
  // second path from x to the loss, whole on every rank of its stripe
  const auto z =
      mp::reduce_sum(mp::einsum<bh>(mp::relayout<mp::layout<>>(x), w) * dy) + mp::reduce_sum(x * x);
  m.counters().reset();  // the forward's sums for the scalar z are not the gradient's
  const auto [dx2] = mp::gradients(z, x);
  CHECK_ALL_RANKS(counts.total(mp::collective::reduce_scatter).calls == one);
  CHECK_ALL_RANKS(counts.total(mp::collective::allreduce).calls == 0);
  CHECK(meshpp_test::max_abs_difference(dx2, mp::einsum<bi>(dy, w0) + 2.0 * x0) < 1e-12);
}

TEST_CASE("partial sums into a tensor split over another mesh dim: allreduced, then moved") {
  using mesh_rc = mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<hidden, rows>>>;
  const auto sizes4 = sizes;
  for (const auto& shape : shapes_2d(world().size())) {
    const mesh_rc m(shape);
    CAPTURE(m.describe());
    const auto x0 = mp::relayout<mp::layout<mp::split<batch, rows>>>(
        mp::random_normal<double, batch, io>(m, sizes4, 1));
    const auto w0 = mp::random_normal<double, io, hidden>(m, sizes4, 2);  // [io, hidden/rows]
    const auto dy = mp::random_normal<double, batch, hidden>(m, sizes4, 3);
    const auto dy_y = mp::relayout<mp::layout<mp::split<batch, cols>, mp::split<hidden, rows>>>(dy);
    const auto x = mp::trace(x0);
    const auto w = mp::trace(w0);
    // x moved to batch:cols: the gradient comes back partial over rows, split over cols
    const auto y = mp::einsum<bh>(mp::relayout<mp::layout<mp::split<batch, cols>>>(x), w);
    m.counters().reset();
    const auto [dx] = mp::vjp(y, dy_y, x);
    const auto& counts = m.counters();
    // a group of one rank counts nothing
    const std::uint64_t on_r = counts.group_of_one(mesh_rc::mask_v<rows>) ? 0 : 1;
    CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, mesh_rc::mask_v<rows>).calls == on_r);
    CHECK_ALL_RANKS(counts.total(mp::collective::reduce_scatter).calls == 0);
    CHECK(meshpp_test::max_abs_difference(dx, mp::einsum<bi>(dy, w0)) < 1e-12);
  }
}

// Partial sums over two mesh dims of which the receiving tensor splits one: x [batch/rows, io],
// gathered whole, times w [io, hidden/rows, ff/cols]; d/dx contracts hidden and ff, so it
// arrives partial over rows and cols: one reduce_scatter over rows into x's stripes, and the
// sum over cols left pending, completed by one allreduce over cols when x's gradient is read.
TEST_CASE("partial sums over two mesh dims: the split one reduce-scattered, the other pending") {
  using mesh_hf =
      mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<hidden, rows>, mp::split<ff, cols>>>;
  using bhf = mp::shape<batch, hidden, ff>;
  const auto sizes_hf = mp::extents{batch{} = b, io{} = d_io, hidden{} = d_h, ff{} = 4};
  for (const auto& shape : shapes_2d(world().size())) {
    const mesh_hf m(shape);
    CAPTURE(m.describe());
    const auto x0 = mp::relayout<mp::layout<mp::split<batch, rows>>>(
        mp::random_normal<double, batch, io>(m, sizes_hf, 1));
    const auto w0 = mp::random_normal<double, io, hidden, ff>(m, sizes_hf, 2);
    const auto dy = mp::random_normal<double, batch, hidden, ff>(m, sizes_hf, 3);
    const auto x = mp::trace(x0);
    const auto w = mp::trace(w0);
    const auto y = mp::einsum<bhf>(mp::relayout<mp::layout<>>(x), w);
    m.counters().reset();
    const auto [dx] = mp::vjp(y, dy, x);
    const auto& counts = m.counters();
    // a group of one rank counts nothing
    const std::uint64_t on_r = counts.group_of_one(mesh_hf::mask_v<rows>) ? 0 : 1;
    const std::uint64_t on_c = counts.group_of_one(mesh_hf::mask_v<cols>) ? 0 : 1;
    CHECK_ALL_RANKS(counts.at(mp::collective::reduce_scatter, mesh_hf::mask_v<rows>).calls == on_r);
    CHECK_ALL_RANKS(counts.values(mp::collective::reduce_scatter) == on_r * b * d_io);
    CHECK_ALL_RANKS(counts.at(mp::collective::allreduce, mesh_hf::mask_v<cols>).calls == on_c);
    CHECK_ALL_RANKS(counts.total(mp::collective::allreduce).calls == on_c);
    CHECK_ALL_RANKS(counts.values(mp::collective::allreduce) == on_c * x0.local().size());
    CHECK_ALL_RANKS(collectives_other_than_allreduce(counts) == on_r);
    CHECK(meshpp_test::max_abs_difference(dx, mp::einsum<bi>(dy, w0)) < 1e-12);
  }
}

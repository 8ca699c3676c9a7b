// einsum<Out, OutRules>(a, b): an output dim requested split over the mesh dim of a split
// contracted dim takes one reduce_scatter (half the bytes of an allreduce) instead of an
// allreduce and a slice; the result equals the single-rank reference, whatever the layout.
#include <meshpp/meshpp.hpp>

#include <cmath>

#include "testing.hpp"

namespace mp = meshpp;

namespace {
MESHPP_DIM(b);
MESHPP_DIM(h);
MESHPP_DIM(o);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

// y[b, o] = sum_h x[b, h] w[h, o], on whole arrays, without the mesh
template <class X, class W>
xt::xtensor<double, 2> reference(const X& x, const W& w) {
  xt::xtensor<double, 2> y({x.shape()[0], w.shape()[1]}, 0.0);
  for (std::size_t i = 0; i < x.shape()[0]; ++i)
    for (std::size_t k = 0; k < x.shape()[1]; ++k)
      for (std::size_t j = 0; j < w.shape()[1]; ++j) y(i, j) += x(i, k) * w(k, j);
  return y;
}

template <class A>
double max_diff(const A& got, const xt::xtensor<double, 2>& want) {
  double d = 0;
  for (std::size_t e = 0; e < want.size(); ++e)
    d = std::max(d, std::abs(got.data()[e] - want.data()[e]));
  return d;
}
}  // namespace

TEST_CASE("reduce_scatter replaces allreduce-then-slice, with half the bytes") {
  const int n = meshpp_test::world().size();
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<h, all>>>;
  mesh_t mesh({n});
  const auto sizes = mp::extents{b{} = 8, h{} = 16, o{} = 8};
  const auto x = mp::random_normal<double, b, h>(mesh, sizes, 1);
  const auto w = mp::random_normal<double, h, o>(mesh, sizes, 2);
  const auto want = reference(mp::gather(x), mp::gather(w));
  const std::uint64_t p = static_cast<std::uint64_t>(n);
  const std::uint64_t one = p > 1 ? 1 : 0;  // a group of one rank counts nothing

  // the plain way: allreduce of the whole [b, o], then a local slice
  mesh.counters().reset();
  const auto plain = mp::relayout<mp::layout<mp::split<o, all>>>(mp::einsum<mp::shape<b, o>>(x, w));
  const auto allreduce = mesh.counters().at(mp::collective::allreduce, mesh_t::mask_v<all>);
  CHECK(allreduce.calls == one);
  CHECK(allreduce.values == one * 64);
  CHECK(allreduce.bytes_sent == 2 * (p - 1) * 64 * sizeof(double) / p);

  // requested split: one reduce_scatter, nothing else
  for (int twice = 0; twice < 2; ++twice) {  // o (inner dim: blocks packed), then b (outermost)
    mesh.counters().reset();
    xt::xtensor<double, 2> scattered;
    mp::collective_count rs, gathers;
    auto run = [&](const auto& y) {  // the counters of the einsum alone, then the gather
      rs = mesh.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<all>);
      gathers = mesh.counters().total(mp::collective::allgather);
      scattered = mp::gather(y);
    };
    if (twice == 0)
      run(mp::einsum<mp::shape<b, o>, mp::layout<mp::split<o, all>>>(x, w));
    else
      run(mp::einsum<mp::shape<b, o>, mp::layout<mp::split<b, all>>>(x, w));
    CHECK(rs.calls == one);
    CHECK(rs.values == one * 64);
    CHECK(rs.bytes_sent == (p - 1) * 64 * sizeof(double) / p);
    CHECK(rs.bytes_sent * 2 == allreduce.bytes_sent);  // the bytes saved
    CHECK(mesh.counters().total(mp::collective::allreduce).calls == 0);
    CHECK(gathers.calls == 0);
    CHECK(mesh.counters().total(mp::collective::alltoall).calls == 0);
    CHECK_ALL_RANKS(max_diff(scattered, want) < 1e-12);
  }
  CHECK_ALL_RANKS(max_diff(mp::gather(plain), want) < 1e-12);
  using scattered_t = decltype(mp::einsum<mp::shape<b, o>, mp::layout<mp::split<o, all>>>(x, w));
  static_assert(std::is_same_v<scattered_t::layout_type, mp::layout<mp::split<o, all>>>);
}

TEST_CASE("only the mesh dims the output takes are scattered; the rest are allreduced") {
  const auto g = meshpp_test::grid2(meshpp_test::world().size());
  // h split over both mesh dims is impossible (one rule per dim): contract two dims instead
  MESHPP_DIM(h2);
  using mesh_t =
      mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<h, rows>, mp::split<h2, cols>>>;
  mesh_t mesh(g);
  const auto sizes = mp::extents{b{} = 4, h{} = 4, h2{} = 4, o{} = 8};
  const auto x = mp::random_normal<double, b, h, h2>(mesh, sizes, 3);
  const auto w = mp::random_normal<double, h, h2, o>(mesh, sizes, 4);
  mesh.counters().reset();
  const auto y = mp::einsum<mp::shape<b, o>, mp::layout<mp::split<o, rows>>>(x, w);
  // a group of one rank counts nothing
  const std::uint64_t over_rows = g[0] > 1 ? 1 : 0, over_cols = g[1] > 1 ? 1 : 0;
  CHECK(mesh.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<rows>).calls ==
        over_rows);
  CHECK(mesh.counters().at(mp::collective::allreduce, mesh_t::mask_v<cols>).calls == over_cols);
  CHECK(mesh.counters().total(mp::collective::allreduce).calls == over_cols);
  static_assert(std::is_same_v<decltype(y)::layout_type, mp::layout<mp::split<o, rows>>>);

  // reference: y[b, o] = sum over h, h2
  const auto gx = mp::gather(x);
  const auto gw = mp::gather(w);
  const auto gy = mp::gather(y);
  double d = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 8; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < 4; ++k)
        for (std::size_t l = 0; l < 4; ++l) s += gx(i, k, l) * gw(k, l, j);
      d = std::max(d, std::abs(s - gy(i, j)));
    }
  }
  CHECK_ALL_RANKS(d < 1e-12);
}

TEST_CASE("a requested split the sizes do not divide: one reduce_scatter of uneven blocks") {
  // o of 3n + 1 over n ranks: blocks of n + ... (the first one longer); the product is made
  // whole, then reduce-scattered with each block's count (docs/concepts.md, "Uneven splits")
  const int n = meshpp_test::world().size();
  using mesh_t = mp::mesh<mp::axes<all>, mp::layout<mp::split<h, all>>>;
  mesh_t mesh({n});
  const std::size_t no = 3 * static_cast<std::size_t>(n) + 1;
  const auto sizes = mp::extents{b{} = 8, h{} = 16, o{} = no};
  const auto x = mp::random_normal<double, b, h>(mesh, sizes, 1);
  const auto w = mp::random_normal<double, h, o>(mesh, sizes, 2);
  const auto gx = mp::gather(x);
  const auto gw = mp::gather(w);
  mesh.counters().reset();
  const auto y = mp::einsum<mp::shape<b, o>, mp::layout<mp::split<o, all>>>(x, w);
  const auto rs = mesh.counters().total(mp::collective::reduce_scatter);
  const std::size_t one = n > 1 ? 1 : 0;  // a group of one rank counts nothing
  CHECK_ALL_RANKS(rs.calls == one && rs.values == one * 8 * no);
  // bytes: the blocks this rank does not keep
  CHECK_ALL_RANKS(rs.bytes_sent == (8 * no - y.local().size()) * sizeof(double));
  CHECK_ALL_RANKS(mesh.counters().total(mp::collective::allreduce).calls == 0);
  const auto gy = mp::gather(y);
  double d = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t j = 0; j < no; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < 16; ++k) s += gx(i, k) * gw(k, j);
      d = std::max(d, std::abs(s - gy(i, j)));
    }
  }
  CHECK_ALL_RANKS(d < 1e-12);
}

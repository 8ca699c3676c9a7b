// take<vocab, OutRules>(table, ids): the lookup laid out by OutRules. A result dim requested
// split over vocab's mesh dim takes one reduce_scatter there instead of the allreduce and a
// slice; other differences from take<vocab>'s layout are relayouts. Checked on every mesh shape
// of the rank count, uneven splits included (3 ranks): the value bit for bit against a
// single-rank lookup in plain loops, the collectives, and the table's gradient (central
// differences; backward allgathers the gradient back to take<vocab>'s layout, the
// reduce_scatter's adjoint, and is otherwise take<vocab>'s backward).
#include <meshpp/ops/relayout.hpp>

#include <xtensor/xtensor.hpp>

#include "grad_embedding_check.hpp"

using namespace grad_embedding;

namespace {
using rules = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>>;
using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
using table_t = mp::tensor_of<double, mp::shape<vocab, d_model>, mesh_t>;
using ids_t = mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>;  // whole: no rule splits them

ids_t make_ids(const mesh_t& m) {
  return mp::generate<ids_t>(m, sizes,
                             [](const auto& g) { return static_cast<int>(id_value(g[0], g[1])); });
}

// out[b, s, d] = table[ids[b, s], d], from the gathered table and ids
xt::xtensor<double, 3> reference(const table_t& table, const ids_t& ids) {
  const auto t = mp::gather(table);
  const auto i = mp::gather(ids);
  xt::xtensor<double, 3> r = xt::xtensor<double, 3>::from_shape({B, S, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t d = 0; d < D; ++d) r(b, s, d) = t(static_cast<std::size_t>(i(b, s)), d);
  return r;
}

// calls(c, kind): the calls of that kind of collective, over any mesh dims
std::uint64_t calls(const mp::counters& c, mp::collective kind) { return c.total(kind).calls; }
}  // namespace

TEST_CASE("take<vocab, OutRules>: a result dim on vocab's mesh dim is reduce-scattered") {
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = mp::random_normal<table_t>(m, sizes, 1);
    const auto ids = make_ids(m);
    const auto want = reference(table, ids);
    const std::uint64_t natural_values = mp::take<vocab>(table, ids).local().size();
    const std::uint64_t p = static_cast<std::uint64_t>(shape[0]);

    // batch takes x, vocab's mesh dim; d_model stays on y: one reduce_scatter, nothing else
    using scattered = mp::layout<mp::split<batch, x>, mp::split<d_model, y>>;
    m.counters().reset();
    const auto a = mp::take<vocab, scattered>(table, ids);
    const auto rs = m.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<x>);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(a)>::layout_type, scattered>);
    CHECK(rs.calls == 1);
    CHECK(rs.values == natural_values);
    if (B % p == 0) CHECK(rs.bytes_sent == (p - 1) * natural_values * sizeof(double) / p);
    CHECK(calls(m.counters(), mp::collective::reduce_scatter) == 1);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
    CHECK(calls(m.counters(), mp::collective::allgather) == 0);
    CHECK(calls(m.counters(), mp::collective::alltoall) == 0);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        a.local(), meshpp_test::block(want, a.local_offsets(), a.local_shape())));

    // seq on x, d_model requested whole: the reduce_scatter, then d_model allgathered over y
    using seq_on_x = mp::layout<mp::split<seq, x>>;
    m.counters().reset();
    const auto b = mp::take<vocab, seq_on_x>(table, ids);
    CHECK(m.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<x>).calls == 1);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
    CHECK(calls(m.counters(), mp::collective::allgather) == 1);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        b.local(), meshpp_test::block(want, b.local_offsets(), b.local_shape())));

    // batch on z, a mesh dim nothing is summed over: the allreduce over x, then free slices
    using batch_on_z = mp::layout<mp::split<batch, z>, mp::split<d_model, y>>;
    m.counters().reset();
    const auto c = mp::take<vocab, batch_on_z>(table, ids);
    CHECK(m.counters().at(mp::collective::allreduce, mesh_t::mask_v<x>).calls == 1);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 1);
    CHECK(calls(m.counters(), mp::collective::reduce_scatter) == 0);
    CHECK(calls(m.counters(), mp::collective::allgather) == 0);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        c.local(), meshpp_test::block(want, c.local_offsets(), c.local_shape())));
  }
}

TEST_CASE("take<vocab, OutRules>: the table's gradient, through the reduce_scatter's adjoint") {
  using scattered = mp::layout<mp::split<batch, x>, mp::split<d_model, y>>;
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = mp::random_normal<table_t>(m, sizes, 1);
    const auto ids = make_ids(m);
    auto lookup = [&](const auto& t) { return mp::take<vocab, scattered>(t, ids); };

    const auto traced_table = mp::trace(table);
    const auto out = lookup(traced_table);
    check_value_and_gradient(table, out, lookup);

    // backward: the gradient allgathered over x into take<vocab>'s layout, then the local
    // scatter-add (ids whole: nothing to sum); the same gradient as take<vocab>'s
    using out_t = typename std::remove_cvref_t<decltype(out)>::tensor_type;
    const auto dy = mp::random_normal<out_t>(m, sizes, 2);
    m.counters().reset();
    const auto [grad] = mp::vjp(out, dy, traced_table);
    CAPTURE(m.counters().report());
    CHECK(m.counters().at(mp::collective::allgather, mesh_t::mask_v<x>).calls == 1);
    CHECK(calls(m.counters(), mp::collective::allgather) == 1);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
    CHECK(calls(m.counters(), mp::collective::reduce_scatter) == 0);
    const auto natural = mp::take<vocab>(traced_table, ids);
    using natural_t = typename std::remove_cvref_t<decltype(natural)>::tensor_type;
    const auto [want] =
        mp::vjp(natural, mp::relayout<typename natural_t::layout_type>(dy), traced_table);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(grad.local(), want.local()));
  }
}

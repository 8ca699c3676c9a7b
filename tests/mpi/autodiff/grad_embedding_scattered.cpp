// take<vocab, OutRules>(table, ids): the lookup laid out by OutRules. A result dim requested
// split over vocab's mesh dim takes one reduce_scatter there instead of the allreduce and a
// slice; other differences from take<vocab>'s layout are relayouts. Checked on every mesh shape
// of the rank count, uneven splits included (3 ranks): the value bit for bit against a
// single-rank lookup in plain loops, the collectives, and the table's gradient (central
// differences; backward allgathers the gradient back to take<vocab>'s layout, the
// reduce_scatter's adjoint, and is otherwise take<vocab>'s backward), for ids whole and ids
// split over another mesh dim than vocab's, for a traced table, a variable and the embedding
// layer's apply<OutRules>.
#include <meshpp/nn/embedding.hpp>
#include <meshpp/ops/relayout.hpp>

#include <string>

#include <xtensor/xtensor.hpp>

#include "grad_embedding_check.hpp"

using namespace grad_embedding;

namespace {
using rules = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>>;
using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
using table_t = mp::tensor_of<double, mp::shape<vocab, d_model>, mesh_t>;
using ids_t = mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>;  // whole: no rule splits them
// ids split over z, a mesh dim the table does not use: each group along x (vocab's mesh dim)
// still looks up the same ids
using ids_on_z_t = mp::tensor<int, mp::shape<batch, seq>, mp::layout<mp::split<batch, z>>, mesh_t>;

template <class Ids = ids_t>
Ids make_ids(const mesh_t& m) {
  return mp::generate<Ids>(m, sizes,
                           [](const auto& g) { return static_cast<int>(id_value(g[0], g[1])); });
}

// out[b, s, d] = table[ids[b, s], d], from the gathered table and ids
template <class Ids>
xt::xtensor<double, 3> reference(const table_t& table, const Ids& ids) {
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

// counts(m, mask): 1 where a collective over the mesh dims in mask counts, 0 where their group
// has one rank (a group of one rank counts nothing)
std::uint64_t counts(const mesh_t& m, unsigned mask) {
  return m.counters().group_of_one(mask) ? 0 : 1;
}

// check_only_reduce_scattered(m, out, want, natural_values): since the last reset, the counters
// hold exactly one reduce_scatter, over x (vocab's mesh dim), of the natural result's values,
// and no other collective; out is the plain lookup's block bit for bit
template <class Out>
void check_only_reduce_scattered(const mesh_t& m, const Out& out,
                                 const xt::xtensor<double, 3>& want, std::uint64_t natural_values) {
  const auto rs = m.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<x>);
  // a group of one rank counts nothing
  const std::uint64_t one = m.counters().group_of_one(mesh_t::mask_v<x>) ? 0 : 1;
  CHECK(rs.calls == one);
  CHECK(rs.values == one * natural_values);
  CHECK(calls(m.counters(), mp::collective::reduce_scatter) == one);
  CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
  CHECK(calls(m.counters(), mp::collective::allgather) == 0);
  CHECK(calls(m.counters(), mp::collective::alltoall) == 0);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      out.local(), meshpp_test::block(want, out.local_offsets(), out.local_shape())));
}

// backward_calls_are(c, gather_mask, reduce_mask): the counters hold one allgather, over the
// mesh dims in gather_mask, one allreduce over those in reduce_mask (none when 0), and no call
// of any other collective
bool backward_calls_are(const mp::counters& c, unsigned gather_mask, unsigned reduce_mask) {
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    const unsigned mask = kind == mp::collective::allreduce   ? reduce_mask
                          : kind == mp::collective::allgather ? gather_mask
                                                              : 0;
    // a group of one rank counts nothing
    if (mask == 0 || c.group_of_one(mask) ? calls(c, kind) != 0
                                          : calls(c, kind) != 1 || c.at(kind, mask).calls != 1)
      return false;
  }
  return true;
}

// check_backward<OutRules>(m, table, ids, gather_mask, reduce_mask): take<vocab, OutRules>
// of the traced table is the plain lookup bit for bit, laid out by OutRules; the table's
// gradient matches central differences (linear and through tanh); the backward pass is the
// allgather over gather_mask back to take<vocab>'s layout and take<vocab>'s allreduce over ids'
// mesh dims (reduce_mask), and gives take<vocab>'s gradient bit for bit
template <class OutRules, class Ids>
void check_backward(const mesh_t& m, const table_t& table, const Ids& ids, unsigned gather_mask,
                    unsigned reduce_mask) {
  const auto want = reference(table, ids);
  auto lookup = [&](const auto& t) { return mp::take<vocab, OutRules>(t, ids); };
  const auto traced_table = mp::trace(table);
  const auto out = lookup(traced_table);
  using out_t = typename std::remove_cvref_t<decltype(out)>::tensor_type;
  static_assert(std::is_same_v<typename out_t::layout_type,
                               mp::layout_for_t<OutRules, typename out_t::shape_type>>);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      out.value().local(),
      meshpp_test::block(want, out.value().local_offsets(), out.value().local_shape())));
  check_value_and_gradient(table, out, lookup);

  const auto dy = mp::random_normal<out_t>(m, sizes, 2);
  m.counters().reset();
  const auto [grad] = mp::vjp(out, dy, traced_table);
  CAPTURE(m.counters().report());
  CHECK_ALL_RANKS(backward_calls_are(m.counters(), gather_mask, reduce_mask));
  const auto natural = mp::take<vocab>(traced_table, ids);
  using natural_t = typename std::remove_cvref_t<decltype(natural)>::tensor_type;
  const auto [natural_grad] =
      mp::vjp(natural, mp::relayout<typename natural_t::layout_type>(dy), traced_table);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(grad.local(), natural_grad.local()));
}

// check_variable_and_layer<OutRules>(m, ids): take<vocab, OutRules> of a variable, and the
// embedding layer's apply<OutRules>, are the plain lookup bit for bit, and backward(loss) leaves
// their tables the gradient of take<vocab>(trace(table), ids) (within 1e-12: the variable's
// allreduce, if any, runs in a bucket; bit for bit when ids are whole)
template <class OutRules, class Ids>
void check_variable_and_layer(const mesh_t& m, const Ids& ids) {
  auto natural_grad = [&](const table_t& value) {
    const auto traced_table = mp::trace(value);
    const auto [g] = mp::gradients(weighted_sum(mp::take<vocab>(traced_table, ids)), traced_table);
    return g;
  };
  auto check_lookup_of = [&](auto& var, const auto& out, const std::string& what) {
    CAPTURE(what);
    using out_t = typename std::remove_cvref_t<decltype(out)>::tensor_type;
    static_assert(std::is_same_v<typename out_t::layout_type,
                                 mp::layout_for_t<OutRules, typename out_t::shape_type>>);
    const auto want = reference(var.value(), ids);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        out.value().local(),
        meshpp_test::block(want, out.value().local_offsets(), out.value().local_shape())));
    const auto want_grad = natural_grad(var.value());
    mp::backward(weighted_sum(out));
    CHECK_ALL_RANKS(var.grad().has_value());
    if (!var.grad()) return;  // the same on every rank
    CHECK(meshpp_test::max_abs_difference(*var.grad(), want_grad) < 1e-12);
    // ids whole: nothing is summed across ranks, and the rows add up in the same order
    if constexpr (std::is_same_v<Ids, ids_t>)
      CHECK_ALL_RANKS(meshpp_test::bit_equal(var.grad()->local(), want_grad.local()));
  };

  mp::variable table(mp::random_normal<table_t>(m, sizes, 1), "table");
  check_lookup_of(table, mp::take<vocab, OutRules>(table, ids), "variable");

  mp::embedding<double, vocab, mp::shape<d_model>, mesh_t> embed(m, sizes, 3, "embed");
  static_assert(std::is_same_v<decltype(embed)::table_type, table_t>);
  check_lookup_of(embed.table(), embed.apply<OutRules>(ids), "embedding::apply");
  // the layer's call is take<vocab>: traced, in take<vocab>'s layout, the plain lookup's value
  const auto plain = embed(ids);
  static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(plain)>::tensor_type,
                               decltype(mp::take<vocab>(embed.table().value(), ids))>);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(plain.value().local(),
                                         mp::take<vocab>(embed.table().value(), ids).local()));
}
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
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(a)>::layout_type, scattered>);
    check_only_reduce_scattered(m, a, want, natural_values);
    const auto rs = m.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<x>);
    if (B % p == 0) CHECK(rs.bytes_sent == (p - 1) * natural_values * sizeof(double) / p);

    // seq on x, d_model requested whole: the reduce_scatter, then d_model allgathered over y
    using seq_on_x = mp::layout<mp::split<seq, x>>;
    m.counters().reset();
    const auto b = mp::take<vocab, seq_on_x>(table, ids);
    const std::uint64_t on_x = counts(m, mesh_t::mask_v<x>), on_y = counts(m, mesh_t::mask_v<y>);
    CHECK(m.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<x>).calls == on_x);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
    CHECK(calls(m.counters(), mp::collective::allgather) == on_y);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        b.local(), meshpp_test::block(want, b.local_offsets(), b.local_shape())));

    // batch on z, a mesh dim nothing is summed over: the allreduce over x, then free slices
    using batch_on_z = mp::layout<mp::split<batch, z>, mp::split<d_model, y>>;
    m.counters().reset();
    const auto c = mp::take<vocab, batch_on_z>(table, ids);
    CHECK(m.counters().at(mp::collective::allreduce, mesh_t::mask_v<x>).calls == on_x);
    CHECK(calls(m.counters(), mp::collective::allreduce) == on_x);
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
    const std::uint64_t on_x = counts(m, mesh_t::mask_v<x>);
    CHECK(m.counters().at(mp::collective::allgather, mesh_t::mask_v<x>).calls == on_x);
    CHECK(calls(m.counters(), mp::collective::allgather) == on_x);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
    CHECK(calls(m.counters(), mp::collective::reduce_scatter) == 0);
    const auto natural = mp::take<vocab>(traced_table, ids);
    using natural_t = typename std::remove_cvref_t<decltype(natural)>::tensor_type;
    const auto [want] =
        mp::vjp(natural, mp::relayout<typename natural_t::layout_type>(dy), traced_table);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(grad.local(), want.local()));
  }
}

TEST_CASE("take<vocab, OutRules>: ids split over z, seq requested on vocab's mesh dim x") {
  // ids split batch over z, the table vocab over x: the result's seq requested on x is still
  // one reduce_scatter over x (the ranks of an x group hold the same ids), nothing else; its
  // backward allgathers over x and allreduces the table's slice over z, ids' mesh dim
  using seq_on_x = mp::layout<mp::split<batch, z>, mp::split<seq, x>, mp::split<d_model, y>>;
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = mp::random_normal<table_t>(m, sizes, 1);
    const auto ids = make_ids<ids_on_z_t>(m);
    const auto want = reference(table, ids);
    const std::uint64_t natural_values = mp::take<vocab>(table, ids).local().size();

    m.counters().reset();
    const auto a = mp::take<vocab, seq_on_x>(table, ids);
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(a)>::layout_type, seq_on_x>);
    check_only_reduce_scattered(m, a, want, natural_values);

    // seq on x and the rest whole: the reduce_scatter, then batch gathered over z and d_model
    // over y (relayout.hpp: one allgather a mesh dim)
    using only_seq_on_x = mp::layout<mp::split<seq, x>>;
    m.counters().reset();
    const auto b = mp::take<vocab, only_seq_on_x>(table, ids);
    const std::uint64_t on_x = counts(m, mesh_t::mask_v<x>), on_y = counts(m, mesh_t::mask_v<y>),
                        on_z = counts(m, mesh_t::mask_v<z>);
    CHECK(m.counters().at(mp::collective::reduce_scatter, mesh_t::mask_v<x>).calls == on_x);
    CHECK(calls(m.counters(), mp::collective::reduce_scatter) == on_x);
    CHECK(calls(m.counters(), mp::collective::allreduce) == 0);
    CHECK(m.counters().at(mp::collective::allgather, mesh_t::mask_v<z>).calls == on_z);
    CHECK(m.counters().at(mp::collective::allgather, mesh_t::mask_v<y>).calls == on_y);
    CHECK(calls(m.counters(), mp::collective::allgather) == on_z + on_y);
    CHECK(calls(m.counters(), mp::collective::alltoall) == 0);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        b.local(), meshpp_test::block(want, b.local_offsets(), b.local_shape())));

    // the table's gradient: the allgather over x, then take<vocab>'s allreduce over z
    check_backward<seq_on_x>(m, table, ids, mesh_t::mask_v<x>, mesh_t::mask_v<z>);
  }
}

TEST_CASE("take<vocab, OutRules>: the table's gradient where the result is gathered or sliced") {
  // the first case's other two layouts, ids whole: seq on x with d_model whole (backward: a free
  // slice of d_model onto y, then seq allgathered over x), batch on z (backward: batch
  // allgathered over z); no allreduce (ids whole): central differences and take<vocab>'s
  // gradient
  using seq_on_x = mp::layout<mp::split<seq, x>>;
  using batch_on_z = mp::layout<mp::split<batch, z>, mp::split<d_model, y>>;
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = mp::random_normal<table_t>(m, sizes, 1);
    const auto ids = make_ids(m);
    check_backward<seq_on_x>(m, table, ids, mesh_t::mask_v<x>, 0);
    check_backward<batch_on_z>(m, table, ids, mesh_t::mask_v<z>, 0);
  }
}

TEST_CASE("take<vocab, OutRules> of a variable, and embedding::apply<OutRules>") {
  // the reduce-scattered layout with ids whole, and seq on x with ids split over z (its
  // gradient summed over z in backward's bucket)
  using scattered = mp::layout<mp::split<batch, x>, mp::split<d_model, y>>;
  using seq_on_x = mp::layout<mp::split<batch, z>, mp::split<seq, x>, mp::split<d_model, y>>;
  for (const auto& shape : meshpp_test::mesh_shapes<3>(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    check_variable_and_layer<scattered>(m, make_ids(m));
    check_variable_and_layer<seq_on_x>(m, make_ids<ids_on_z_t>(m));
  }
}

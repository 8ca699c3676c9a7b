// gather<Dim>(table, ids) and one_hot<Dim>(ids, sizes): every result against a single-rank
// reference computed in plain loops without a mesh, on every 3-d mesh shape the rank count
// allows, under layouts that split vocab, d_model and the ids' dims over distinct mesh dims;
// what they communicate (one allreduce over vocab's mesh dim, or nothing); that they agree
// with einsum over a one-hot tensor (and give the table's dense gradient that way); and that
// bad ids fail on every rank, also when only some ranks hold them.
#include <meshpp/comm/counters.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/expr/functions.hpp>
#include <meshpp/ops/einsum.hpp>
#include <meshpp/ops/embedding.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/mpi/collectives/all_reduce.hpp>
#include <xtensor/xtensor.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);

namespace {
constexpr std::size_t B = 4, S = 4, V = 8, D = 4;
const auto sizes = mp::extents{batch{} = B, seq{} = S, vocab{} = V, d_model{} = D};

// The inputs, as functions of the global index (exact in every value type used).
double table_value(std::size_t v, std::size_t d) { return double(v * 16 + d) + 0.25; }
double batched_table_value(std::size_t b, std::size_t v, std::size_t d) {
  return double(b * 1000 + v * 16 + d) + 0.5;
}
std::size_t id_value(std::size_t b, std::size_t s) { return (b * 5 + s * 3) % V; }  // every row

// Every mesh shape [x, y, z] of n ranks.
std::vector<std::array<int, 3>> mesh_shapes(int n) { return meshpp_test::mesh_shapes<3>(n); }

// The reference lookup: out[b, s, d] = table[ids[b, s], d]
template <class T>
xt::xtensor<T, 3> reference_lookup() {
  xt::xtensor<T, 3> r = xt::xtensor<T, 3>::from_shape({B, S, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t d = 0; d < D; ++d)
        r(b, s, d) = static_cast<T>(table_value(id_value(b, s), d));
  return r;
}

// make_table<Table>(m): table[vocab, d_model] or table[d_model, vocab], by name
template <class Table, class Mesh>
Table make_table(const Mesh& m) {
  using TS = typename Table::shape_type;
  return mp::generate<Table>(m, sizes, [](const auto& g) {
    return table_value(g[mp::index_of_v<TS, vocab>], g[mp::index_of_v<TS, d_model>]);
  });
}
template <class Ids, class Mesh>
Ids make_ids(const Mesh& m) {
  return mp::generate<Ids>(m, sizes, [](const auto& g) { return id_value(g[0], g[1]); });
}

// The layouts tried: rules over the mesh axes<x, y, z>.
using replicated = mp::layout<>;
using vocab_split = mp::layout<mp::split<vocab, x>>;
using vocab_and_d_model_split = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>>;
using vocab_and_batch_split = mp::layout<mp::split<vocab, x>, mp::split<batch, y>>;
using all_three_split = mp::layout<mp::split<vocab, x>, mp::split<d_model, y>, mp::split<batch, z>>;
using vocab_on_z_seq_on_x = mp::layout<mp::split<vocab, z>, mp::split<seq, x>>;
using vocab_whole_ids_split = mp::layout<mp::split<d_model, y>, mp::split<batch, z>>;
using vocab_whole_ids_split_twice =
    mp::layout<mp::split<batch, x>, mp::split<seq, y>, mp::split<d_model, z>>;

// What the mesh recorded is exactly one allreduce over vocab's mesh dim, of `values` values
// (no collective at all when vocab is whole).
template <class Rules, class Mesh>
bool recorded_lookup(const Mesh& m, std::size_t values) {
  const auto& c = m.counters();
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    const auto kind = static_cast<mp::collective>(k);
    std::uint64_t calls = 0;
    if constexpr (mp::is_split_in_v<Rules, vocab>) {
      if (kind == mp::collective::allreduce) {
        constexpr unsigned mask = Mesh::template mask_v<mp::mesh_dim_of_t<Rules, vocab>>;
        const auto& one = c.at(kind, mask);
        if (one.calls != 1 || one.values != values) return false;
        calls = 1;
      }
    }
    if (c.total(kind).calls != calls) return false;
  }
  return true;
}
bool recorded_nothing(const mp::counters& c) {
  for (std::size_t k = 0; k < mp::collective_kinds; ++k) {
    if (c.total(static_cast<mp::collective>(k)).calls != 0) return false;
  }
  return true;
}

// Every rank is still in step: a sum over the world sees every rank once.
bool ranks_in_step() {
  const int n = world().size();
  int sum = 0;
  boost::mpi::all_reduce(world(), world().rank() + 1, sum, std::plus<int>());
  return sum == n * (n + 1) / 2;
}

// gather<vocab>(table, ids) under Rules on every mesh shape: values, layout, counters.
template <class Rules, class T = float, class Id = int,
          class TableShape = mp::shape<vocab, d_model>>
void check_lookup() {
  using mesh_t = mp::mesh<mp::axes<x, y, z>, Rules>;
  const auto want = reference_lookup<T>();
  for (const auto& shape : mesh_shapes(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = make_table<mp::tensor_of<T, TableShape, mesh_t>>(m);
    const auto ids = make_ids<mp::tensor_of<Id, mp::shape<batch, seq>, mesh_t>>(m);
    m.counters().reset();
    const auto out = mp::gather<vocab>(table, ids);
    using out_t = std::remove_cvref_t<decltype(out)>;
    static_assert(std::is_same_v<out_t, mp::tensor_of<T, mp::shape<batch, seq, d_model>, mesh_t>>);
    CAPTURE(out.describe());
    CHECK_ALL_RANKS(recorded_lookup<Rules>(m, out.local().size()));
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        out.local(), meshpp_test::block(want, out.local_offsets(), out.local_shape())));
  }
}

// An ids tensor on Mesh, laid out by IdsLayout, whose id at [bad_b, bad_s] is `bad` (the
// others are good): only the ranks holding that index see the bad id.
template <class Id, class IdsLayout, class Mesh>
auto ids_with_one_bad(const Mesh& m, std::size_t bad_b, std::size_t bad_s, Id bad) {
  using ids_t = mp::tensor<Id, mp::shape<batch, seq>, IdsLayout, Mesh>;
  return mp::generate<ids_t>(m, sizes, [=](const auto& g) {
    return g[0] == bad_b && g[1] == bad_s ? bad : static_cast<Id>(id_value(g[0], g[1]));
  });
}
template <class Ids>
bool holds(const Ids& ids, std::size_t b, std::size_t s) {
  const auto& off = ids.local_offsets();
  const auto shape = ids.local_shape();
  return b >= off[0] && b < off[0] + shape[0] && s >= off[1] && s < off[1] + shape[1];
}
// f() throws meshpp::error on every rank: the ranks holding the bad id with its message,
// the others naming the rank that found it (or, for replicated ids, every rank with it).
template <class Ids, class F>
bool fails_together(const Ids& ids, std::size_t b, std::size_t s, std::string_view message, F&& f) {
  if (holds(ids, b, s) || std::is_same_v<typename Ids::layout_type, mp::layout<>>) {
    return meshpp_test::throws_with<mp::error>(f, {message});
  }
  return meshpp_test::throws_with<mp::error>(f, {"found bad input"});
}
}  // namespace

TEST_CASE("gather<vocab>(table, ids) looks up rows under every layout and mesh shape") {
  SUBCASE("replicated") { check_lookup<replicated>(); }
  SUBCASE("vocab split") { check_lookup<vocab_split>(); }
  SUBCASE("vocab and d_model split") { check_lookup<vocab_and_d_model_split>(); }
  SUBCASE("vocab split, ids split over batch") { check_lookup<vocab_and_batch_split>(); }
  SUBCASE("vocab, d_model and batch split") { check_lookup<all_three_split>(); }
  SUBCASE("vocab on z, ids split over seq") { check_lookup<vocab_on_z_seq_on_x>(); }
  SUBCASE("vocab whole, ids split") { check_lookup<vocab_whole_ids_split>(); }
  SUBCASE("vocab whole, ids split twice") { check_lookup<vocab_whole_ids_split_twice>(); }
}

TEST_CASE("gather: the table stored [d_model, vocab], other value and id types") {
  using transposed = mp::shape<d_model, vocab>;
  check_lookup<all_three_split, float, int, transposed>();
  check_lookup<vocab_and_d_model_split, double, int, transposed>();
  check_lookup<vocab_whole_ids_split_twice, float, int, transposed>();
  check_lookup<all_three_split, double, std::int64_t>();
  check_lookup<all_three_split, int, unsigned>();
  check_lookup<vocab_and_batch_split, std::int64_t, std::uint8_t>();
  check_lookup<vocab_split, float, short>();
}

TEST_CASE("gather: a table per batch entry, batch split in both, one, or neither operand") {
  // table[batch, vocab, d_model], ids[batch, seq]: out[b, s, :] = table[b, ids[b, s], :]
  using rules = mp::layout<mp::split<batch, x>, mp::split<vocab, y>, mp::split<d_model, z>>;
  using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
  xt::xtensor<float, 3> want = xt::xtensor<float, 3>::from_shape({B, S, D});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t s = 0; s < S; ++s)
      for (std::size_t d = 0; d < D; ++d)
        want(b, s, d) = static_cast<float>(batched_table_value(b, id_value(b, s), d));
  auto table_fn = [](const auto& g) { return batched_table_value(g[0], g[1], g[2]); };
  using table_shape = mp::shape<batch, vocab, d_model>;
  using ids_shape = mp::shape<batch, seq>;
  using table_split = mp::tensor_of<float, table_shape, mesh_t>;
  using table_whole_batch =
      mp::tensor<float, table_shape, mp::layout<mp::split<vocab, y>, mp::split<d_model, z>>,
                 mesh_t>;
  using ids_split = mp::tensor_of<int, ids_shape, mesh_t>;
  using ids_whole = mp::tensor<int, ids_shape, mp::layout<>, mesh_t>;
  using out_t = mp::tensor_of<float, mp::shape<batch, seq, d_model>, mesh_t>;

  for (const auto& shape : mesh_shapes(world().size())) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    auto check = [&](const auto& table, const auto& ids) {
      m.counters().reset();
      const auto out = mp::gather<vocab>(table, ids);
      static_assert(std::is_same_v<std::remove_cvref_t<decltype(out)>, out_t>);
      CHECK_ALL_RANKS(recorded_lookup<rules>(m, out.local().size()));
      CHECK_ALL_RANKS(meshpp_test::bit_equal(
          out.local(), meshpp_test::block(want, out.local_offsets(), out.local_shape())));
    };
    const auto t_split = mp::generate<table_split>(m, sizes, table_fn);
    const auto t_whole = mp::generate<table_whole_batch>(m, sizes, table_fn);
    const auto i_split = make_ids<ids_split>(m);
    const auto i_whole = make_ids<ids_whole>(m);
    check(t_split, i_split);
    check(t_split, i_whole);  // ids read at this rank's batch stripe
    check(t_whole, i_split);  // the table read at this rank's batch stripe
  }
}

TEST_CASE("gather: expressions as table and ids") {
  using mesh_t = mp::mesh<mp::axes<x, y, z>, all_three_split>;
  const auto want = reference_lookup<float>();
  for (const auto& shape : mesh_shapes(world().size())) {
    const mesh_t m(shape);
    const auto table = make_table<mp::tensor_of<float, mp::shape<vocab, d_model>, mesh_t>>(m);
    const auto ids = make_ids<mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>>(m);
    const auto out = mp::gather<vocab>(table * 2.0f, ids + 1 - 1);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        out.local(), xt::xtensor<float, 3>(
                         2.0f * meshpp_test::block(want, out.local_offsets(), out.local_shape()))));
  }
}

TEST_CASE("one_hot<vocab>(ids, sizes) fills each rank's stripe and communicates nothing") {
  auto run = [](auto rules_tag, auto value_tag) {
    using rules = decltype(rules_tag);
    using T = decltype(value_tag);
    using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
    for (const auto& shape : mesh_shapes(world().size())) {
      const mesh_t m(shape);
      CAPTURE(m.describe());
      const auto ids = make_ids<mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>>(m);
      // replicated ids: each rank reads its stripe of batch and seq
      const auto ids_whole =
          make_ids<mp::tensor<int, mp::shape<batch, seq>, mp::layout<>, mesh_t>>(m);
      xt::xtensor<T, 3> want = xt::xtensor<T, 3>::from_shape({B, S, V});
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t s = 0; s < S; ++s)
          for (std::size_t v = 0; v < V; ++v) want(b, s, v) = id_value(b, s) == v ? T(1) : T(0);
      auto check = [&](const auto& from) {
        m.counters().reset();
        const auto h = mp::one_hot<vocab, T>(from, sizes);
        static_assert(std::is_same_v<std::remove_cvref_t<decltype(h)>,
                                     mp::tensor_of<T, mp::shape<batch, seq, vocab>, mesh_t>>);
        CHECK_ALL_RANKS(recorded_nothing(m.counters()));
        CHECK_ALL_RANKS(meshpp_test::bit_equal(
            h.local(), meshpp_test::block(want, h.local_offsets(), h.local_shape())));
      };
      check(ids);
      check(ids_whole);
    }
  };
  run(replicated{}, float{});
  run(vocab_split{}, float{});
  run(all_three_split{}, double{});
  run(vocab_on_z_seq_on_x{}, int{});
  run(vocab_whole_ids_split_twice{}, float{});
  // the default value type is float
  using mesh_t = mp::mesh<mp::axes<x, y, z>, vocab_split>;
  const mesh_t m(mesh_shapes(world().size()).front());
  const auto ids = make_ids<mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>>(m);
  static_assert(std::is_same_v<decltype(mp::one_hot<vocab>(ids, sizes))::value_type, float>);
}

TEST_CASE("gather equals einsum over one_hot, and einsum over one_hot is the dense gradient") {
  auto run = [](auto rules_tag) {
    using rules = decltype(rules_tag);
    using mesh_t = mp::mesh<mp::axes<x, y, z>, rules>;
    // dy[b, s, d]; the table's gradient is grad[v, d] = sum of dy[b, s, d] over ids[b, s] == v
    auto dy_value = [](std::size_t b, std::size_t s, std::size_t d) {
      return double(b * 100 + s * 10 + d) * 0.125;
    };
    xt::xtensor<double, 2> grad = xt::zeros<double>({V, D});
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t s = 0; s < S; ++s)
        for (std::size_t d = 0; d < D; ++d) grad(id_value(b, s), d) += dy_value(b, s, d);
    for (const auto& shape : mesh_shapes(world().size())) {
      const mesh_t m(shape);
      CAPTURE(m.describe());
      const auto table = make_table<mp::tensor_of<double, mp::shape<vocab, d_model>, mesh_t>>(m);
      const auto ids = make_ids<mp::tensor_of<int, mp::shape<batch, seq>, mesh_t>>(m);
      const auto h = mp::one_hot<vocab, double>(ids, sizes);
      const auto looked_up = mp::gather<vocab>(table, ids);
      const auto via_einsum = mp::einsum<mp::shape<batch, seq, d_model>>(h, table);
      CHECK_ALL_RANKS(meshpp_test::bit_equal(looked_up.local(), via_einsum.local()));
      const auto dy = mp::generate<double, batch, seq, d_model>(
          m, sizes, [&](const auto& g) { return dy_value(g[0], g[1], g[2]); });
      const auto g = mp::einsum<mp::shape<vocab, d_model>>(h, dy);
      CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(g), grad));
    }
  };
  run(replicated{});
  run(vocab_split{});
  run(all_three_split{});
  run(vocab_whole_ids_split_twice{});
}

namespace {
// Bad ids under Rules, the ids laid out by IdsLayout: too large at [3, 1], and negative at
// [0, 2] for signed ids; only the ranks holding that index see the bad id.
template <class Rules, class IdsLayout, class Id>
void bad_ids_fail_together(const std::vector<std::array<int, 3>>& shapes) {
  using mesh_t = mp::mesh<mp::axes<x, y, z>, Rules>;
  for (const auto& shape : shapes) {
    const mesh_t m(shape);
    CAPTURE(m.describe());
    const auto table = make_table<mp::tensor_of<float, mp::shape<vocab, d_model>, mesh_t>>(m);
    // too large, at [3, 1]
    const auto high = ids_with_one_bad<Id, IdsLayout>(m, 3, 1, Id(V));
    CHECK_ALL_RANKS(fails_together(
        high, 3, 1,
        "meshpp::gather<vocab>(table, ids): id 8 at ids[batch:3, seq:1] is outside [0, 8), "
        "the range of dim 'vocab'",
        [&] { (void)mp::gather<vocab>(table, high); }));
    CHECK_ALL_RANKS(fails_together(
        high, 3, 1, "meshpp::one_hot<vocab>(ids, sizes): id 8 at ids[batch:3, seq:1]",
        [&] { (void)mp::one_hot<vocab>(high, sizes); }));
    if constexpr (std::is_signed_v<Id>) {  // negative, at [0, 2]
      const auto low = ids_with_one_bad<Id, IdsLayout>(m, 0, 2, Id(-1));
      CHECK_ALL_RANKS(fails_together(low, 0, 2, "id -1 at ids[batch:0, seq:2] is outside",
                                     [&] { (void)mp::gather<vocab>(table, low); }));
      CHECK_ALL_RANKS(fails_together(low, 0, 2, "id -1 at ids[batch:0, seq:2] is outside",
                                     [&] { (void)mp::one_hot<vocab>(low, sizes); }));
    }
    CHECK(ranks_in_step());
  }
}
}  // namespace

TEST_CASE("bad ids throw meshpp::error on every rank, also when only some ranks hold them") {
  const auto shapes = mesh_shapes(world().size());
  // ids laid out by the rules (split) or replicated; one_hot needs the former to be the
  // rules restricted (its result is laid out by them)
  auto run = [&]<class Rules, class Id>(Rules, bool replicated_ids, Id) {
    if (replicated_ids)
      bad_ids_fail_together<Rules, mp::layout<>, Id>(shapes);
    else
      bad_ids_fail_together<Rules, mp::layout_for_t<Rules, mp::shape<batch, seq>>, Id>(shapes);
  };
  using all_split = mp::layout<mp::split<vocab, x>, mp::split<batch, y>, mp::split<seq, z>>;
  using ids_split_vocab_whole = mp::layout<mp::split<batch, y>, mp::split<seq, z>>;
  run(all_split{}, true, int{});
  run(all_split{}, false, int{});
  run(vocab_and_batch_split{}, false, std::int64_t{});
  run(vocab_and_batch_split{}, true, short{});
  run(ids_split_vocab_whole{}, false, int{});  // no allreduce to protect: still fail together
  run(ids_split_vocab_whole{}, false, unsigned{});
  run(vocab_split{}, true, int{});
}

TEST_CASE("gather: table and ids disagreeing on a shared dim's size throw on every rank") {
  using mesh_t = mp::mesh<mp::axes<x, y, z>, mp::layout<mp::split<vocab, x>>>;
  const mesh_t m(mesh_shapes(world().size()).front());
  const auto table = mp::zeros<float, batch, vocab, d_model>(
      m, mp::extents{batch{} = 2, vocab{} = V, d_model{} = D});
  const auto ids = mp::zeros<int, batch, seq>(m, sizes);
  CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
      [&] { (void)mp::gather<vocab>(table, ids); },
      {"meshpp::gather<vocab>(table, ids): table and ids disagree on the size of dim 'batch': 2 "
       "and 4"}));
  CHECK(ranks_in_step());
}

// one_hot, gather against einsum over one_hot, and bad ids failing together (see
// embedding.cpp for the lookups).
#include "embedding_fixture.hpp"

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
      const auto looked_up = mp::take<vocab>(table, ids);
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
        "meshpp::take<vocab>(table, ids): id 8 at ids[batch:3, seq:1] is outside [0, 8), "
        "the range of dim 'vocab'",
        [&] { (void)mp::take<vocab>(table, high); }));
    CHECK_ALL_RANKS(fails_together(
        high, 3, 1, "meshpp::one_hot<vocab>(ids, sizes): id 8 at ids[batch:3, seq:1]",
        [&] { (void)mp::one_hot<vocab>(high, sizes); }));
    if constexpr (std::is_signed_v<Id>) {  // negative, at [0, 2]
      const auto low = ids_with_one_bad<Id, IdsLayout>(m, 0, 2, Id(-1));
      CHECK_ALL_RANKS(fails_together(low, 0, 2, "id -1 at ids[batch:0, seq:2] is outside",
                                     [&] { (void)mp::take<vocab>(table, low); }));
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
      [&] { (void)mp::take<vocab>(table, ids); },
      {"meshpp::take<vocab>(table, ids): table and ids disagree on the size of dim 'batch': 2 "
       "and 4"}));
  CHECK(ranks_in_step());
}

// take<Dim>(table, ids) and one_hot<Dim>(ids, sizes): every result against a single-rank
// reference computed in plain loops without a mesh, on every 3-d mesh shape the rank count
// allows, under layouts that split vocab, d_model and the ids' dims over distinct mesh dims;
// what they communicate (one allreduce over vocab's mesh dim, or nothing); that they agree
// with einsum over a one-hot tensor (and give the table's dense gradient that way); and that
// bad ids fail on every rank, also when only some ranks hold them.
#include "embedding_fixture.hpp"

TEST_CASE("take<vocab>(table, ids) looks up rows under every layout and mesh shape") {
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
      const auto out = mp::take<vocab>(table, ids);
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
    const auto out = mp::take<vocab>(table * 2.0f, ids + 1 - 1);
    CHECK_ALL_RANKS(meshpp_test::bit_equal(
        out.local(), xt::xtensor<float, 3>(
                         2.0f * meshpp_test::block(want, out.local_offsets(), out.local_shape()))));
  }
}

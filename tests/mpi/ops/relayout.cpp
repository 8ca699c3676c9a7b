// relayout (1 of 3): from the replicated layout to each of the 13 layouts of [x, y, z] on the
// mesh [r, c] (relayout_check.hpp says what is checked for every pair); the six cycles, where
// two dims trade mesh dims, spelled out as their exact sequence; and a chain of relayouts of
// an int tensor that comes back to where it started.
//
// Meshes are grid2(n), [1, n] and [n, 1] for n ranks, so the file runs at 1, 2 and 4 ranks;
// the 2x2 mesh (two ranks on each mesh dim) needs 4.
#include <cstdint>
#include <type_traits>

#include "relayout_check.hpp"

using namespace relayout_test;

TEST_CASE("relayout from the replicated layout to each of the 13: local slices, no collective") {
  every_pair(replicated{});
}

// A cycle: one allgather over one mesh dim at the smallest slice, one alltoall over the other
// at the size the allgather left, then a free slice; nothing else.
template <class From, class To>
void check_cycle(const mesh_t& m, const global_t& global) {
  constexpr layout_spec from = From::value, to = To::value;
  static_assert(is_cycle(from, to));
  INFO(describe(from) << " -> " << describe(to) << " on mesh " << m.describe());
  using from_t = mp::tensor<double, xyz, mp::layout_for_t<typename From::rules, xyz>, mesh_t>;
  const auto t = mp::scatter<from_t>(m, sizes, global);
  m.counters().reset();
  const auto u = mp::relayout<typename To::rules>(t);
  const counted got = snapshot(m);
  const std::uint64_t pr = static_cast<std::uint64_t>(m.sizes()[0]);
  const std::uint64_t pc = static_cast<std::uint64_t>(m.sizes()[1]);
  counted gather_r{}, gather_c{};
  expect(gather_r, mp::collective::allgather, mask_r, total / (pr * pc));
  expect(gather_r, mp::collective::alltoall, mask_c, total / pc);
  expect(gather_c, mp::collective::allgather, mask_c, total / (pr * pc));
  expect(gather_c, mp::collective::alltoall, mask_r, total / pr);
  gather_r = counted_by_rule(gather_r, m.sizes());
  gather_c = counted_by_rule(gather_c, m.sizes());
  INFO("counted: " << describe(got));
  CHECK_ALL_RANKS(same_calls_and_values(got, gather_r) || same_calls_and_values(got, gather_c));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(u), global));
}

TEST_CASE("a cycle of dims trading mesh dims is one allgather, one alltoall, one slice") {
  const global_t global = global_array();
  for (const auto& shape : mesh_shapes()) {
    const mesh_t m(shape);
    check_cycle<spec<0, 1>, spec<1, 0>>(m, global);
    check_cycle<spec<1, 0>, spec<0, 1>>(m, global);
    check_cycle<spec<0, 2>, spec<2, 0>>(m, global);
    check_cycle<spec<2, 0>, spec<0, 2>>(m, global);
    check_cycle<spec<1, 2>, spec<2, 1>>(m, global);
    check_cycle<spec<2, 1>, spec<1, 2>>(m, global);
  }
}

TEST_CASE("a chain of relayouts of an int tensor comes back unchanged") {
  const mesh_t m(meshpp_test::grid2(meshpp_test::world().size()));
  const auto global = meshpp_test::filled<int>(
      global_shape, [](std::uint64_t v) { return static_cast<int>(v * 2654435761u); });
  using start_t = mp::tensor<int, xyz, mp::layout_for_t<spec<0, 2>::rules, xyz>, mesh_t>;
  const auto a = mp::scatter<start_t>(m, sizes, global);
  const auto b = mp::relayout<spec<2, 0>::rules>(a);   // the cycle x:r;z:c -> z:r;x:c
  const auto c = mp::relayout<spec<1, -1>::rules>(b);  // z:r -> y:r alltoall, x:c gathered
  const auto d = mp::relayout<spec<-1, 1>::rules>(c);  // y moves from r to c
  const auto e = mp::relayout<spec<0, 2>::rules>(d);   // y:c -> z:c alltoall, x:r sliced
  static_assert(std::is_same_v<std::decay_t<decltype(e)>, std::decay_t<decltype(a)>>);
  CHECK_ALL_RANKS(meshpp_test::bit_equal(e.local(), a.local()));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(c), global));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(d), global));
}

TEST_CASE("relayout to the same layout is a copy, with no collective") {
  const mesh_t m(meshpp_test::grid2(meshpp_test::world().size()));
  const global_t global = global_array();
  using t_type = mp::tensor<double, xyz, mp::layout_for_t<spec<2, 1>::rules, xyz>, mesh_t>;
  const auto t = mp::scatter<t_type>(m, sizes, global);
  m.counters().reset();
  // the same rules, spelled in another order
  const auto u = mp::relayout<mp::layout<mp::split<y, c>, mp::split<z, r>>>(t);
  static_assert(std::is_same_v<std::decay_t<decltype(u)>, t_type>);
  CHECK_ALL_RANKS(same_calls_and_values(snapshot(m), counted{}));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(u.local(), t.local()));
  CHECK_ALL_RANKS(u.local().data() != t.local().data());
}

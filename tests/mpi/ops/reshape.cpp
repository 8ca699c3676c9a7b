// reshape<NewShape>(t, sizes) and rename<Old, New>(t) (1 of 2): merging adjacent dims
// ([batch, seq, d_model] -> [tokens, d_model]), splitting one dim into several ([tokens,
// d_model] -> [batch, seq, d_model]; [batch, seq, d_model] -> [batch, seq, heads, d_kv], sizes
// from extents) and back, renaming; under rules that split the outermost dim of
// each run and the first new dim after (a local reinterpretation: no collective at all); under
// rules that split inner dims (then a relayout: exactly the collectives listed per case, worked
// out from the paper's rules and the layouts before and after); and bad sizes, which throw
// meshpp::error on every rank with nothing communicated.
//
// A reshape keeps the global row-major order, so the gathered result holds the input's flat
// data bit for bit (reshape_check.hpp). Runs at 1, 2 and 4 ranks.
#include <array>
#include <cstdint>

#include "reshape_check.hpp"

using namespace reshape_test;

TEST_CASE(
    "the outermost dim of each run split, and the new first dim after: local, no collective") {
  // [batch/r, seq, d_model/c] |-> [tokens/r, d_model/c] |-> [batch/r, seq, d_model/c]
  // [batch/r, seq, d_model/c] |-> [batch/r, seq, heads/c, d_kv] |-> back
  // [batch/r, seq, d_model/c] |-> [batch/r, seq, hidden/c]
  using rules = layout<split<batch, r>, split<tokens, r>, split<d_model, c>, split<heads, c>,
                       split<hidden, c>>;
  run<rules, batch, seq, d_model>("merge", bsd_sizes, bsd, td, to_tokens, nothing);
  run<rules, tokens, d_model>("split tokens", td_sizes, td, bsd, from_tokens, nothing);
  run<rules, batch, seq, d_model>("split d_model", bsd_sizes, bsd, bshk, to_heads, nothing);
  run<rules, batch, seq, heads, d_kv>("merge heads", bshk_sizes, bshk, bsd, from_heads, nothing);
  run<rules, batch, seq, d_model>("rename", bsd_sizes, bsd, bsd, to_hidden, nothing);
}

TEST_CASE("inner dims split: an allgather or an alltoall, as the layouts before and after say") {
  // kept dims split (seq over r) stay split through every reshape
  using rules = layout<split<seq, r>, split<tokens, r>, split<d_model, c>, split<d_kv, c>>;
  // [batch, seq/r, d_model/c] |-> [batch, seq, d_model/c] (allgather over r: seq is inside the
  // run [batch, seq]) |-> [tokens/r, d_model/c] (a slice)
  run<rules, batch, seq, d_model>("merge", bsd_sizes, bsd, td, to_tokens,
                                  [](std::uint64_t pr, std::uint64_t pc) {
                                    return steps{{allgather, R, total / (pr * pc)}};
                                  });
  // [tokens/r, d_model/c] |-> [batch/r, seq, d_model/c] (local) |-> [batch, seq/r, d_model/c]:
  // batch leaves r, seq arrives: one alltoall over r
  run<rules, tokens, d_model>("split tokens", td_sizes, td, bsd, from_tokens,
                              [](std::uint64_t pr, std::uint64_t pc) {
                                return steps{{alltoall, R, total / (pr * pc)}};
                              });
  // [batch, seq/r, d_model/c] |-> [batch, seq/r, heads/c, d_kv] (local) |->
  // [batch, seq/r, heads, d_kv/c]: heads leaves c, d_kv arrives: one alltoall over c
  run<rules, batch, seq, d_model>("split d_model", bsd_sizes, bsd, bshk, to_heads,
                                  [](std::uint64_t pr, std::uint64_t pc) {
                                    return steps{{alltoall, C, total / (pr * pc)}};
                                  });
  // [batch, seq/r, heads, d_kv/c] |-> [batch, seq/r, heads, d_kv] (allgather over c: d_kv is
  // inside the run [heads, d_kv]) |-> [batch, seq/r, d_model] |-> [.., d_model/c] (a slice)
  run<rules, batch, seq, heads, d_kv>("merge heads", bshk_sizes, bshk, bsd, from_heads,
                                      [](std::uint64_t pr, std::uint64_t pc) {
                                        return steps{{allgather, C, total / (pr * pc)}};
                                      });
  // [batch, seq/r, d_model/c] |-> [batch, seq/r, hidden/c] (local) |-> [.., hidden]: the rules
  // keep hidden whole: allgather over c
  run<rules, batch, seq, d_model>("rename", bsd_sizes, bsd, bsd, to_hidden,
                                  [](std::uint64_t pr, std::uint64_t pc) {
                                    return steps{{allgather, C, total / (pr * pc)}};
                                  });
}

TEST_CASE("bad sizes throw on every rank, with nothing communicated") {
  using rules = layout<split<seq, r>, split<tokens, r>, split<d_model, c>, split<d_kv, c>>;
  const mesh_of<rules> m(meshpp_test::grid2(world().size()));
  const auto t = mp::scatter<batch, seq, d_model>(m, bsd_sizes, data_as(bsd));
  m.counters().reset();
  SUBCASE("a merged dim of the wrong size") {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { (void)mp::reshape<mp::shape<tokens, d_model>>(t, mp::extents{tokens{} = nt - 1}); },
        {"meshpp::reshape: [batch, seq, d_model] -> [tokens, d_model]: a run of dims of total "
         "size 16 would become a run of total size 15 (sizes [batch:4, seq:4, d_model:16])"}));
  }
  SUBCASE("split sizes that do not multiply out") {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] {
          (void)mp::reshape<mp::shape<batch, seq, heads, d_kv>>(
              t, mp::extents{heads{} = 3, d_kv{} = 4});
        },
        {"a run of dims of total size 16 would become a run of total size 12"}));
  }
  SUBCASE("a new dim with no size, its run having two new dims") {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { (void)mp::reshape<mp::shape<batch, seq, heads, d_kv>>(t, mp::extents{heads{} = 4}); },
        {"meshpp::reshape: no size given for the new dim 'd_kv' (pass it in the extents)"}));
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        [&] { (void)mp::reshape<mp::shape<batch, seq, heads, d_kv>>(t); },
        {"no size given for the new dim 'heads'"}));
  }
  CHECK_ALL_RANKS(no_collective(m.counters()));
}

// reshape<NewShape>(t, sizes) and rename<Old, New>(t) (2 of 2): every reshape of reshape.cpp
// on replicated tensors (a local copy); layouts that must change around the local
// reinterpretation: dims whole before and split after (a slice), dims the
// local step leaves on another mesh dim than the rules want (allgather, then slice); a stripe
// that does not fall on whole rows of the run's first new dim (the split cannot survive the
// local step: it is gathered first); and a result dim its mesh dim does not divide, which
// throws on every rank before anything moves.
//
// A reshape keeps the global row-major order, so the gathered result holds the input's flat
// data bit for bit (reshape_check.hpp). Runs at 1, 2 and 4 ranks.
#include <array>
#include <cstdint>

#include "reshape_check.hpp"

using namespace reshape_test;

TEST_CASE("replicated: every reshape and rename is a local copy") {
  using rules = layout<>;
  run<rules, batch, seq, d_model>("merge", bsd_sizes, bsd, td, to_tokens, nothing);
  run<rules, batch, seq, d_model>("merge, size given", bsd_sizes, bsd, td, to_tokens_sized,
                                  nothing);
  run<rules, tokens, d_model>("split tokens", td_sizes, td, bsd, from_tokens, nothing);
  run<rules, batch, seq, d_model>("split d_model", bsd_sizes, bsd, bshk, to_heads, nothing);
  run<rules, batch, seq, heads, d_kv>("merge heads", bshk_sizes, bshk, bsd, from_heads, nothing);
  run<rules, batch, seq, d_model>("rename", bsd_sizes, bsd, bsd, to_hidden, nothing);
}

TEST_CASE("whole before, split after: a local slice; split dims moving to other mesh dims") {
  // tokens and heads are split by the rules over other mesh dims than their inputs' dims:
  // slices, and an allgather where the local step leaves a dim on the wrong mesh dim
  using rules = layout<split<tokens, c>, split<batch, r>, split<heads, c>>;
  // [batch/r, seq, d_model] |-> [tokens/r, d_model] (local) |-> [tokens/c, d_model]: tokens
  // moves from r to c: allgather over r, then a slice over c
  run<rules, batch, seq, d_model>("merge", bsd_sizes, bsd, td, to_tokens,
                                  [](std::uint64_t pr, std::uint64_t) {
                                    return steps{{allgather, R, total / pr}};
                                  });
  // [batch/r, seq, d_model] |-> [batch/r, seq, heads/c, d_kv]: a slice
  run<rules, batch, seq, d_model>("split d_model", bsd_sizes, bsd, bshk, to_heads, nothing);
  // [tokens/c, d_model] |-> [batch/c, seq, d_model] (local) |-> [batch/r, seq, d_model]:
  // allgather over c, then a slice over r
  run<rules, tokens, d_model>("split tokens", td_sizes, td, bsd, from_tokens,
                              [](std::uint64_t, std::uint64_t pc) {
                                return steps{{allgather, C, total / pc}};
                              });
}

TEST_CASE("rename onto another mesh dim: allgather, then a slice") {
  // [batch, seq, d_model/c] |-> [batch, seq, hidden/c] (local) |-> [batch, seq, hidden/r]
  using rules = layout<split<d_model, c>, split<hidden, r>>;
  run<rules, batch, seq, d_model>("rename", bsd_sizes, bsd, bsd, to_hidden,
                                  [](std::uint64_t, std::uint64_t pc) {
                                    return steps{{allgather, C, total / pc}};
                                  });
}

TEST_CASE("a stripe that does not fall on whole rows of the first new dim") {
  // [tokens/r, d] |-> [batch, seq/r, d] with batch = 1: no rank's stripe of tokens is a stripe
  // of batch (1 does not divide by r), so the split cannot survive a local reinterpretation; the
  // reshape is still legal (its result splits seq, which divides) and must give the same data.
  const auto sizes = mp::extents{tokens{} = nt, d_model{} = nd};
  constexpr std::array<std::size_t, 3> one_batch{1, nt, nd};
  run<layout<split<tokens, r>, split<seq, r>>, tokens, d_model>(
      "batch 1, tokens:r, seq:r", sizes, td, one_batch,
      [](const auto& t) {
        return mp::reshape<mp::shape<batch, seq, d_model>>(t, mp::extents{batch{} = 1, seq{} = nt});
      },
      [](std::uint64_t pr, std::uint64_t) {
        // r of size 1: the split survives (batch:r locally), then batch -> seq on r is an
        // alltoall over r; else tokens is gathered over r, reinterpreted whole, seq sliced
        return pr == 1 ? steps{{alltoall, R, total}} : steps{{allgather, R, total / pr}};
      });
}

TEST_CASE("a result dim its mesh dim does not divide throws before anything moves") {
  // [batch, seq/r, d_model] |-> [tokens, d_model/c] with d_model 3: seq must be gathered
  // first (it is inside the run [batch, seq]), but the result cannot be laid out when c has 2
  // ranks or more; every rank must throw before that allgather.
  using rules = layout<split<d_model, c>, split<hidden, r>>;
  const auto g = meshpp_test::grid2(world().size());
  const mesh_of<rules> m(g);
  using input_t =
      mp::tensor<double, mp::shape<batch, seq, d_model>, layout<split<seq, r>>, mesh_of<rules>>;
  const auto sizes = mp::extents{batch{} = nb, seq{} = ns, d_model{} = 3};
  const auto t = mp::scatter<input_t>(m, sizes, data_as(std::array<std::size_t, 3>{nb, ns, 3}));
  m.counters().reset();
  auto call = [&] { (void)mp::reshape<mp::shape<tokens, d_model>>(t); };
  if (g[1] >= 2) {
    CHECK_ALL_RANKS(meshpp_test::throws_with<mp::error>(
        call, {"meshpp::reshape: [batch, seq, d_model] -> [tokens, d_model]: the mesh's rules "
               "cannot lay out the result: dim 'd_model' of size 3 is split over mesh dim 'c' "
               "of size 2, and 3 is not divisible by 2"}));
    CHECK_ALL_RANKS(no_collective(m.counters()));
  } else {
    CHECK_NOTHROW(call());
  }
}

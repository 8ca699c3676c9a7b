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
#include <vector>

#include <xtensor/xstrided_view.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

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

TEST_CASE("a result dim its mesh dim does not divide is laid out in near-equal blocks") {
  // [batch, seq/r, d_model] |-> [tokens, d_model/c] with d_model 3: seq is gathered first (it
  // is inside the run [batch, seq]), and the result splits d_model unevenly when c has 2 ranks
  // or more (blocks 2 and 1, or 1, 1 and 1 of 4): the values are the reshaped whole array.
  using rules = layout<split<d_model, c>, split<hidden, r>>;
  const auto g = meshpp_test::grid2(world().size());
  const mesh_of<rules> m(g);
  using input_t =
      mp::tensor<double, mp::shape<batch, seq, d_model>, layout<split<seq, r>>, mesh_of<rules>>;
  const auto sizes = mp::extents{batch{} = nb, seq{} = ns, d_model{} = 3};
  const auto whole = data_as(std::array<std::size_t, 3>{nb, ns, 3});
  const auto t = mp::scatter<input_t>(m, sizes, whole);
  const auto y = mp::reshape<mp::shape<tokens, d_model>>(t);
  const xt::xtensor<double, 2> expected =
      xt::reshape_view(xt::xtensor<double, 3>(whole), std::vector<std::size_t>{nb * ns, 3});
  CHECK_ALL_RANKS(mp::gather(y) == expected);
  const auto c_size = static_cast<std::size_t>(g[1]),
             me = static_cast<std::size_t>(m.coordinates()[1]);
  CHECK_ALL_RANKS(y.local_shape()[1] == 3 / c_size + (me < 3 % c_size ? 1 : 0));
}

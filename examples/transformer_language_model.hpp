// transformer_language_model.hpp: the member functions of examples/transformer's
// language_model that hold the model's computation (logits, loss), but for its blocks
// (transformer_blocks.hpp). Included by the model translation unit of each layout
// (transformer_<layout>.cpp), which instantiates the class explicitly; everything else (the
// example's training loop, the tests, the bench) links those objects and compiles none of the
// model again.
#pragma once

#include "transformer.hpp"

namespace transformer_example {

template <class Mesh, class Residual>
mp::traced<typename language_model<Mesh, Residual>::logits_t>
language_model<Mesh, Residual>::logits(const ids_t& ids) const {
  // the embedding sum laid out as the blocks' stream: with Residual, the lookup (vocab split)
  // reduce-scatters its rows straight into the split stream, and positions add to each
  // rank's stripe
  return unembed(final_norm(through_blocks(tokens.template apply<Residual>(ids) + positions)));
}

template <class Mesh, class Residual>
mp::traced<typename language_model<Mesh, Residual>::loss_t> language_model<Mesh, Residual>::loss(
    const ids_t& ids, const ids_t& targets) const {
  return mp::reduce_mean(mp::softmax_cross_entropy<vocab>(logits(ids), targets));
}

}  // namespace transformer_example

// transformer_blocks.hpp: language_model::through_blocks, the Transformer blocks of
// examples/transformer's model: the bulk of its computation and of its compile time, so each
// layout compiles it in a translation unit of its own (transformer_<layout>_blocks.cpp).
#pragma once

#include "transformer.hpp"

namespace transformer_example {

template <class Mesh>
mp::traced<typename language_model<Mesh>::hidden_t> language_model<Mesh>::through_blocks(
    const mp::traced<hidden_t>& in) const {
  mp::traced<hidden_t> x = in;
  for (const auto& b : blocks) x = b(x);
  return x;
}

}  // namespace transformer_example

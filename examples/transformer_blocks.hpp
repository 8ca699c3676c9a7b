// transformer_blocks.hpp: language_model::through_blocks, the Transformer blocks of
// examples/transformer's model: the bulk of its computation and of its compile time, so each
// layout compiles it in a translation unit of its own (transformer_<layout>_blocks.cpp).
#pragma once

#include <type_traits>

#include "transformer.hpp"

namespace transformer_example {

template <class Mesh, class Residual>
mp::traced<typename language_model<Mesh, Residual>::hidden_t>
language_model<Mesh, Residual>::through_blocks(const mp::traced<stream_t>& in) const {
  mp::traced<stream_t> x = in;
  for (const auto& b : blocks) x = b(x);
  if constexpr (std::is_void_v<Residual>) {
    return x;
  } else {
    // the split stream whole again after the last block (an allgather) for the final norm
    // and the unembedding
    return mp::relayout<typename hidden_t::layout_type>(x);
  }
}

}  // namespace transformer_example

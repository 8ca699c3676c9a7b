// The data-parallel layout of examples/transformer (batch:all): the model's Transformer blocks.
#include "transformer_blocks.hpp"

template mp::traced<transformer_example::language_model<mesh_data>::hidden_t>
transformer_example::language_model<mesh_data>::through_blocks(const mp::traced<stream_t>&) const;

// The model-parallel layout of examples/transformer (vocab, d_ff, heads: all): the model's
// Transformer blocks.
#include "transformer_blocks.hpp"

template mp::traced<transformer_example::language_model<mesh_model>::hidden_t>
transformer_example::language_model<mesh_model>::through_blocks(const mp::traced<stream_t>&) const;

// The data- and model-parallel layout of examples/transformer (batch:rows; vocab, d_ff,
// heads: cols): the model's Transformer blocks.
#include "transformer_blocks.hpp"

template mp::traced<transformer_example::language_model<mesh_data_model>::hidden_t>
transformer_example::language_model<mesh_data_model>::through_blocks(
    const mp::traced<stream_t>&) const;

// The model layout with a split residual stream (model+residual): the model's Transformer
// blocks.
#include "transformer_blocks.hpp"

template mp::traced<transformer_example::language_model<mesh_model, residual_over_all>::hidden_t>
transformer_example::language_model<mesh_model, residual_over_all>::through_blocks(
    const mp::traced<stream_t>&) const;

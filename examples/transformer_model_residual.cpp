// The model layout with a split residual stream (model+residual: vocab, d_ff, heads over all,
// the blocks' [batch, length, d_model] stream over batch): the model.
#include "transformer_language_model.hpp"

template struct transformer_example::language_model<mesh_model, residual_over_all>;

// The data- and model-parallel layout of examples/transformer (batch:rows; vocab, d_ff,
// heads: cols): the model.
#include "transformer_language_model.hpp"

template struct transformer_example::language_model<mesh_data_model>;

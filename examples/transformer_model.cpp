// The model-parallel layout of examples/transformer (vocab, d_ff, heads: all): the model.
#include "transformer_language_model.hpp"

template struct transformer_example::language_model<mesh_model>;

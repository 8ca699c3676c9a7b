// The data-parallel layout of examples/transformer (batch:all): the model.
#include "transformer_language_model.hpp"

template struct transformer_example::language_model<mesh_data>;

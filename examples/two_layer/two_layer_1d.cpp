// The one-dimensional layouts of examples/two_layer: [], [batch:all], [hidden:all].
#include "two_layer_run.hpp"

template result run(const mesh_replicated&, const options&, const reference*);
template result run(const mesh_data&, const options&, const reference*);
template result run(const mesh_model&, const options&, const reference*);

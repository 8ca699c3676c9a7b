// The data-parallel layout of examples/transformer (batch:all): its training loop, evaluation and
// sampling.
#include "transformer_run.hpp"

template void transformer_example::run(const mesh_data&, const mp::text_corpus&,
                                       const transformer_example::options&);

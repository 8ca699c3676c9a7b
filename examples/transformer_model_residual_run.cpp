// The model layout with a split residual stream (model+residual): its training loop,
// evaluation and sampling.
#include "transformer_run.hpp"

template void transformer_example::run<mesh_model, residual_over_all>(
    const mesh_model&, const mp::text_corpus&, const transformer_example::options&);
template void transformer_example::planned_step<mesh_model, residual_over_all>(
    const mesh_model&, const transformer_example::options&, std::size_t, bool);

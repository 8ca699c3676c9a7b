// The data- and model-parallel layout of examples/transformer (batch:rows; vocab, d_ff,
// heads: cols): its training loop, evaluation and sampling.
#include "transformer_run.hpp"

template void transformer_example::run(const mesh_data_model&, const mp::text_corpus&,
                                       const transformer_example::options&);
template void transformer_example::planned_step(const mesh_data_model&,
                                                const transformer_example::options&, std::size_t,
                                                bool);

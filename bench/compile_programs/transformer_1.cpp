// transformer_1: examples/transformer's data layout (batch:all) whole in one translation unit,
// what transformer_data.cpp, transformer_data_blocks.cpp and transformer_data_run.cpp compile
// apart: the model, its blocks, and its training loop with planned_step. Explicit
// instantiations only (no main): bench/compile compiles, it does not link.
#include <transformer_blocks.hpp>
#include <transformer_language_model.hpp>
#include <transformer_run.hpp>

namespace transformer_example {

// the model; through_blocks is defined above, so this instantiates the blocks too (naming
// it again would be a duplicate explicit instantiation)
template struct language_model<mesh_data>;
// the training loop, evaluation and sampling, and one planned step
template void run(const mesh_data&, const mp::text_corpus&, const options&);
template void planned_step(const mesh_data&, const options&, std::size_t, bool);

}  // namespace transformer_example

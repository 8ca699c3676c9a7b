// transformer_1: examples/transformer's data layout (batch:all) alone in one translation unit:
// the model, its blocks, and its training loop with planned_step. Explicit instantiations only
// (no main): bench/compile compiles, it does not link.
#if __has_include(<transformer_run.hpp>)  // a tree whose example splits the model in three
#include <transformer_blocks.hpp>
#include <transformer_language_model.hpp>
#include <transformer_run.hpp>
#else
#include <transformer.hpp>
#endif

namespace transformer_example {

// the model; through_blocks is defined above, so this instantiates the blocks too (naming
// it again would be a duplicate explicit instantiation)
template struct language_model<mesh_data>;
// the training loop, evaluation and sampling, and one planned step
template void run(const mesh_data&, const mp::text_corpus&, const options&);
template void planned_step(const mesh_data&, const options&, std::size_t, bool);

}  // namespace transformer_example

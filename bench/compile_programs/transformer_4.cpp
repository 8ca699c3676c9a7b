// transformer_4: examples/transformer's four layouts (data; model; data+model;
// model+residual) in one translation unit, as examples/transformer/transformer_layouts.cpp
// compiles them: for each, the model, its blocks, and its training loop with planned_step.
// Explicit instantiations only (no main): bench/compile compiles, it does not link.
#if __has_include(<transformer_run.hpp>)  // a tree whose example splits the model in three
#include <transformer_blocks.hpp>
#include <transformer_language_model.hpp>
#include <transformer_run.hpp>
#else
#include <transformer.hpp>
#endif

namespace transformer_example {

// the models; through_blocks is defined above, so these instantiate the blocks too (naming
// it again would be a duplicate explicit instantiation)
template struct language_model<mesh_data>;
template struct language_model<mesh_model>;
template struct language_model<mesh_data_model>;
template struct language_model<mesh_model, residual_over_all>;
// the training loops, evaluation and sampling, and one planned step of each
template void run(const mesh_data&, const mp::text_corpus&, const options&);
template void run(const mesh_model&, const mp::text_corpus&, const options&);
template void run(const mesh_data_model&, const mp::text_corpus&, const options&);
template void run<mesh_model, residual_over_all>(const mesh_model&, const mp::text_corpus&,
                                                 const options&);
template void planned_step(const mesh_data&, const options&, std::size_t, bool);
template void planned_step(const mesh_model&, const options&, std::size_t, bool);
template void planned_step(const mesh_data_model&, const options&, std::size_t, bool);
template void planned_step<mesh_model, residual_over_all>(const mesh_model&, const options&,
                                                          std::size_t, bool);

}  // namespace transformer_example

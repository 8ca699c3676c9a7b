// transformer_layouts.cpp: examples/transformer's layouts, each compiled once: the model, one
// planned step and the training loop of every candidate of transformer_example::layouts, and
// the entry points that pick one at run time (transformer.hpp declares them).
#include "transformer.hpp"

namespace transformer_example {

void train(const mp::mesh_pick& pick, const mp::text_corpus& text, const options& o) {
  layouts::run(pick, [&](const auto& mesh, auto option) {
    run<std::decay_t<decltype(mesh)>, residual_of<decltype(option)>>(mesh, text, o);
  });
}

// one planned step under any candidate of `layouts` (planned_step of its mesh and residual)
auto one_planned_step(const options& o, std::size_t vocab) {
  return [&o, vocab](const auto& mesh, auto option) {
    planned_step<std::decay_t<decltype(mesh)>, residual_of<decltype(option)>>(mesh, o, vocab);
  };
}

mp::plan step_plan(const mp::mesh_pick& pick, const options& o, std::size_t vocab) {
  return layouts::plan_of(pick, one_planned_step(o, vocab));
}

void add_layouts(mp::layout_search& search, int ranks, const options& o, std::size_t vocab) {
  layouts::add_to(search, ranks, one_planned_step(o, vocab));
}

// The models and planned steps that transformer.hpp declares extern (the tests and the bench
// link these); the same list as `layouts`
template struct language_model<mesh_data>;
template struct language_model<mesh_model>;
template struct language_model<mesh_data_model>;
template struct language_model<mesh_model, residual_over_all>;
template void planned_step(const mesh_data&, const options&, std::size_t, bool);
template void planned_step(const mesh_model&, const options&, std::size_t, bool);
template void planned_step(const mesh_data_model&, const options&, std::size_t, bool);
template void planned_step<mesh_model, residual_over_all>(const mesh_model&, const options&,
                                                          std::size_t, bool);

}  // namespace transformer_example

// expect-error: meshpp::mesh_choice<Options...>: two candidates have the same name
//
// Two candidate layouts of a run-time choice under one name is a compile error: the name could
// not say which to run.
#include <meshpp/core/mesh.hpp>
#include <meshpp/plan/choice.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(all);

using mesh_data = meshpp::mesh<meshpp::axes<all>, meshpp::layout<meshpp::split<batch, all>>>;
using mesh_model = meshpp::mesh<meshpp::axes<all>, meshpp::layout<meshpp::split<hidden, all>>>;

#ifndef MESHPP_COMPILE_FAIL_TWIN
using layouts =
    meshpp::mesh_choice<meshpp::named<"data", mesh_data>, meshpp::named<"data", mesh_model>>;
#else
using layouts =
    meshpp::mesh_choice<meshpp::named<"data", mesh_data>, meshpp::named<"model", mesh_model>>;
#endif
// never called: cases are only compiled
bool knows(const char* name) { return layouts::knows(name); }

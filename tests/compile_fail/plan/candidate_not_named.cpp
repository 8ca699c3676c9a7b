// expect-error: meshpp::mesh_choice<Options...>: every candidate must be meshpp::named<Name, Mesh, Tag>
//
// A run-time choice of layouts takes named candidates: a bare mesh type has no name to pick it
// by.
#include <meshpp/core/mesh.hpp>
#include <meshpp/plan/choice.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(all);

using mesh_data = meshpp::mesh<meshpp::axes<all>, meshpp::layout<meshpp::split<batch, all>>>;

#ifndef MESHPP_COMPILE_FAIL_TWIN
using layouts = meshpp::mesh_choice<mesh_data>;
#else
using layouts = meshpp::mesh_choice<meshpp::named<"data", mesh_data>>;
#endif
// never called: cases are only compiled
bool knows(const char* name) { return layouts::knows(name); }

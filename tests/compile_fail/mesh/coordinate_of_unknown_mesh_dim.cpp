// expect-error: meshpp::mesh: this mesh has no such mesh dim
// expect-error: not_a_mesh_dim<planes, meshpp::axes<rows, cols> ?>
//
// Asking a mesh about a mesh dim it does not have is a compile error naming the dim.
#include <meshpp/core/mesh.hpp>

MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(planes);

#ifndef MESHPP_COMPILE_FAIL_TWIN
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>>;
#else
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols, planes>>;
#endif
// never called: cases are only compiled
int where_along_planes(const mesh_t& m) { return m.coordinate<planes>(); }

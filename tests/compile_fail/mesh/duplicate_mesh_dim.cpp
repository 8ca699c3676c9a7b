// expect-error: meshpp::axes<MeshDims\.\.\.>: a mesh dim appears twice
// expect-error: duplicate_dim<rows>
//
// The dims of a mesh are a set: naming one twice is a compile error naming the mesh dim.
#include <meshpp/core/mesh.hpp>

MESHPP_DIM(rows);
MESHPP_DIM(cols);

#ifndef MESHPP_COMPILE_FAIL_TWIN
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols, rows>>;
#else
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>>;
#endif
static_assert(sizeof(mesh_t) > 0);

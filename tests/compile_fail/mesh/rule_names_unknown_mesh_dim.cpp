// expect-error: meshpp::mesh<Axes, Rules>: a layout rule names a mesh dim that the mesh does not
// expect-error: the_mesh_lacks<meshpp::split<hidden, planes>, meshpp::axes<rows, cols> ?>
//
// Every rule of a mesh's layout must split over one of the mesh's own dims.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(planes);

using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = meshpp::layout<split<batch, rows>, split<hidden, planes>>;
#else
using rules = meshpp::layout<split<batch, rows>, split<hidden, cols>>;
#endif
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>, rules>;
static_assert(sizeof(mesh_t) > 0);

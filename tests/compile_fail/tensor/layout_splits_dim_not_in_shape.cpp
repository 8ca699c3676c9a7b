// expect-error: meshpp::tensor<T, Shape, Layout, Mesh>: Layout must split only Shape's dims
// expect-error: to_shape<meshpp::layout<meshpp::split<hidden, rows> ?>, meshpp::shape<batch, io>
//
// A tensor's Layout names only the tensor's own dims (layout_for_t<Rules, Shape> does that).
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);

using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows>>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using t =
    meshpp::tensor<float, meshpp::shape<batch, io>, meshpp::layout<split<hidden, rows>>, mesh_t>;
#else
using t =
    meshpp::tensor<float, meshpp::shape<batch, io>, meshpp::layout<split<batch, rows>>, mesh_t>;
#endif
static_assert(sizeof(t) > 0);

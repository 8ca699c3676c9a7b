// expect-error: meshpp::relayout<Rules>\(t\): the new layout splits a dim over a mesh dim the mesh does not have
// expect-error: relayout_target_names_a_mesh_dim_the_mesh_lacks<meshpp::split<hidden, planes>, meshpp::axes<rows, cols> ?>
//
// relayout<Rules>(t) may name any rules, but those for t's dims must split over the mesh's own
// dims: the mesh [rows, cols] has no planes. The twin splits hidden over cols.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/relayout.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(planes);

using meshpp::layout;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>, layout<split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, meshpp::shape<batch, hidden>, mesh_t>;

// never called: cases are only compiled
#ifndef MESHPP_COMPILE_FAIL_TWIN
auto spread(const x_t& x) { return meshpp::relayout<layout<split<hidden, planes>>>(x); }
#else
auto spread(const x_t& x) { return meshpp::relayout<layout<split<hidden, cols>>>(x); }
#endif

// expect-error: meshpp::assign_expression\(dest, e\) \(dest = e\): dest and e live on meshes of different types
// expect-error: destination_on_another_mesh_type<meshpp::mesh<meshpp::axes<rows, cols>.*, meshpp::mesh<meshpp::axes<rows>
//
// An expression is written into a tensor on its own mesh: here e lives on a 1-d mesh [rows]
// and dest on a 2-d mesh [rows, cols]. The twin puts dest on e's mesh type.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/expr/functions.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using meshpp::axes;
using meshpp::layout;
using meshpp::mesh;
using meshpp::shape;
using meshpp::split;
using a_t =
    meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh<axes<rows>>>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using dest_t =
    meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh<axes<rows, cols>>>;
#else
using dest_t =
    meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh<axes<rows>>>;
#endif

// never called: cases are only compiled
void assign(dest_t& dest, const a_t& a) { meshpp::assign_expression(dest, a * 2.0f); }

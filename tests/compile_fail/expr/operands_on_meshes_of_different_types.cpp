// expect-error: meshpp::function_expr<F, Args\.\.\.> \(a \+ b, f\(a, b\), \.\.\.\): the operands live on meshes of different types
// expect-error: operands_on_meshes_of_different_types<meshpp::mesh<meshpp::axes<rows>.*, meshpp::mesh<meshpp::axes<rows, cols>
//
// The operands of a component-wise operation must live on one mesh, so they must have one
// mesh type: here a lives on a 1-d mesh [rows] and b on a 2-d mesh [rows, cols]. The twin
// puts b on a's mesh type.
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
using b_t =
    meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh<axes<rows, cols>>>;
#else
using b_t =
    meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh<axes<rows>>>;
#endif

// never called: cases are only compiled
auto add(const a_t& a, const b_t& b) { return a + b; }

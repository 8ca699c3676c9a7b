// expect-error: meshpp::function_expr<F, Args\.\.\.> \(a \+ b, f\(a, b\), \.\.\.\): two operands split a shared dim over different mesh dims
// expect-error: operands_split_a_shared_dim_over_two_mesh_dims<meshpp::split<batch, rows>, meshpp::split<batch, cols> ?>
//
// a + b reads both operands at the same local indices, so a dim they share must be split the
// same way in both: here batch is split over rows in a and over cols in b, and no rank holds
// matching stripes of the two. The twin splits batch over rows in both.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/expr/functions.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows, cols>>;
using a_t = meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using b_t = meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, cols>>, mesh_t>;
#else
using b_t = meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh_t>;
#endif

// never called: cases are only compiled
auto add(const a_t& a, const b_t& b) { return a + b; }

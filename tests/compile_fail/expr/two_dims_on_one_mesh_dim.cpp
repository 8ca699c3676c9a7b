// expect-error: meshpp::function_expr<F, Args\.\.\.> \(a \+ b, f\(a, b\), \.\.\.\): the operands' layouts put two dims of the result on one mesh dim
// expect-error: result_has_two_dims_on_one_mesh_dim<meshpp::split<batch, all>, meshpp::split<hidden, all> ?>
//
// Broadcasting a [batch] + b [hidden] gives a result [batch, hidden] whose layout is the union
// of the operands' layouts. With batch split over `all` in a and hidden over `all` in b, the
// result would have two dims on one mesh dim (illegal layout, Mesh-TensorFlow paper 8.5). The
// twin holds b whole.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/expr/functions.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(all);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<all>>;
using a_t = meshpp::tensor<float, shape<batch>, layout<split<batch, all>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using b_t = meshpp::tensor<float, shape<hidden>, layout<split<hidden, all>>, mesh_t>;
#else
using b_t = meshpp::tensor<float, shape<hidden>, layout<>, mesh_t>;
#endif

// never called: cases are only compiled
auto add(const a_t& a, const b_t& b) { return a + b; }

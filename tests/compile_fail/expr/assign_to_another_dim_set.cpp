// expect-error: meshpp::assign_expression\(dest, e\) \(dest = e\): dest and e have different sets of dims
// expect-error: destination_has_another_dim_set<meshpp::shape<batch, io>, meshpp::shape<batch, hidden> ?>
//
// Assigning an expression to a tensor writes every element of the tensor from the element of
// the expression with the same indices, matched by dim name: the two must have the same set of
// dims. Here a + b is [batch, hidden] and h is [batch, io]. The twin's h is [hidden, batch]:
// the same set in another order, which assignment transposes by name.
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/expr/functions.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(io);
MESHPP_DIM(rows);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows>>;
using x_t = meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using h_t = meshpp::tensor<float, shape<batch, io>, layout<split<batch, rows>>, mesh_t>;
#else
using h_t = meshpp::tensor<float, shape<hidden, batch>, layout<split<batch, rows>>, mesh_t>;
#endif

// never called: cases are only compiled
void add(h_t& h, const x_t& a, const x_t& b) { h = a + b; }

// expect-error: meshpp::assign_expression\(dest, e\) \(dest = e\): e splits a dim that dest does not split the same way
// expect-error: expression_rule_the_destination_lacks<meshpp::split<batch, rows>, meshpp::layout<> ?>
//
// Assignment is local: each rank writes its own slice of the destination from its own slice
// of the expression. An expression whose batch is split over rows holds only a stripe of
// batch on each rank, so it cannot fill a destination that holds batch whole without an
// allgather; that communication must be written as an explicit relayout. The twin's
// destination splits batch over rows too. (The reverse, a destination splitting a dim the
// expression holds whole, is free: each rank reads its stripe.)
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/expr/functions.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows>>;
using x_t = meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using h_t = meshpp::tensor<float, shape<batch, hidden>, layout<>, mesh_t>;
#else
using h_t = meshpp::tensor<float, shape<batch, hidden>, layout<split<batch, rows>>, mesh_t>;
#endif

// never called: cases are only compiled
void add(h_t& h, const x_t& a, const x_t& b) { h = a + b; }

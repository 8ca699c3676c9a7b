// expect-error: meshpp::gradients\(loss, xs\.\.\.\): each x must be a traced tensor or a variable
// expect-error: gradient_asked_of_a_plain_value<meshpp::tensor<double
//
// A plain tensor is a constant of the graph: nothing records how the loss depends on it. The
// twin traces it first (mp::trace), which makes it a leaf whose gradient can be asked for.
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<double, meshpp::shape<batch>, mesh_t>;

// never called: cases are only compiled
auto grad(const x_t& x) {
#ifndef MESHPP_COMPILE_FAIL_TWIN
  auto loss = meshpp::reduce_sum(meshpp::trace(x));
  return meshpp::gradients(loss, x);
#else
  auto t = meshpp::trace(x);
  auto loss = meshpp::reduce_sum(t);
  return meshpp::gradients(loss, t);
#endif
}

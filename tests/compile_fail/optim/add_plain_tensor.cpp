// expect-error: meshpp::optimizer::add\(parts\.\.\.\): each argument must be a meshpp::variable, or a layer or model of them
// expect-error: optimizer_argument_is_not_a_variable<meshpp::tensor<float
//
// An optimizer trains variables: a plain tensor has no gradient to step along. The twin wraps
// the initial value in a variable.
#include <meshpp/optim/sgd.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, meshpp::shape<batch>, mesh_t>;

// never called: cases are only compiled
void train(const x_t& w) {
#ifndef MESHPP_COMPILE_FAIL_TWIN
  meshpp::sgd opt({.learning_rate = 0.1}, w);
#else
  meshpp::sgd opt({.learning_rate = 0.1}, meshpp::variable(w, "w"));
#endif
  opt.step();
}

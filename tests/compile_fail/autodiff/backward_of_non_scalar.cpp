// expect-error: meshpp::backward\(loss\): loss must be a scalar
// expect-error: loss_is_not_a_scalar<meshpp::shape<batch> ?>
//
// backward() seeds the loss with 1: a per-example loss[batch] must be reduced first (the
// twin takes its mean).
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using v_t = meshpp::tensor_of<float, meshpp::shape<batch>, mesh_t>;

// never called: cases are only compiled
void train(const meshpp::variable<v_t>& v) {
  auto per_example = v * v;
#ifndef MESHPP_COMPILE_FAIL_TWIN
  meshpp::backward(per_example);
#else
  meshpp::backward(meshpp::reduce_mean(per_example));
#endif
}

// expect-error: meshpp::gradients\(loss, xs\.\.\.\): loss must be a scalar
// expect-error: loss_is_not_a_scalar<meshpp::shape<batch, hidden> ?>
//
// A gradient differentiates one number: y[batch, hidden] has dims. The twin reduces it first.
#include <meshpp/autodiff/einsum.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);

using meshpp::shape;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using x_t = meshpp::tensor_of<float, shape<batch, io>, mesh_t>;
using w_t = meshpp::tensor_of<float, shape<io, hidden>, mesh_t>;

// never called: cases are only compiled
auto grad(const x_t& x, const meshpp::variable<w_t>& w) {
  auto y = meshpp::einsum<shape<batch, hidden>>(x, w);
#ifndef MESHPP_COMPILE_FAIL_TWIN
  return meshpp::gradients(y, w);
#else
  return meshpp::gradients(meshpp::reduce_sum(y), w);
#endif
}

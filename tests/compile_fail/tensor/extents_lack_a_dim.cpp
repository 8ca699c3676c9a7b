// expect-error: meshpp::tensor: the extents give no size for a dim of the tensor
// expect-error: no_size_given_for_tensor_dim<io, meshpp::extents<batch> ?>
//
// Making a tensor needs a size for each of its dims; the diagnostic names the missing one.
#include <meshpp/core/create.hpp>
#include <meshpp/core/extents.hpp>
#include <meshpp/core/mesh.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(rows);

using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;

// never called: cases are only compiled
void make(const mesh_t& mesh) {
#ifndef MESHPP_COMPILE_FAIL_TWIN
  auto t = meshpp::zeros<float, batch, io>(mesh, meshpp::extents{batch{} = 4});
#else
  auto t = meshpp::zeros<float, batch, io>(mesh, meshpp::extents{batch{} = 4, io{} = 2});
#endif
  (void)t;
}

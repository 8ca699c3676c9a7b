// expect-error: meshpp::tensor: two dims of one tensor are split over the same mesh dim
// expect-error: mesh_dim<meshpp::split<batch, processor_rows>, meshpp::split<rows, processor_rows>
//
// The Mesh-TensorFlow README's illegal layout "batch:processor_rows;rows:processor_rows" for
// image_batch [batch, rows, cols, channels]: two dims of one tensor cannot both be split over
// processor_rows. The twin moves rows to processor_cols, the README's legal
// "batch:processor_rows;rows:processor_cols".
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(channels);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

using meshpp::split;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using rules = meshpp::layout<split<batch, processor_rows>, split<rows, processor_rows>>;
#else
using rules = meshpp::layout<split<batch, processor_rows>, split<rows, processor_cols>>;
#endif
using mesh_t = meshpp::mesh<meshpp::axes<processor_rows, processor_cols>, rules>;
using image_batch = meshpp::tensor_of<float, meshpp::shape<batch, rows, cols, channels>, mesh_t>;
static_assert(sizeof(image_batch) > 0);

// expect-error: meshpp::softmax_cross_entropy<Classes>\(logits, labels\): labels must have the dims of logits except Classes
// expect-error: labels_must_have_the_logits_dims_but_the_class_dim<meshpp::shape<batch, classes>, meshpp::shape<batch> ?>
//
// Labels are class ids, one per example: [batch], not a [batch, classes] one-hot array (the
// twin passes ids).
#include <cstdint>

#include <meshpp/nn/softmax_cross_entropy.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(classes);
MESHPP_DIM(rows);

using meshpp::shape;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, meshpp::layout<meshpp::split<batch, rows>>>;
using logits_t = meshpp::tensor_of<float, shape<batch, classes>, mesh_t>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using labels_t = meshpp::tensor_of<std::int32_t, shape<batch, classes>, mesh_t>;
#else
using labels_t = meshpp::tensor_of<std::int32_t, shape<batch>, mesh_t>;
#endif

// never called: cases are only compiled
auto loss(const meshpp::traced<logits_t>& logits, const labels_t& labels) {
  return meshpp::softmax_cross_entropy<classes>(logits, labels);
}

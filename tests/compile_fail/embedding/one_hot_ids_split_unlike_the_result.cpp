// expect-error: meshpp::one_hot<Dim>\(ids, sizes\): ids split a dim that the result does not split the same way
// expect-error: ids_split_a_dim_the_one_hot_result_does_not<meshpp::split<batch, rows>, meshpp::layout<meshpp::split<vocab, rows> ?> ?>
//
// one_hot<vocab>(ids, sizes) fills each rank's slice of its result [batch, seq, vocab], laid
// out by the mesh's rules, from the ids this rank holds, without communication. Under rules
// that hold batch whole, ids split over batch would leave each rank without most of the ids
// it needs: a compile error (relayout ids first). The twin's ids are whole, which is free:
// each rank reads its stripe.
#include <meshpp/core/extents.hpp>
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>
#include <meshpp/core/tensor.hpp>
#include <meshpp/ops/embedding.hpp>

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(vocab);
MESHPP_DIM(rows);

using meshpp::layout;
using meshpp::shape;
using meshpp::split;
using mesh_t = meshpp::mesh<meshpp::axes<rows>, layout<split<vocab, rows>>>;
#ifndef MESHPP_COMPILE_FAIL_TWIN
using ids_t = meshpp::tensor<int, shape<batch, seq>, layout<split<batch, rows>>, mesh_t>;
#else
using ids_t = meshpp::tensor<int, shape<batch, seq>, layout<>, mesh_t>;
#endif

// never called: cases are only compiled
auto encode(const ids_t& ids) { return meshpp::one_hot<vocab>(ids, meshpp::extents{vocab{} = 8}); }

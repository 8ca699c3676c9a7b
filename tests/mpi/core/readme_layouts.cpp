// The Mesh-TensorFlow README's "Example Layouts", checked value by value.
//
// image_batch [batch 100, rows 28, cols 28, channels 3] on the mesh
// [processor_rows 2, processor_cols 4]. The README's mesh has 8 processors, so this test
// needs exactly 8 ranks: on any other count every test case fails at its first line, saying so.
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <mpi.h>
#include <xtensor/xview.hpp>

#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(channels);
MESHPP_DIM(processor_rows);
MESHPP_DIM(processor_cols);

using idx4 = std::array<std::size_t, 4>;

namespace {
const auto sizes = mp::extents{batch{} = 100, rows{} = 28, cols{} = 28, channels{} = 3};
constexpr std::uint64_t seed = 1;

template <class Rules>
using mesh_for = mp::mesh<mp::axes<processor_rows, processor_cols>, Rules>;

// image_batch, made on one rank without a mesh
const xt::xtensor<float, 4>& reference() {
  static const auto ref = meshpp_test::filled<float>(idx4{100, 28, 28, 3}, [](std::uint64_t n) {
    return 0.0f + (1.0f - 0.0f) * mp::uniform_at<float>(seed, n);
  });
  return ref;
}

template <class Rules>
auto image_batch() {
  return mp::random_uniform<float, batch, rows, cols, channels>(mesh_for<Rules>({2, 4}), sizes,
                                                                seed);
}

#define REQUIRE_EIGHT_RANKS()                                      \
  REQUIRE_MESSAGE(world().size() == 8,                             \
                  "readme_layouts needs exactly 8 ranks (mesh "    \
                  "[processor_rows 2, processor_cols 4]); it has " \
                      << world().size())
}  // namespace

TEST_CASE(
    "batch:processor_cols: slices [25, 28, 28, 3]; (0,3) and (1,3) hold image_batch[75:100]") {
  REQUIRE_EIGHT_RANKS();
  using rules = mp::layout<mp::split<batch, processor_cols>>;
  const auto t = image_batch<rules>();
  const int me = world().rank();
  CHECK(t.local_shape() == idx4{25, 28, 28, 3});
  // the processor at (r, c) holds batch [25c, 25c + 25), whatever r
  CHECK_ALL_RANKS(t.local_offsets() == idx4{25 * static_cast<std::size_t>(me % 4), 0, 0, 0});
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      t.local(), meshpp_test::block(reference(), t.local_offsets(), t.local_shape())));

  // the README's example: processors (0, 3) and (1, 3), world ranks 3 and 7, hold
  // image_batch[75:100] (checked on every rank: exactly these two hold it)
  const auto last_quarter = meshpp_test::block(reference(), {75, 0, 0, 0}, {25, 28, 28, 3});
  const bool readme_rank = me == 3 || me == 7;
  CHECK_ALL_RANKS(!readme_rank || (t.mesh().coordinate<processor_cols>() == 3 &&
                                   t.mesh().coordinate<processor_rows>() == me / 4));
  CHECK_ALL_RANKS(readme_rank == (t.local_offsets() == idx4{75, 0, 0, 0}));
  CHECK_ALL_RANKS(readme_rank == meshpp_test::bit_equal(t.local(), last_quarter));

  // ranks 3 and 7 hold the same bytes: exchange the slices, compare them directly
  std::vector<float> theirs(t.local().size());
  const int partner = (me + 4) % 8;  // the other processor_rows coordinate, same column
  MPI_Sendrecv(t.local().data(), static_cast<int>(t.local().size()), MPI_FLOAT, partner, 0,
               theirs.data(), static_cast<int>(theirs.size()), MPI_FLOAT, partner, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK_ALL_RANKS(std::memcmp(theirs.data(), t.local().data(), theirs.size() * sizeof(float)) == 0);

  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), reference()));
}

TEST_CASE(
    "rows:processor_rows;cols:processor_cols: slices [100, 14, 7, 3]; (0,1) holds "
    "image_batch[:, 0:14, 7:14, :]") {
  REQUIRE_EIGHT_RANKS();
  using rules = mp::layout<mp::split<rows, processor_rows>, mp::split<cols, processor_cols>>;
  const auto t = image_batch<rules>();
  const int me = world().rank();
  const std::size_t r = static_cast<std::size_t>(me / 4), c = static_cast<std::size_t>(me % 4);
  CHECK(t.local_shape() == idx4{100, 14, 7, 3});
  CHECK_ALL_RANKS(t.local_offsets() == idx4{0, 14 * r, 7 * c, 0});
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      t.local(), meshpp_test::block(reference(), t.local_offsets(), t.local_shape())));

  // the README's example: processor (0, 1), world rank 1, holds
  // image_batch[:, 0:14, 7:14, :], written out with xtensor's own view; exactly rank 1 holds it
  const xt::xtensor<float, 4> expected =
      xt::view(reference(), xt::all(), xt::range(0, 14), xt::range(7, 14), xt::all());
  CHECK_ALL_RANKS((me == 1) == (t.local_offsets() == idx4{0, 0, 7, 0}));
  CHECK_ALL_RANKS((me == 1) == meshpp_test::bit_equal(t.local(), expected));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), reference()));
}

TEST_CASE("the empty layout: every processor holds the whole image_batch") {
  REQUIRE_EIGHT_RANKS();
  const auto t = image_batch<mp::layout<>>();
  CHECK(t.local_shape() == idx4{100, 28, 28, 3});
  CHECK(t.local_offsets() == idx4{0, 0, 0, 0});
  CHECK_ALL_RANKS(meshpp_test::bit_equal(t.local(), reference()));
}

TEST_CASE("channels:processor_rows, illegal in Mesh-TensorFlow, splits channels 2 + 1 here") {
  // The README calls it illegal because 3 is not divisible by 2; meshpp splits such a dim into
  // near-equal blocks, the last ones shorter: processor row 0 holds channels 0:2, row 1 2:3.
  REQUIRE_EIGHT_RANKS();
  const auto t = image_batch<mp::layout<mp::split<channels, processor_rows>>>();
  const std::size_t r = static_cast<std::size_t>(world().rank() / 4);
  CHECK_ALL_RANKS(t.local_offsets() == idx4{0, 0, 0, 2 * r});
  CHECK_ALL_RANKS(t.local_shape() == idx4{100, 28, 28, 2 - r});
  CHECK_ALL_RANKS(meshpp_test::bit_equal(
      t.local(), meshpp_test::block(reference(), t.local_offsets(), t.local_shape())));
  CHECK_ALL_RANKS(meshpp_test::bit_equal(mp::gather(t), reference()));
}

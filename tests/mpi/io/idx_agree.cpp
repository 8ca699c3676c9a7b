// load_mnist(comm, dir) fails together: a bad directory on one rank throws meshpp::error on
// every rank; good directories give every rank the same data; ranks that read different
// data all throw. And the real Fashion-MNIST, which CI installs, reads as 60000 + 10000
// images of 28 x 28 with 6000 + 1000 of each class 0..9.
#include <meshpp/io/idx.hpp>

#include <zlib.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/mpi/collectives/broadcast.hpp>
#include <boost/serialization/vector.hpp>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace io = meshpp;  // the IDX reader lives in meshpp itself
namespace fs = std::filesystem;
using meshpp_test::world;
using bytes = std::vector<std::uint8_t>;

using meshpp_test::temp_dir;

namespace {

// Writes an IDX file of unsigned bytes, gzip'd by zlib; false if any step failed.
bool write_idx_gz(const std::string& path, const std::vector<std::size_t>& dims,
                  const bytes& data) {
  bytes content{0x00, 0x00, 0x08, static_cast<std::uint8_t>(dims.size())};
  for (const std::size_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      content.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  content.insert(content.end(), data.begin(), data.end());
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool wrote = gzwrite(f, content.data(), static_cast<unsigned>(content.size())) ==
                     static_cast<int>(content.size());
  return gzclose(f) == Z_OK && wrote;
}

bytes pattern(std::size_t n, unsigned modulo, unsigned seed) {
  bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>((i * 7 + seed) % modulo);
  return out;
}

// A small MNIST-shaped set in dir; seed changes the pixels. False if any write failed.
bool write_mnist(const temp_dir& dir, unsigned seed = 3) {
  return !dir.path.empty() &&
         write_idx_gz(dir / "train-images-idx3-ubyte.gz", {12, 4, 3}, pattern(144, 256, seed)) &&
         write_idx_gz(dir / "train-labels-idx1-ubyte.gz", {12}, pattern(12, 10, 1)) &&
         write_idx_gz(dir / "t10k-images-idx3-ubyte.gz", {5, 4, 3}, pattern(60, 256, seed)) &&
         write_idx_gz(dir / "t10k-labels-idx1-ubyte.gz", {5}, pattern(5, 10, 2));
}

// Every rank's copy equals rank 0's.
bool same_on_every_rank(const io::idx_array& mine) {
  io::idx_array root = mine;
  boost::mpi::broadcast(world(), root.dims, 0);
  boost::mpi::broadcast(world(), root.data, 0);
  return meshpp_test::all_ranks(root == mine);
}

}  // namespace

TEST_CASE("load_mnist(comm, dir): good directories give every rank the same data") {
  temp_dir dir;
  REQUIRE(meshpp_test::all_ranks(write_mnist(dir)));
  const io::mnist_data m = io::load_mnist(world(), dir.path.string());
  CHECK_ALL_RANKS(m.rows == 4 && m.cols == 3);
  CHECK_ALL_RANKS(m.train_images == io::idx_array{{12, 4, 3}, pattern(144, 256, 3)});
  CHECK_ALL_RANKS(m.test_labels == io::idx_array{{5}, pattern(5, 10, 2)});
  CHECK_ALL_RANKS(same_on_every_rank(m.train_images));
  CHECK_ALL_RANKS(same_on_every_rank(m.train_labels));
  CHECK_ALL_RANKS(same_on_every_rank(m.test_images));
  CHECK_ALL_RANKS(same_on_every_rank(m.test_labels));
}

namespace {
// load_mnist(world(), dir) throws on every rank: on bad_rank with a message holding every
// one of bad_rank_parts, on the others with one naming bad_rank.
bool throws_on_every_rank(const std::string& dir, int bad_rank,
                          std::initializer_list<std::string_view> bad_rank_parts) {
  const auto load = [&] { (void)io::load_mnist(world(), dir); };
  if (world().rank() == bad_rank)
    return meshpp_test::throws_with<meshpp::error>(load, bad_rank_parts);
  const std::string others = "meshpp: rank " + std::to_string(bad_rank) + " found bad input";
  return meshpp_test::throws_with<meshpp::error>(load, {others});
}
}  // namespace

TEST_CASE("load_mnist(comm, dir): a bad directory on one rank throws on every rank") {
  const int n = world().size();
  for (const int bad_rank : {0, n - 1}) {
    CAPTURE(bad_rank);
    const bool bad = world().rank() == bad_rank;
    {  // a missing directory
      temp_dir dir;
      REQUIRE(meshpp_test::all_ranks(write_mnist(dir)));
      const std::string where = bad ? dir / "nowhere" : dir.path.string();
      CHECK_ALL_RANKS(throws_on_every_rank(where, bad_rank, {"found neither", where}));
    }
    {  // a label that is not a class 0..9
      temp_dir dir;
      REQUIRE(meshpp_test::all_ranks(write_mnist(dir)));
      const std::string labels = dir / "train-labels-idx1-ubyte.gz";
      bytes bad_labels = pattern(12, 10, 1);
      bad_labels[7] = 10;
      REQUIRE(meshpp_test::all_ranks(!bad || write_idx_gz(labels, {12}, bad_labels)));
      CHECK_ALL_RANKS(
          throws_on_every_rank(dir.path.string(), bad_rank, {labels, "label 10 at index 7"}));
    }
  }
}

TEST_CASE("load_mnist(comm, dir): ranks that read different data all throw") {
  if (world().size() == 1) return;  // one rank cannot differ from itself
  temp_dir dir;
  const unsigned seed = world().rank() == 1 ? 4 : 3;  // rank 1's pixels differ
  REQUIRE(meshpp_test::all_ranks(write_mnist(dir, seed)));
  CHECK_ALL_RANKS(meshpp_test::throws_with<meshpp::error>(
      [&] { (void)io::load_mnist(world(), dir.path.string()); },
      {"meshpp::load_mnist: ranks read different data from "}));
}

TEST_CASE("the installed Fashion-MNIST reads as 60000 + 10000 images of 28 x 28") {
  // dataset-fashion-mnist is installed by .ci/deps: a missing directory is a failure here
  const io::mnist_data m = io::load_mnist(world(), io::default_fashion_mnist_dir);
  CHECK_ALL_RANKS(m.rows == 28 && m.cols == 28);
  CHECK_ALL_RANKS(m.train_images.dims == std::vector<std::size_t>{60000, 28, 28});
  CHECK_ALL_RANKS(m.train_labels.dims == std::vector<std::size_t>{60000});
  CHECK_ALL_RANKS(m.test_images.dims == std::vector<std::size_t>{10000, 28, 28});
  CHECK_ALL_RANKS(m.test_labels.dims == std::vector<std::size_t>{10000});
  CHECK_ALL_RANKS(m.train_images.data.size() == 60000u * 28 * 28);
  CHECK_ALL_RANKS(m.test_images.data.size() == 10000u * 28 * 28);

  // the classes are balanced: 6000 of each in training, 1000 in testing
  std::array<std::size_t, 10> train_counts{}, test_counts{};
  for (const std::uint8_t label : m.train_labels.data) ++train_counts.at(label);
  for (const std::uint8_t label : m.test_labels.data) ++test_counts.at(label);
  std::array<std::size_t, 10> six_thousand, one_thousand;
  six_thousand.fill(6000);
  one_thousand.fill(1000);
  CHECK_ALL_RANKS(train_counts == six_thousand);
  CHECK_ALL_RANKS(test_counts == one_thousand);
}

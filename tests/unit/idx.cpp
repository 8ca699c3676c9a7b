// IDX files: small files written raw and gzip'd read back exactly, whatever their names;
// every malformed file throws meshpp::error naming the file and its defect; load_mnist finds
// <name> or <name>.gz and checks that the four files fit together.
#include <meshpp/io/idx.hpp>

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"
#include "testing.hpp"

namespace io = meshpp;  // the IDX reader lives in meshpp itself
namespace fs = std::filesystem;
using bytes = std::vector<std::uint8_t>;

using meshpp_test::temp_dir;

namespace {

// write_file(path, content, gzip): the bytes as they are, or gzip-compressed by zlib
void write_file(const std::string& path, const bytes& content, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    if (!content.empty()) {
      REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) ==
              static_cast<int>(content.size()));
    }
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(content.data()),
            static_cast<std::streamsize>(content.size()));
    REQUIRE(f.good());
  }
}

bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// idx_file(dims, data): the bytes of an IDX file of unsigned bytes
bytes idx_file(const std::vector<std::size_t>& dims, const bytes& data) {
  bytes out{0x00, 0x00, 0x08, static_cast<std::uint8_t>(dims.size())};
  for (const std::size_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

bytes counting(std::size_t n, unsigned modulo = 256) {
  bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>((i * 7 + 3) % modulo);
  return out;
}

bool throws(const std::string& path, std::initializer_list<std::string_view> parts) {
  return meshpp_test::throws_with<meshpp::error>([&] { (void)io::read_idx(path); }, parts);
}

// Writes a complete small MNIST-shaped set into dir: n_train and n_test images of
// rows x cols, labels 0..9; each file gzip'd when gzip is true.
void write_mnist(const temp_dir& dir, std::size_t n_train, std::size_t n_test, std::size_t rows,
                 std::size_t cols, bool gzip) {
  const std::string suffix = gzip ? ".gz" : "";
  write_file(dir / ("train-images-idx3-ubyte" + suffix),
             idx_file({n_train, rows, cols}, counting(n_train * rows * cols)), gzip);
  write_file(dir / ("train-labels-idx1-ubyte" + suffix), idx_file({n_train}, counting(n_train, 10)),
             gzip);
  write_file(dir / ("t10k-images-idx3-ubyte" + suffix),
             idx_file({n_test, rows, cols}, counting(n_test * rows * cols)), gzip);
  write_file(dir / ("t10k-labels-idx1-ubyte" + suffix), idx_file({n_test}, counting(n_test, 10)),
             gzip);
}

}  // namespace

TEST_CASE("read_idx reads raw and gzip'd files exactly, of 1 to 4 dims") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::vector<std::vector<std::size_t>> shapes{
      {7}, {3, 5}, {4, 3, 2}, {2, 3, 1, 4}, {300, 28, 28}};
  for (const bool gzip : {false, true}) {
    for (const auto& dims : shapes) {
      std::size_t n = 1;
      for (const std::size_t d : dims) n *= d;
      const bytes data = counting(n);
      std::string name = std::to_string(dims.size());  // (not "a" + ...: GCC 12's -Wrestrict)
      name += gzip ? "-dims.gz" : "-dims";
      const std::string path = dir / name;
      write_file(path, idx_file(dims, data), gzip);
      CAPTURE(path);
      const io::idx_array a = io::read_idx(path);
      CHECK(a.dims == dims);
      CHECK(a.data == data);
    }
  }
}

TEST_CASE("read_idx tells gzip from raw by the first bytes, not by the name") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const bytes data = counting(24);
  write_file(dir / "raw.gz", idx_file({2, 3, 4}, data), false);
  write_file(dir / "compressed", idx_file({2, 3, 4}, data), true);
  REQUIRE(read_file(dir / "compressed").at(0) == 0x1f);
  REQUIRE(read_file(dir / "compressed").at(1) == 0x8b);
  CHECK(io::read_idx(dir / "raw.gz") == io::idx_array{{2, 3, 4}, data});
  CHECK(io::read_idx(dir / "compressed") == io::idx_array{{2, 3, 4}, data});
}

TEST_CASE("read_idx reads a dim of size 0 as no data") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  write_file(dir / "empty", idx_file({0, 28, 28}, {}), false);
  CHECK(io::read_idx(dir / "empty") == io::idx_array{{0, 28, 28}, {}});
}

TEST_CASE("read_idx: every malformed file throws, naming the file and the defect") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  for (const bool gzip : {false, true}) {
    CAPTURE(gzip);
    const std::string path = dir / (gzip ? "bad.gz" : "bad");
    const auto write = [&](const bytes& content) { write_file(path, content, gzip); };

    write({0x00, 0x01, 0x08, 0x01, 0, 0, 0, 1, 9});
    CHECK(throws(path, {"meshpp::read_idx: ", path + ": bad magic number 00 01 08 01"}));

    write({});
    CHECK(throws(path, {path, "truncated: expected a 4-byte magic number, found 0 bytes"}));
    write({0x00, 0x00, 0x08});
    CHECK(throws(path, {path, "truncated: expected a 4-byte magic number, found 3 bytes"}));

    bytes float_type = idx_file({2}, {1, 2});
    float_type[2] = 0x0d;
    write(float_type);
    CHECK(throws(path, {path, "data type 0x0d is not unsigned byte (0x08)"}));

    write({0x00, 0x00, 0x08, 0x00});
    CHECK(throws(path, {path, "bad number of dims 0: expected 1 to 4"}));
    bytes five = idx_file({1, 1, 1, 1, 1}, {7});
    write(five);
    CHECK(throws(path, {path, "bad number of dims 5: expected 1 to 4"}));

    bytes short_dims = idx_file({2, 3, 4}, {});
    short_dims.resize(4 + 5);
    write(short_dims);
    CHECK(throws(path, {path, "truncated: expected 3 dim sizes (12 bytes), found 5 bytes"}));

    bytes truncated = idx_file({2, 3, 4}, counting(24));
    truncated.resize(truncated.size() - 14);
    write(truncated);
    CHECK(throws(path, {path, "truncated: expected 24 bytes of data, found 10"}));

    // a header claiming 4 x 2^32-1 bytes: not an allocation of terabytes, an error
    write({0x00, 0x00, 0x08, 0x01, 0xff, 0xff, 0xff, 0xff, 1, 2, 3});
    CHECK(throws(path, {path, "truncated: expected 4294967295 bytes of data, found 3"}));

    bytes too_big = {0x00, 0x00, 0x08, 0x03};
    for (int i = 0; i < 12; ++i) too_big.push_back(0xff);
    write(too_big);
    CHECK(throws(path, {path, "overflow std::size_t"}));

    bytes trailing = idx_file({2, 3, 4}, counting(24));
    trailing.insert(trailing.end(), {1, 2, 3});
    write(trailing);
    CHECK(
        throws(path, {path, "trailing bytes: expected 24 bytes of data, found 3 more after them"}));
  }
}

TEST_CASE("read_idx: a missing file names itself and where Fashion-MNIST comes from") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  const std::string path = dir / "train-images-idx3-ubyte.gz";
  CHECK(throws(path, {"meshpp::read_idx: ", path + ": no such file",
                      "Fashion-MNIST: install Debian's package dataset-fashion-mnist (files "
                      "under /usr/share/datasets/fashion-mnist), or pass --data DIR with "
                      "MNIST-format IDX files"}));
  CHECK(throws(dir.path.string(), {dir.path.string(), "is a directory"}));
}

TEST_CASE("read_idx: corrupt or cut gzip streams throw") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  // pixels that barely compress, so that half the stream holds part of the data
  bytes noise(2000);
  std::uint32_t state = 12345;
  for (std::uint8_t& b : noise)
    b = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
  const std::string good = dir / "good.gz";
  write_file(good, idx_file({20, 10, 10}, noise), true);
  REQUIRE(io::read_idx(good) == io::idx_array{{20, 10, 10}, noise});
  const bytes compressed = read_file(good);
  REQUIRE(compressed.size() > 1000);
  const std::string path = dir / "bad.gz";
  const auto write = [&](const bytes& content) { write_file(path, content, false); };

  // cut inside the deflate data: too few bytes come out
  write(bytes(compressed.begin(), compressed.begin() + compressed.size() / 2));
  CHECK(throws(path, {path, "truncated: expected 2000 bytes of data, found ",
                      "(the gzip stream ends early: unexpected end of file)"}));
  // cut inside gzip's own 10-byte header: no bytes at all come out
  write(bytes(compressed.begin(), compressed.begin() + 6));
  CHECK(throws(path, {path, "truncated: expected a 4-byte magic number, found 0 bytes"}));

  // cut in the 8-byte trailer (crc32, length): all the data, but no proof it is right
  write(bytes(compressed.begin(), compressed.end() - 3));
  CHECK(throws(path, {path, "truncated gzip stream after the data"}));

  // a wrong crc32 in the trailer
  bytes bad_crc = compressed;
  bad_crc[bad_crc.size() - 8] ^= 0xff;
  write(bad_crc);
  CHECK(throws(path, {path, "corrupt gzip data: incorrect data check"}));

  // gzip's magic, then nonsense
  write({0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff});
  CHECK(throws(path, {"meshpp::read_idx: ", path + ": corrupt gzip data: "}));
}

TEST_CASE("load_mnist reads the four files, raw or gzip'd") {
  for (const bool gzip : {false, true}) {
    CAPTURE(gzip);
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, gzip);
    const io::mnist_data m = io::load_mnist(dir.path.string());
    CHECK(m.rows == 4);
    CHECK(m.cols == 3);
    CHECK(m.train_images == io::idx_array{{12, 4, 3}, counting(144)});
    CHECK(m.train_labels == io::idx_array{{12}, counting(12, 10)});
    CHECK(m.test_images == io::idx_array{{5, 4, 3}, counting(60)});
    CHECK(m.test_labels == io::idx_array{{5}, counting(5, 10)});
  }
}

TEST_CASE("load_mnist prefers <name> to <name>.gz when both exist") {
  temp_dir dir;
  REQUIRE(!dir.path.empty());
  write_mnist(dir, 12, 5, 4, 3, /*gzip*/ true);
  write_file(dir / "t10k-labels-idx1-ubyte", idx_file({5}, {9, 9, 9, 9, 9}), false);
  CHECK(io::load_mnist(dir.path.string()).test_labels == io::idx_array{{5}, {9, 9, 9, 9, 9}});
}

TEST_CASE("load_mnist: files that do not fit together throw, naming the file") {
  const auto load_throws = [](const temp_dir& dir, std::initializer_list<std::string_view> parts) {
    return meshpp_test::throws_with<meshpp::error>([&] { (void)io::load_mnist(dir.path.string()); },
                                                   parts);
  };

  SUBCASE("a missing file names both paths tried and the package") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, false);
    fs::remove(dir / "train-labels-idx1-ubyte");
    CHECK(load_throws(dir, {"meshpp::load_mnist: found neither ", dir / "train-labels-idx1-ubyte",
                            dir / "train-labels-idx1-ubyte.gz",
                            "install Debian's package dataset-fashion-mnist"}));
  }
  SUBCASE("a malformed file is read_idx's error") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, false);
    write_file(dir / "t10k-images-idx3-ubyte", idx_file({5, 4, 3}, counting(59)), false);
    CHECK(load_throws(dir, {"meshpp::read_idx: ", dir / "t10k-images-idx3-ubyte",
                            "truncated: expected 60 bytes of data, found 59"}));
  }
  SUBCASE("label and image counts differ") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, true);
    write_file(dir / "train-labels-idx1-ubyte.gz", idx_file({11}, counting(11, 10)), true);
    CHECK(load_throws(dir, {dir / "train-labels-idx1-ubyte.gz", ": 11 labels, but ",
                            dir / "train-images-idx3-ubyte.gz", " has 12 images"}));
  }
  SUBCASE("images are not 3-D") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, false);
    write_file(dir / "train-images-idx3-ubyte", idx_file({12, 12}, counting(144)), false);
    CHECK(load_throws(dir, {dir / "train-images-idx3-ubyte",
                            "images must have 3 dims [n, rows, cols], found [12, 12]"}));
  }
  SUBCASE("labels are not 1-D") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, false);
    write_file(dir / "t10k-labels-idx1-ubyte", idx_file({5, 1}, counting(5, 10)), false);
    CHECK(load_throws(
        dir, {dir / "t10k-labels-idx1-ubyte", "labels must have 1 dim [n], found [5, 1]"}));
  }
  SUBCASE("train and test images differ in size") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, false);
    write_file(dir / "t10k-images-idx3-ubyte", idx_file({5, 3, 4}, counting(60)), false);
    CHECK(load_throws(dir, {dir / "t10k-images-idx3-ubyte", "images are 3 x 4, but ",
                            dir / "train-images-idx3-ubyte", " has 4 x 3"}));
  }
  SUBCASE("a label that is not a class 0..9") {
    temp_dir dir;
    REQUIRE(!dir.path.empty());
    write_mnist(dir, 12, 5, 4, 3, false);
    bytes labels = counting(12, 10);
    labels[7] = 10;
    labels[9] = 255;
    write_file(dir / "train-labels-idx1-ubyte", idx_file({12}, labels), false);
    CHECK(load_throws(
        dir, {dir / "train-labels-idx1-ubyte", "label 10 at index 7 is not a class 0..9"}));
  }
}

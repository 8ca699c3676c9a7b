// meshpp/io/idx.hpp — reading MNIST-format IDX files, gzip-compressed or raw.
//
//   auto images = read_idx(dir + "/train-images-idx3-ubyte.gz");  // dims {60000, 28, 28}
//   auto mnist  = load_mnist(comm, default_fashion_mnist_dir);  // all four, every rank
//
// An IDX file (LeCun's MNIST format) is the bytes 00 00 <type> <number of dims>, then each dim
// size as a big-endian 32-bit integer, then the elements in row-major order and nothing after.
// Only type 0x08 (unsigned byte) is read: MNIST and Fashion-MNIST images and labels use it.
// A file is gzip-compressed when it starts with gzip's magic bytes 1f 8b, whatever its name;
// zlib decompresses it (Debian's dataset-fashion-mnist ships the files gzip'd). Every defect
// (bad header, too few or too many bytes, corrupt gzip) throws meshpp::error naming the file.
//
// Each rank reads its own node's file system, so load_mnist(comm, dir) fails together:
// agree_or_throw turns a problem on any rank into an error on every rank, and a checksum
// compared over all ranks makes sure they all read the same data.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "meshpp/core/agree.hpp"
#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp {

/// @brief The contents of one IDX file of unsigned bytes: its dim sizes and its elements in
/// row-major order (data.size() is the product of dims).
// idx_array{dims, data}
struct idx_array {
  std::vector<std::size_t> dims;
  std::vector<std::uint8_t> data;

  bool operator==(const idx_array&) const = default;
};

// read_idx(path) -> idx_array: reads one IDX file, gzip'd or raw (told apart by its first
// bytes). Throws meshpp::error naming the file and the defect.
inline idx_array read_idx(const std::string& path);

// default_fashion_mnist_dir: where Debian's package dataset-fashion-mnist puts the files
inline constexpr const char* default_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

/// @brief MNIST or Fashion-MNIST: images [n, rows, cols] and labels [n] (classes 0..9) for
/// training and for testing, all images rows x cols.
// mnist_data{train_images, train_labels, test_images, test_labels, rows, cols}
struct mnist_data {
  idx_array train_images, train_labels, test_images, test_labels;
  std::size_t rows = 0, cols = 0;

  bool operator==(const mnist_data&) const = default;
};

// load_mnist(dir) -> mnist_data: reads train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte from dir, each as <name> or <name>.gz
// (<name> when both exist), and checks that they fit together. Throws meshpp::error.
inline mnist_data load_mnist(const std::string& dir);

// load_mnist(comm, dir) -> mnist_data: collective; every rank reads dir (file systems may be
// per node) and gets the data, or every rank throws meshpp::error: if any rank fails to
// read, or if ranks read different data.
inline mnist_data load_mnist(const boost::mpi::communicator& comm, const std::string& dir);

// --- implementation ------------------------------------------------------------------------

namespace detail {

// What to do when the files are missing, said wherever a file is missing.
inline constexpr const char* mnist_hint =
    "Fashion-MNIST: install Debian's package dataset-fashion-mnist (files under "
    "/usr/share/datasets/fashion-mnist), or pass --data DIR with MNIST-format IDX files";

inline std::string hex_bytes(const std::uint8_t* b, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ' ';
    out += digits[b[i] >> 4];
    out += digits[b[i] & 0xf];
  }
  return out;
}

inline std::string dims_text(const std::vector<std::size_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) meshpp::detail::append(out, i ? ", " : "", dims[i]);
  return out + "]";
}

// The bytes of one file, decompressed when it starts with gzip's magic. read() returns fewer
// bytes than asked only at the end of the data; every failure throws. (zlib, like gunzip,
// ignores bytes after the last gzip member; what is inside is checked against the IDX sizes
// and gzip's crc32.)
class byte_source {
 public:
  explicit byte_source(const std::string& path) : path_(path) {
    std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
    if (!file) {
      const int code = errno;
      if (code == ENOENT) fail("no such file. ", mnist_hint);
      fail("cannot open: ", std::strerror(code));
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) fail("is a directory, not an IDX file");
    std::uint8_t magic[2] = {0, 0};
    const std::size_t n = std::fread(magic, 1, 2, file.get());
    gzip_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (!gzip_) {
      std::rewind(file.get());
      file_ = std::move(file);
      return;
    }
    file.reset();
    gz_.reset(gzopen(path.c_str(), "rb"));
    if (!gz_) fail("cannot open with zlib: ", std::strerror(errno));
    gzbuffer(gz_.get(), 1u << 18);
  }

  std::size_t read(std::uint8_t* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const std::size_t step = read_some(out + got, std::min<std::size_t>(n - got, 1u << 30));
      if (step == 0) break;
      got += step;
    }
    return got;
  }

  // True once a gzip stream has ended before its end-of-stream marker and checksum.
  bool gzip_cut_short() const { return gzip_cut_short_; }
  const std::string& gzip_message() const { return gzip_message_; }

  // truncated(pieces...): too few bytes, and why when zlib knows (a gzip stream cut short)
  template <class... P>
  [[noreturn]] void truncated(const P&... pieces) const {
    if (gzip_cut_short_) {
      fail("truncated: ", pieces..., " (the gzip stream ends early: ", gzip_message_, ")");
    }
    fail("truncated: ", pieces...);
  }

  template <class... P>
  [[noreturn]] void fail(const P&... pieces) const {
    std::string message;
    meshpp::detail::append(message, "meshpp::read_idx: ", path_, ": ", pieces...);
    throw error(message);
  }

 private:
  struct file_closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  struct gz_closer {
    void operator()(gzFile f) const { gzclose(f); }
  };

  std::size_t read_some(std::uint8_t* out, std::size_t n) {
    if (!gzip_) {
      const std::size_t got = std::fread(out, 1, n, file_.get());
      if (got < n && std::ferror(file_.get())) fail("read error: ", std::strerror(errno));
      return got;
    }
    const int got = gzread(gz_.get(), out, static_cast<unsigned>(n));
    int code = Z_OK;
    std::string_view message = gzerror(gz_.get(), &code);
    if (message.starts_with(path_ + ": ")) message.remove_prefix(path_.size() + 2);  // zlib's
    if (got < 0 || (code != Z_OK && code != Z_BUF_ERROR)) {
      if (code == Z_ERRNO) fail("read error: ", std::strerror(errno));
      fail("corrupt gzip data: ", message);
    }
    if (code == Z_BUF_ERROR) {  // zlib's "unexpected end of file": the stream was cut
      gzip_cut_short_ = true;
      gzip_message_ = message;
    }
    return static_cast<std::size_t>(got);
  }

  std::string path_;
  bool gzip_ = false;
  bool gzip_cut_short_ = false;
  std::string gzip_message_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::unique_ptr<std::remove_pointer_t<gzFile>, gz_closer> gz_;
};

// dir/name when it exists, else dir/name.gz when that exists; throws naming both otherwise.
inline std::string find_mnist_file(const std::string& dir, const std::string& name) {
  const std::filesystem::path raw = std::filesystem::path(dir) / name;
  const std::filesystem::path gz = std::filesystem::path(dir) / (name + ".gz");
  std::error_code ec;
  if (std::filesystem::exists(raw, ec)) return raw.string();
  if (std::filesystem::exists(gz, ec)) return gz.string();
  std::string message;
  meshpp::detail::append(message, "meshpp::load_mnist: found neither ", raw.string(), " nor ",
                         gz.string(), ". ", mnist_hint);
  throw error(message);
}

template <class... P>
[[noreturn]] void mnist_fail(const std::string& path, const P&... pieces) {
  std::string message;
  meshpp::detail::append(message, "meshpp::load_mnist: ", path, ": ", pieces...);
  throw error(message);
}

// Checks one images/labels pair; returns n.
inline std::size_t check_mnist_pair(const idx_array& images, const std::string& images_path,
                                    const idx_array& labels, const std::string& labels_path) {
  if (images.dims.size() != 3) {
    mnist_fail(images_path, "images must have 3 dims [n, rows, cols], found ",
               dims_text(images.dims));
  }
  if (labels.dims.size() != 1) {
    mnist_fail(labels_path, "labels must have 1 dim [n], found ", dims_text(labels.dims));
  }
  if (images.dims[0] != labels.dims[0]) {
    mnist_fail(labels_path, labels.dims[0], " labels, but ", images_path, " has ", images.dims[0],
               " images");
  }
  const auto bad = std::find_if(labels.data.begin(), labels.data.end(),
                                [](std::uint8_t label) { return label > 9; });
  if (bad != labels.data.end()) {
    mnist_fail(labels_path, "label ", static_cast<unsigned>(*bad), " at index ",
               static_cast<std::size_t>(bad - labels.data.begin()), " is not a class 0..9");
  }
  return images.dims[0];
}

// crc32 over every dim and byte of a: equal arrays give equal checksums on every rank.
inline uLong checksum(uLong crc, const idx_array& a) {
  for (const std::size_t d : a.dims) {
    const std::uint64_t d64 = d;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(&d64), sizeof d64);
  }
  for (std::size_t at = 0; at < a.data.size();) {
    const std::size_t n = std::min<std::size_t>(a.data.size() - at, 1u << 30);
    crc = crc32(crc, a.data.data() + at, static_cast<uInt>(n));
    at += n;
  }
  return crc;
}

}  // namespace detail

inline idx_array read_idx(const std::string& path) {
  detail::byte_source source(path);

  std::uint8_t magic[4] = {0, 0, 0, 0};
  const std::size_t magic_bytes = source.read(magic, 4);
  if (magic_bytes < 4) {
    source.truncated("expected a 4-byte magic number, found ", magic_bytes, " bytes");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    source.fail("bad magic number ", detail::hex_bytes(magic, 4),
                ": an IDX file starts with 00 00 <type> <number of dims>");
  }
  if (magic[2] != 0x08) {
    source.fail("data type 0x", detail::hex_bytes(magic + 2, 1),
                " is not unsigned byte (0x08), the only type read");
  }
  const std::size_t ndims = magic[3];
  if (ndims < 1 || ndims > 4) source.fail("bad number of dims ", ndims, ": expected 1 to 4");

  idx_array out;
  std::array<std::uint8_t, 16> sizes{};
  const std::size_t size_bytes = source.read(sizes.data(), 4 * ndims);
  if (size_bytes < 4 * ndims) {
    source.truncated("expected ", ndims, " dim sizes (", 4 * ndims, " bytes), found ", size_bytes,
                     " bytes");
  }
  for (std::size_t i = 0; i < ndims; ++i) {  // big-endian 32-bit sizes
    const std::uint8_t* b = sizes.data() + 4 * i;
    out.dims.push_back((std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16) |
                       (std::size_t{b[2]} << 8) | std::size_t{b[3]});
  }
  std::size_t expected = 0;
  if (std::find(out.dims.begin(), out.dims.end(), std::size_t{0}) == out.dims.end()) {
    expected = 1;
    for (const std::size_t d : out.dims) {
      if (expected > std::numeric_limits<std::size_t>::max() / d) {
        source.fail("dim sizes ", detail::dims_text(out.dims), " overflow std::size_t");
      }
      expected *= d;
    }
  }

  // Grow as the bytes arrive, so a header claiming terabytes fails as truncated, not as
  // an allocation failure.
  std::size_t got = 0;
  while (got < expected) {
    if (got == out.data.size()) {
      out.data.resize(std::min(expected, std::max<std::size_t>(2 * got, std::size_t{1} << 20)));
    }
    const std::size_t n = source.read(out.data.data() + got, out.data.size() - got);
    if (n == 0) break;
    got += n;
  }
  out.data.resize(got);
  if (got < expected) {
    source.truncated("expected ", expected, " bytes of data, found ", got);
  }

  std::size_t extra = 0;
  std::array<std::uint8_t, 4096> scratch;
  for (std::size_t n; (n = source.read(scratch.data(), scratch.size())) > 0;) extra += n;
  if (extra > 0) {
    source.fail("trailing bytes: expected ", expected, " bytes of data, found ", extra,
                " more after them");
  }
  if (source.gzip_cut_short()) {
    source.fail("truncated gzip stream after the data: ", source.gzip_message());
  }
  return out;
}

inline mnist_data load_mnist(const std::string& dir) {
  const std::string train_images = detail::find_mnist_file(dir, "train-images-idx3-ubyte");
  const std::string train_labels = detail::find_mnist_file(dir, "train-labels-idx1-ubyte");
  const std::string test_images = detail::find_mnist_file(dir, "t10k-images-idx3-ubyte");
  const std::string test_labels = detail::find_mnist_file(dir, "t10k-labels-idx1-ubyte");

  mnist_data out;
  out.train_images = read_idx(train_images);
  out.train_labels = read_idx(train_labels);
  out.test_images = read_idx(test_images);
  out.test_labels = read_idx(test_labels);
  detail::check_mnist_pair(out.train_images, train_images, out.train_labels, train_labels);
  detail::check_mnist_pair(out.test_images, test_images, out.test_labels, test_labels);

  out.rows = out.train_images.dims[1];
  out.cols = out.train_images.dims[2];
  if (out.test_images.dims[1] != out.rows || out.test_images.dims[2] != out.cols) {
    detail::mnist_fail(test_images, "images are ", out.test_images.dims[1], " x ",
                       out.test_images.dims[2], ", but ", train_images, " has ", out.rows, " x ",
                       out.cols);
  }
  return out;
}

inline mnist_data load_mnist(const boost::mpi::communicator& comm, const std::string& dir) {
  mnist_data out;
  std::string problem;
  try {
    out = load_mnist(dir);
  } catch (const std::exception& e) {  // std::bad_alloc too: no rank may leave alone
    problem = e.what();
    if (problem.empty()) meshpp::detail::append(problem, "meshpp::load_mnist: ", dir, ": failed");
  }
  agree_or_throw(comm, problem);

  // Same checksum on every rank iff max(crc) and max(~crc) (= ~min(crc)) are both this rank's.
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const idx_array* a :
       {&out.train_images, &out.train_labels, &out.test_images, &out.test_labels}) {
    crc = detail::checksum(crc, *a);
  }
  const std::array<unsigned long, 2> mine{crc, ~crc};
  std::array<unsigned long, 2> most = mine;
  meshpp::detail::allreduce_values(MPI_Comm(comm), most.data(), 2, MPI_MAX,
                                   "load_mnist's checksum");
  if (most != mine) {
    std::string message;
    meshpp::detail::append(message, "meshpp::load_mnist: ranks read different data from ", dir,
                           " (a per-node file system with different files?)");
    throw error(message);
  }
  return out;
}

}  // namespace meshpp

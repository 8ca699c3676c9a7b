// meshpp/io/detail/hdf5.hpp — the HDF5 C API as checkpoints use it: handles closed by their
// destructors, every call's result checked into meshpp::error naming the file, the object, the
// call and HDF5's own message, attributes, hyperslabs of a rank's block, MPI-IO access, and
// the checksum of a dataset's global array.
//
// Why a wrapper of its own: HDF5 reports failure as a negative return and prints its error
// stack; meshpp wants an exception that every rank can throw alike, with HDF5's text in it.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#ifndef H5_HAVE_PARALLEL
#error \
    "meshpp/io/detail/hdf5.hpp needs a parallel HDF5 (Debian: libhdf5-openmpi-dev; link meshpp::hdf5)"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/state.hpp"

namespace meshpp::detail::hdf5 {

// errors_off: HDF5's automatic printing of its error stack, off while meshpp calls it (meshpp
// reports HDF5's message in its own error instead)
class errors_off {
 public:
  errors_off() {
    H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~errors_off() { H5Eset_auto2(H5E_DEFAULT, function_, data_); }
  errors_off(const errors_off&) = delete;
  errors_off& operator=(const errors_off&) = delete;

 private:
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
};

// hdf5_message(): the innermost message of HDF5's error stack ("unable to open file: ...")
inline std::string hdf5_message() {
  std::string out;
  auto innermost = [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
    auto& s = *static_cast<std::string*>(data);
    s = std::string(e->func_name ? e->func_name : "") + ": " + (e->desc ? e->desc : "");
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost, &out);
  return out.empty() ? std::string("no HDF5 message") : out;
}

// context: who calls (meshpp::save('run.h5')) and on what object, for error messages
struct context {
  std::string who;
  std::string object;
  [[noreturn]] void fail(const std::string& what) const {
    throw error(who + ": " + (object.empty() ? std::string() : "'" + object + "': ") + what);
  }
  // check(r, call): r, or an error naming the call and HDF5's message if r < 0
  template <class R>
  R check(R r, const char* call) const {
    if (r < 0) fail(std::string(call) + " failed (" + hdf5_message() + ")");
    return r;
  }
};

// handle: an HDF5 identifier closed by its close function at the end of its scope
class handle {
 public:
  handle() = default;
  handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  handle(handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  handle& operator=(handle&& o) noexcept {
    reset();
    id_ = std::exchange(o.id_, H5I_INVALID_HID);
    close_ = o.close_;
    return *this;
  }
  ~handle() { reset(); }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  // close(ctx, call): closes now, checking the result (a file's close writes it out)
  void close(const context& c, const char* call) {
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id >= 0) c.check(close_(id), call);
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// hdf5_types_of(e): the HDF5 types of element type e, in the file (little-endian, fixed so a
// file reads the same on any machine) and in memory
struct hdf5_types {
  hid_t file;
  hid_t memory;
};
inline hdf5_types hdf5_types_of(element_type e) {
  switch (e) {
    case element_type::float64:
      return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
    case element_type::int32:
      return {H5T_STD_I32LE, H5T_NATIVE_INT32};
    case element_type::int64:
      return {H5T_STD_I64LE, H5T_NATIVE_INT64};
    case element_type::float32:
      break;
  }
  return {H5T_IEEE_F32LE, H5T_NATIVE_FLOAT};
}

// element_type_of_dataset(type): the element_type an HDF5 type stores, or none
inline std::optional<element_type> element_type_of_file(hid_t type) {
  const H5T_class_t c = H5Tget_class(type);
  const std::size_t size = H5Tget_size(type);
  if (c == H5T_FLOAT && size == 4) return element_type::float32;
  if (c == H5T_FLOAT && size == 8) return element_type::float64;
  if (c == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2 && size == 4) return element_type::int32;
  if (c == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2 && size == 8) return element_type::int64;
  return std::nullopt;
}

// describe_type(type): "float32", "uint8", "string", ... for messages
inline std::string describe_type(hid_t type) {
  if (auto e = element_type_of_file(type)) return element_type_name(*e);
  const H5T_class_t c = H5Tget_class(type);
  const std::string bits = std::to_string(8 * H5Tget_size(type));
  if (c == H5T_INTEGER) return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits;
  if (c == H5T_FLOAT) return "float" + bits;
  if (c == H5T_STRING) return "string";
  return "an HDF5 type of class " + std::to_string(static_cast<int>(c));
}

// exists(loc, path): every link of path exists (H5Lexists checks the last one only)
inline bool exists(hid_t loc, const std::string& path, const context& c) {
  for (std::size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string prefix = path.substr(0, at);
    if (!prefix.empty() && prefix != "/" &&
        c.check(H5Lexists(loc, prefix.c_str(), H5P_DEFAULT), "H5Lexists") <= 0)
      return false;
    if (at == std::string::npos) return true;
  }
}

inline handle scalar_space(const context& c) {
  return {c.check(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose};
}
inline handle simple_space(const std::vector<hsize_t>& dims, const context& c) {
  if (dims.empty()) return scalar_space(c);
  return {c.check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                  "H5Screate_simple"),
          H5Sclose};
}
inline handle string_type(std::size_t length, const context& c) {
  handle t(c.check(H5Tcopy(H5T_C_S1), "H5Tcopy"), H5Tclose);
  c.check(H5Tset_size(t, length + 1), "H5Tset_size");  // null-terminated
  c.check(H5Tset_strpad(t, H5T_STR_NULLTERM), "H5Tset_strpad");
  return t;
}

// write_attribute(obj, name, value): int64, float64, a string or an array of strings
inline void write_attribute(hid_t obj, const std::string& name, std::int64_t value,
                            const context& c) {
  handle space = scalar_space(c);
  handle a(c.check(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                   "H5Acreate2"),
           H5Aclose);
  c.check(H5Awrite(a, H5T_NATIVE_INT64, &value), "H5Awrite");
}
inline void write_attribute(hid_t obj, const std::string& name, double value, const context& c) {
  handle space = scalar_space(c);
  handle a(c.check(H5Acreate2(obj, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT),
                   "H5Acreate2"),
           H5Aclose);
  c.check(H5Awrite(a, H5T_NATIVE_DOUBLE, &value), "H5Awrite");
}
inline void write_attribute(hid_t obj, const std::string& name,
                            const std::vector<std::string>& values, bool scalar, const context& c) {
  std::size_t longest = 0;
  for (const auto& v : values) longest = std::max(longest, v.size());
  handle type = string_type(longest, c);
  handle space = scalar ? scalar_space(c) : simple_space({values.size()}, c);
  std::vector<char> buffer(std::max<std::size_t>(1, values.size()) * (longest + 1), '\0');
  for (std::size_t i = 0; i < values.size(); ++i)
    std::memcpy(buffer.data() + i * (longest + 1), values[i].data(), values[i].size());
  handle a(
      c.check(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2"),
      H5Aclose);
  c.check(H5Awrite(a, type, buffer.data()), "H5Awrite");
}
inline void write_attribute(hid_t obj, const std::string& name, const std::string& value,
                            const context& c) {
  write_attribute(obj, name, std::vector<std::string>{value}, true, c);
}

// open_attribute(obj, name, c): the attribute, or an error saying it is missing
inline handle open_attribute(hid_t obj, const std::string& name, const context& c) {
  if (c.check(H5Aexists(obj, name.c_str()), "H5Aexists") <= 0)
    c.fail("attribute '" + name + "' is missing");
  return {c.check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "H5Aopen"), H5Aclose};
}

// read_number<T>(obj, name): an int64 or float64 scalar attribute; an attribute of the other
// class, or not a scalar, is an error
template <class T>
T read_number(hid_t obj, const std::string& name, const context& c) {
  handle a = open_attribute(obj, name, c);
  handle type(c.check(H5Aget_type(a), "H5Aget_type"), H5Tclose);
  handle space(c.check(H5Aget_space(a), "H5Aget_space"), H5Sclose);
  const H5T_class_t want = std::is_integral_v<T> ? H5T_INTEGER : H5T_FLOAT;
  if (H5Tget_class(type) != want ||
      c.check(H5Sget_simple_extent_npoints(space), "H5Sget_simple_extent_npoints") != 1)
    c.fail("attribute '" + name + "' is " + describe_type(type) + ", not one " +
           (std::is_integral_v<T> ? "integer" : "floating-point number"));
  T value{};
  c.check(H5Aread(a, std::is_integral_v<T> ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, &value),
          "H5Aread");
  return value;
}

// read_strings(obj, name): a fixed-length string attribute (one or an array)
inline std::vector<std::string> read_strings(hid_t obj, const std::string& name, const context& c) {
  handle a = open_attribute(obj, name, c);
  handle type(c.check(H5Aget_type(a), "H5Aget_type"), H5Tclose);
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) != 0)
    c.fail("attribute '" + name + "' is " + describe_type(type) + ", not fixed-length strings");
  handle space(c.check(H5Aget_space(a), "H5Aget_space"), H5Sclose);
  const auto n = static_cast<std::size_t>(
      c.check(H5Sget_simple_extent_npoints(space), "H5Sget_simple_extent_npoints"));
  const std::size_t size = H5Tget_size(type);
  std::vector<char> buffer(std::max<std::size_t>(1, n) * size + 1, '\0');
  if (n > 0) c.check(H5Aread(a, type, buffer.data()), "H5Aread");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) {
    const char* s = buffer.data() + i * size;
    out.emplace_back(s, strnlen(s, size));
  }
  return out;
}

inline std::string joined(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + "]";
}
inline std::string joined(const std::vector<std::uint64_t>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// select_block(space, block, selected): this rank's hyperslab of the dataset's space, or
// nothing (a rank that is not the writer of a replicated block, or an empty block)
inline void select_block(hid_t space, const block_view& b, bool selected, const context& c) {
  bool empty = false;
  for (auto e : b.local_shape) empty = empty || e == 0;
  if (!selected || empty) {
    c.check(H5Sselect_none(space), "H5Sselect_none");
  } else if (b.local_shape.empty()) {
    c.check(H5Sselect_all(space), "H5Sselect_all");
  } else {
    const std::vector<hsize_t> start(b.offsets.begin(), b.offsets.end());
    const std::vector<hsize_t> count(b.local_shape.begin(), b.local_shape.end());
    c.check(
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
        "H5Sselect_hyperslab");
  }
}

// memory_space(block, selected): the rank's block in memory, all or nothing selected
inline handle memory_space(const block_view& b, bool selected, const context& c) {
  std::vector<hsize_t> local(b.local_shape.begin(), b.local_shape.end());
  handle space = simple_space(local, c);
  bool empty = false;
  for (auto e : local) empty = empty || e == 0;
  if (!selected || empty) c.check(H5Sselect_none(space), "H5Sselect_none");
  return space;
}

// parallel_access(comm): a file-access property list for MPI-IO over comm
inline handle parallel_access(const boost::mpi::communicator& comm, const context& c) {
  handle fapl(c.check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate"), H5Pclose);
  c.check(H5Pset_fapl_mpio(fapl, static_cast<MPI_Comm>(comm), MPI_INFO_NULL), "H5Pset_fapl_mpio");
  // the file format of HDF5 1.8 (read by 1.8 and later): its superblock, object headers and
  // heaps carry checksums, so a corrupt attribute or header is an error, not a wrong value
  c.check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V18), "H5Pset_libver_bounds");
  return fapl;
}
inline handle collective_transfer(const context& c) {
  handle dxpl(c.check(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate"), H5Pclose);
  c.check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  return dxpl;
}

inline std::string path_in(const std::string& group, std::string_view name) {
  return "/" + group + "/" + std::string(name);
}

// block_checksum(b): the sum, modulo 2^64, of a hash of (global linear index, bits) over the
// elements of this rank's block when it is the block's writer (0 otherwise). Summed over the
// ranks it is a function of the global array alone, whatever the layout and rank count: the
// checksum a save stores with each dataset and a load recomputes from what it read.
inline std::uint64_t block_checksum(const block_view& b) {
  if (!b.writer) return 0;
  const std::size_t rank = b.global_shape.size();
  std::size_t count = 1;
  for (auto e : b.local_shape) count *= static_cast<std::size_t>(e);
  if (count == 0) return 0;
  const bool wide = b.type == element_type::float64 || b.type == element_type::int64;
  auto bits_at = [&](std::size_t k) -> std::uint64_t {
    if (wide) {
      std::uint64_t x;
      std::memcpy(&x, static_cast<const char*>(b.data) + 8 * k, 8);
      return x;
    }
    std::uint32_t x;
    std::memcpy(&x, static_cast<const char*>(b.data) + 4 * k, 4);
    return x;
  };
  auto hash = [](std::uint64_t index, std::uint64_t bits) {  // splitmix64 of both
    std::uint64_t z = index * 0x9E3779B97F4A7C15ull + bits + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  std::uint64_t sum = 0;
  if (rank == 0) return hash(0, bits_at(0));
  std::vector<std::uint64_t> stride(rank, 1), at(rank, 0);
  for (std::size_t i = rank - 1; i-- > 0;) stride[i] = stride[i + 1] * b.global_shape[i + 1];
  const std::uint64_t row = b.local_shape[rank - 1];
  for (std::size_t k = 0; k < count; k += row) {
    std::uint64_t index = 0;  // the global index of the row's first element
    for (std::size_t i = 0; i < rank; ++i) index += (b.offsets[i] + at[i]) * stride[i];
    for (std::uint64_t j = 0; j < row; ++j) sum += hash(index + j, bits_at(k + j));
    for (std::size_t i = rank - 1; i-- > 0;) {  // next row: odometer over the other dims
      if (++at[i] < b.local_shape[i]) break;
      at[i] = 0;
    }
  }
  return sum;
}

// global_checksum(comm, b): block_checksum summed over the ranks (one allreduce)
inline std::int64_t global_checksum(const boost::mpi::communicator& comm, const block_view& b) {
  const std::uint64_t mine = block_checksum(b);
  std::uint64_t all = mine;
  allreduce_values(MPI_Comm(comm), &all, 1, MPI_SUM, "checkpoint (a variable's checksum)");
  std::int64_t stored;
  std::memcpy(&stored, &all, sizeof stored);  // an int64 attribute holds the 64 bits
  return stored;
}

}  // namespace meshpp::detail::hdf5

// meshpp/io/checkpoint.hpp — checkpoints in one parallel-HDF5 file that loads into any mesh
// and layout.
//
//   mp::checkpoint ckpt;
//   ckpt.add(w1, w2)                 // variables, under their own names
//       .add("x", x)                 // any tensor (or variable) under a name
//       .add(opt)                    // the optimizer: kind, hyperparameters, steps, slots
//       .add("epoch", epoch);        // a scalar of the program (integral or floating)
//   mp::save("run.h5", mesh, ckpt);  // collective; atomic: run.h5 is the old or the new file
//   mp::load("run.h5", mesh, ckpt);  // collective; into this mesh and these layouts
//
// Needs parallel HDF5 (Debian's libhdf5-openmpi-dev) and the CMake target meshpp::hdf5;
// meshpp/meshpp.hpp does not include this header, so the rest of meshpp builds without HDF5.
//
// The file (HDF5 1.8's format, with checksummed metadata; h5dump and h5py read it; README
// "Checkpoints" shows one):
//   /                       attributes format "meshpp checkpoint", format_version, mesh, ranks
//   /variables/<name>       a dataset in the tensor's GLOBAL shape, its element type
//                           (float32/64, int32/64, little-endian); attributes dims (the dim
//                           names, in order), layout and mesh it was saved under (informational),
//                           checksum (of the global array: see block_checksum)
//   /scalars                attributes: the program's scalars (int64 or float64)
//   /optimizer              attributes kind ("adam", "sgd", ...), steps, the hyperparameters
//   /optimizer/slots/<name> attribute updates (and factored: Adafactor); datasets m, v
//                           (Adam), momentum (SGD), v_r, v_c, v, m (Adafactor), as they exist
// A name with '/' nests groups ("block0/attention/wq").
//
// Saving: every rank writes the hyperslab of its own block, in one collective H5Dwrite per
// dataset (H5FD_MPIO_COLLECTIVE); a block held by several ranks (a replicated dim) is written
// by the first of them only (block_view::writer), the others join the collective with an empty
// selection. The file is written as <path>.tmp.<pid>.<time> (a name rank 0 draws and
// broadcasts), closed by every rank, then renamed to <path> by rank 0 after a barrier (fsync
// of the file before, of the directory after): a job killed mid-save leaves the last good
// <path> and a stray .tmp file, never a torn <path>.
//
// Loading (resharding): every rank reads the hyperslab of the block that its own tensor holds
// under its own mesh and layout, in one collective H5Dread per dataset: the file does not
// record which ranks wrote it, so 4 ranks under one layout save what 2 or 1 under another load.
// Dims must match by name and order, sizes and element types exactly. Datasets in the file that
// nothing added asks for are ignored. Hyperparameters and the step count are restored (as
// PyTorch's load_state_dict does): set_learning_rate() after load() to change them.
//
// Failing together: everything that can be wrong with the input is found before the first
// collective HDF5 call: names (empty, twice, one a group of another) and optimizers that
// cannot be saved on every rank alike, with no communication; the file (missing, not HDF5,
// truncated, not a meshpp checkpoint, a dataset or attribute missing, a dim name, size or
// element type that differs, another optimizer kind) by rank 0 alone, which opens it serially
// and broadcasts what it found, so every rank throws the same meshpp::error naming the file,
// the object and, for an HDF5 failure, the call and HDF5's own message. The data themselves
// are checked after they are read: each dataset carries a checksum of its global array (a
// sum over its elements of a hash of global index and bits, so any layout recomputes it from
// its own blocks, with one allreduce); a mismatch, a corrupt file, throws on every rank alike,
// the tensor then holding what was read. A failure inside a collective write or read (a disk
// failing mid-save) throws on the ranks that see it, like any I/O error in MPI-IO.
//
// Communication outside HDF5's own collectives: save completes an optimizer's state where
// sharded updates left it in shares (one allgather per state tensor over its variable's
// replicas, optim/optimizer.hpp), broadcasts the temporary name (and a problem with the
// directory) from rank 0, allreduces one 64-bit checksum per dataset, waits at
// a barrier after closing, and broadcasts the result of the rename; load broadcasts rank 0's
// verdict on the file and allreduces one checksum per dataset. All but the allgathers over the
// mesh's communicator (mesh.world()).
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/mpi/communicator.hpp>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/detail/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/state.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/optim/optimizer.hpp"

#ifndef H5_HAVE_PARALLEL
#error \
    "meshpp/io/checkpoint.hpp needs a parallel HDF5 (Debian: libhdf5-openmpi-dev; link meshpp::hdf5)"
#endif

namespace meshpp {

namespace offending {
template <class X>
inline constexpr bool checkpoint_add_takes_tensors_and_scalars = false;
}  // namespace offending

namespace detail {
// state_visitor with groups: names from enter(group) on are relative to that group
class checkpoint_visitor : public state_visitor {
 public:
  virtual void enter(const std::string& group) = 0;
};
}  // namespace detail

namespace detail {
// visit_count_of(v, name, stream): stream.step() as an integer, set back on load
template <class Stream>
void visit_count_of(state_visitor& v, const std::string& name, Stream& stream) {
  auto step = stream.step();
  visit_count(v, name, step);
  if (v.what() == state_visitor::mode::load) stream.set_step(step);
}
}  // namespace detail

/// @brief What a checkpoint holds: named tensors and variables, one optimizer, and scalars of
/// the program, by reference (each must outlive the checkpoint's save() and load() calls;
/// variables are held by handle, so a copy of one is the variable itself).
class checkpoint {
 public:
  // add(variables...): variables under their own names (variable(t, "w1"))
  template <class... Vs>
  requires(sizeof...(Vs) > 0 &&
           (detail::is_variable_v<Vs> && ...)) checkpoint& add(const Vs&... vs) {
    (add_variable(vs.name(), vs), ...);
    return *this;
  }

  // add(name, x): a variable, a tensor, an integral or floating-point scalar, or the position
  // of a random stream (anything with step() and set_step(s), as dropout_layer), under `name`
  template <class X>
  requires(!std::is_base_of_v<optimizer, X>) checkpoint& add(std::string name, X& x) {
    if constexpr (detail::is_variable_v<std::remove_const_t<X>>) {
      add_variable(std::move(name), x);
    } else if constexpr (is_tensor_v<X>) {
      tensors_.push_back({std::move(name), nullptr, [&x] { return view_of(x); }});
    } else if constexpr (std::is_integral_v<X>) {
      scalars_.push_back({std::move(name),
                          [&x](state_visitor& v, const std::string& n) { visit_count(v, n, x); }});
    } else if constexpr (requires { x.set_step(x.step()); }) {
      // a counter-based random stream's position (nn/dropout.hpp's dropout_layer): its step
      scalars_.push_back({std::move(name), [&x](state_visitor& v, const std::string& n) {
                            detail::visit_count_of(v, n, x);
                          }});
    } else if constexpr (std::is_floating_point_v<X>) {
      scalars_.push_back({std::move(name), [&x](state_visitor& v, const std::string& n) {
                            double d = static_cast<double>(x);
                            v.number(n, d);
                            if (v.what() == state_visitor::mode::load) x = static_cast<X>(d);
                          }});
    } else {
      static_assert(is_tensor_v<X> || offending::checkpoint_add_takes_tensors_and_scalars<X>,
                    "meshpp::checkpoint::add(name, x): x must be a meshpp::variable, a "
                    "meshpp::tensor, a (non-const) integral or floating-point scalar, or have "
                    "step() and set_step()");
    }
    return *this;
  }

  // add(optimizer): its kind, hyperparameters, step count and, per variable, its state, the
  // variable named as it was added here (or by its own name). One optimizer per checkpoint.
  checkpoint& add(optimizer& opt) {
    if (optimizer_ && optimizer_ != &opt)
      throw error("meshpp::checkpoint::add(optimizer): a checkpoint holds one optimizer");
    optimizer_ = &opt;
    return *this;
  }

  // complete_state(comm, who): the optimizer's state whole on every rank (sharded updates leave
  // it in shares, optim/optimizer.hpp): what save() does first. Collective over the variables'
  // mesh; throws meshpp::error before any communication if comm's ranks are not its ranks.
  void complete_state(MPI_Comm comm, const std::string& who) const {
    if (!optimizer_) return;
    optimizer_->check_state_over(comm, who);
    optimizer_->complete_state();
  }

  // walk(v): everything added, through v, in one fixed order (the same on every rank)
  void walk(detail::checkpoint_visitor& v) const {
    v.enter("variables");
    for (const auto& t : tensors_) v.tensor(t.name, t.view());
    v.enter("scalars");
    for (const auto& s : scalars_) s.visit(v, s.name);
    if (!optimizer_) return;
    v.enter("optimizer");
    optimizer_->visit_state(v);
    for (std::size_t i = 0; i < optimizer_->size(); ++i) {
      v.enter("optimizer/slots/" + slot_name(i));
      optimizer_->visit_slot(i, v);
    }
  }

  // validate(who): throws meshpp::error unless every name is non-empty, given once and not a
  // group of another (a dataset "a" and "a/b"), and the optimizer can be saved. Every rank
  // alike, no communication.
  void validate(const std::string& who) const {
    auto check_names = [&](const std::vector<std::string>& names, const char* what) {
      for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& a = names[i];
        if (a.empty() || a.front() == '/' || a.back() == '/' || a.find("//") != std::string::npos ||
            a.find('.') == 0)
          throw error(who + ": " + what + " name '" + a +
                      "' is empty or not a path like 'w1' or 'block0/wq'");
        for (std::size_t j = 0; j < names.size(); ++j) {
          if (i == j) continue;
          const std::string& b = names[j];
          if (a == b && i < j) throw error(who + ": " + what + " name '" + a + "' is given twice");
          if (b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '/')
            throw error(who + ": " + what + " name '" + a + "' is also a group of '" + b + "'");
        }
      }
    };
    std::vector<std::string> names;
    for (const auto& t : tensors_) names.push_back(t.name);
    check_names(names, "tensor");
    names.clear();
    for (const auto& s : scalars_) names.push_back(s.name);
    check_names(names, "scalar");
    if (optimizer_) {
      names.clear();
      for (std::size_t i = 0; i < optimizer_->size(); ++i) names.push_back(slot_name(i));
      check_names(names, "optimizer variable");
    }
  }

 private:
  struct tensor_entry {
    std::string name;
    const detail::node_base* node;  // a variable's identity; nullptr for a tensor
    std::function<block_view()> view;
  };
  struct scalar_entry {
    std::string name;
    std::function<void(state_visitor&, const std::string&)> visit;
  };

  template <class Tensor>
  void add_variable(std::string name, const variable<Tensor>& v) {
    tensors_.push_back({std::move(name), v.node().get(), [shared = variable<Tensor>(v)]() mutable {
                          return view_of(shared.value());
                        }});
  }

  // slot_name(i): the name the optimizer's variable i was added here under, or its own
  std::string slot_name(std::size_t i) const {
    for (const auto& t : tensors_) {
      if (t.node && t.node == optimizer_->variable_node(i)) return t.name;
    }
    return optimizer_->variable_name(i);
  }

  std::vector<tensor_entry> tensors_;
  std::vector<scalar_entry> scalars_;
  optimizer* optimizer_ = nullptr;
};

namespace detail::hdf5 {

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

inline constexpr const char* format_name = "meshpp checkpoint";
inline constexpr std::int64_t format_version = 1;

// save_visitor: writes what it visits into an open file (or, dry, only visits: the walk
// before any collective call, which throws what the walk itself would)
// file_visitor: what the three walks over a checkpoint file share: the file, the name the
// messages give, the group being visited and the context of one of its attributes
class file_visitor : public checkpoint_visitor {
 protected:
  file_visitor(hid_t file, std::string who) : file_(file), who_(std::move(who)) {}
  context where(std::string_view attribute) const {
    return {who_, "/" + group_name_ + " attribute " + std::string(attribute)};
  }

  hid_t file_;
  std::string who_;
  std::string group_name_;
  handle group_;
};

class save_visitor final : public file_visitor {
 public:
  save_visitor(hid_t file, const boost::mpi::communicator& comm, std::string who, bool dry)
      : file_visitor(file, std::move(who)), comm_(comm), dry_(dry) {}
  mode what() const override { return mode::save; }

  void enter(const std::string& group) override {
    group_name_ = group;
    if (dry_) return;
    const context c{who_, "/" + group};
    handle lcpl(c.check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
    c.check(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group");
    group_ =
        handle(c.check(H5Gcreate2(file_, ("/" + group).c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT),
                       "H5Gcreate2"),
               H5Gclose);
  }
  void kind(std::string_view name) override {
    if (!dry_) write_attribute(group_, "kind", std::string(name), where("kind"));
  }
  void integer(std::string_view name, std::int64_t& value) override {
    if (!dry_) write_attribute(group_, std::string(name), value, where(name));
  }
  void number(std::string_view name, double& value) override {
    if (!dry_) write_attribute(group_, std::string(name), value, where(name));
  }
  void optional_number(std::string_view name, std::optional<double>& value) override {
    if (!dry_ && value) write_attribute(group_, std::string(name), *value, where(name));
  }
  bool has_tensor(std::string_view) override { return false; }

  // one dataset in the global shape; each rank's hyperslab in one collective write
  void tensor(std::string_view name, const block_view& b) override {
    if (dry_) return;
    const std::string path = path_in(group_name_, name);
    const context c{who_, path};
    handle lcpl(c.check(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate"), H5Pclose);
    c.check(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group");
    handle dcpl(c.check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"), H5Pclose);
    c.check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");  // written whole
    const std::vector<hsize_t> global(b.global_shape.begin(), b.global_shape.end());
    handle file_space = simple_space(global, c);
    handle d(c.check(H5Dcreate2(file_, path.c_str(), hdf5_types_of(b.type).file, file_space, lcpl,
                                dcpl, H5P_DEFAULT),
                     "H5Dcreate2"),
             H5Dclose);
    write_attribute(d, "dims", b.dims, false, c);
    write_attribute(d, "layout", b.layout.empty() ? std::string("(replicated)") : b.layout, c);
    write_attribute(d, "mesh", b.mesh, c);
    select_block(file_space, b, b.writer, c);
    handle memory = memory_space(b, b.writer, c);
    handle dxpl = collective_transfer(c);
    c.check(H5Dwrite(d, hdf5_types_of(b.type).memory, memory, file_space, dxpl, b.data),
            "H5Dwrite");
    write_attribute(d, "checksum", global_checksum(comm_, b), c);
    if (after_dataset_hook) after_dataset_hook(path);
  }

  // called after each dataset is written: the tests' way to kill a job mid-save
  static inline void (*after_dataset_hook)(const std::string& dataset) = nullptr;

 private:
  const boost::mpi::communicator& comm_;
  bool dry_;
};

// check_visitor: compares the file with what it visits and collects what differs (rank 0,
// the file opened serially, before any collective call); changes nothing
class check_visitor final : public file_visitor {
 public:
  check_visitor(hid_t file, std::string who) : file_visitor(file, std::move(who)) {}
  mode what() const override { return mode::check; }
  std::vector<std::string> problems;

  void enter(const std::string& group) override {
    group_name_ = group;
    group_.reset();
    const context c{who_, "/" + group};
    guard([&] {
      if (!exists(file_, "/" + group, c)) c.fail("group is missing");
      group_ = handle(c.check(H5Gopen2(file_, ("/" + group).c_str(), H5P_DEFAULT), "H5Gopen2"),
                      H5Gclose);
    });
  }
  void kind(std::string_view name) override {
    if (group_.get() < 0) return;
    guard([&] {
      const context c = where("kind");
      const auto found = read_strings(group_, "kind", c);
      if (found.size() != 1 || found[0] != name)
        c.fail("holds the state of " + joined(found) + ", not of " + std::string(name));
    });
  }
  void integer(std::string_view name, std::int64_t&) override {
    if (group_.get() >= 0)
      guard([&] { read_number<std::int64_t>(group_, std::string(name), where(name)); });
  }
  void number(std::string_view name, double&) override {
    if (group_.get() >= 0)
      guard([&] { read_number<double>(group_, std::string(name), where(name)); });
  }
  void optional_number(std::string_view name, std::optional<double>&) override {
    if (group_.get() < 0) return;
    guard([&] {
      const context c = where(name);
      if (c.check(H5Aexists(group_, std::string(name).c_str()), "H5Aexists") > 0)
        read_number<double>(group_, std::string(name), c);
    });
  }
  bool has_tensor(std::string_view name) override {
    const std::string path = path_in(group_name_, name);
    bool found = false;
    guard([&] { found = exists(file_, path, context{who_, path}); });
    return found;
  }
  void tensor(std::string_view name, const block_view& b) override {
    const std::string path = path_in(group_name_, name);
    guard([&] {
      const context c{who_, path};
      if (!exists(file_, path, c)) c.fail("dataset is missing");
      handle d(c.check(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), "H5Dopen2"), H5Dclose);
      handle type(c.check(H5Dget_type(d), "H5Dget_type"), H5Tclose);
      const auto stored = element_type_of_file(type);
      if (!stored || *stored != b.type)
        c.fail("holds " + describe_type(type) + ", the tensor " + element_type_name(b.type));
      handle space(c.check(H5Dget_space(d), "H5Dget_space"), H5Sclose);
      const int rank = c.check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims");
      std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
      c.check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "H5Sget_simple_extent_dims");
      const std::vector<std::uint64_t> shape(dims.begin(), dims.end());
      const auto names = read_strings(d, "dims", context{who_, path + " attribute dims"});
      if (names != b.dims)
        c.fail("has dims " + joined(names) + ", the tensor " + joined(b.dims) +
               " (dims must match by name and order)");
      if (shape != b.global_shape)
        c.fail("has shape " + joined(shape) + " over dims " + joined(names) + ", the tensor " +
               joined(b.global_shape));
      read_number<std::int64_t>(d, "checksum", context{who_, path + " attribute checksum"});
    });
  }

 private:
  template <class F>
  void guard(F&& f) {
    try {
      f();
    } catch (const error& e) {
      problems.push_back(e.what());
    }
  }
};

// load_visitor: reads what it visits from a file every rank opened in parallel (after the
// check found nothing wrong); each rank the hyperslab of its own block, collectively
class load_visitor final : public file_visitor {
 public:
  load_visitor(hid_t file, const boost::mpi::communicator& comm, std::string who)
      : file_visitor(file, std::move(who)), comm_(comm) {}
  mode what() const override { return mode::load; }

  void enter(const std::string& group) override {
    group_name_ = group;
    const context c{who_, "/" + group};
    group_ =
        handle(c.check(H5Gopen2(file_, ("/" + group).c_str(), H5P_DEFAULT), "H5Gopen2"), H5Gclose);
  }
  void kind(std::string_view) override {}
  void integer(std::string_view name, std::int64_t& value) override {
    value = read_number<std::int64_t>(group_, std::string(name), where(name));
  }
  void number(std::string_view name, double& value) override {
    value = read_number<double>(group_, std::string(name), where(name));
  }
  void optional_number(std::string_view name, std::optional<double>& value) override {
    const context c = where(name);
    if (c.check(H5Aexists(group_, std::string(name).c_str()), "H5Aexists") > 0)
      value = read_number<double>(group_, std::string(name), c);
    else
      value.reset();
  }
  bool has_tensor(std::string_view name) override {
    const std::string path = path_in(group_name_, name);
    return exists(file_, path, context{who_, path});
  }
  void tensor(std::string_view name, const block_view& b) override {
    const std::string path = path_in(group_name_, name);
    const context c{who_, path};
    handle d(c.check(H5Dopen2(file_, path.c_str(), H5P_DEFAULT), "H5Dopen2"), H5Dclose);
    handle file_space(c.check(H5Dget_space(d), "H5Dget_space"), H5Sclose);
    select_block(file_space, b, true, c);
    handle memory = memory_space(b, true, c);
    handle dxpl = collective_transfer(c);
    c.check(H5Dread(d, hdf5_types_of(b.type).memory, memory, file_space, dxpl, b.data), "H5Dread");
    // the same verdict on every rank: the sum is allreduced, the attribute the same file's
    if (global_checksum(comm_, b) != read_number<std::int64_t>(d, "checksum", c))
      c.fail(
          "the data do not match their checksum: the file is corrupt (the tensor now holds "
          "what was read)");
  }

 private:
  const boost::mpi::communicator& comm_;
};

// directory_of(path): "." for a bare file name
inline std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// sync_path(path): fsync a file or directory (errors ignored on directories, where some file
// systems refuse)
inline int sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return directory ? 0 : errno;
  const int r = ::fsync(fd) == 0 || directory ? 0 : errno;
  ::close(fd);
  return r;
}

// rank 0's verdict, broadcast: empty, or the problem every rank throws
inline void agree_with_rank0(const boost::mpi::communicator& comm, std::string problem) {
  broadcast_text(MPI_Comm(comm), problem, 0, "checkpoint (rank 0's verdict)");
  if (!problem.empty()) throw error(problem);
}

}  // namespace detail::hdf5

// save(path, mesh, checkpoint): writes everything the checkpoint holds to the HDF5 file `path`
// (see the top of this header), atomically. Collective over mesh.world() (and first, where an
// optimizer's sharded updates left its state in shares, over its variables' mesh, which must
// have the same ranks). Throws meshpp::error on every rank, before any collective HDF5 call,
// for bad names, an optimizer that cannot be saved, an optimizer state in shares over other
// ranks than mesh's, or a directory that does not exist or cannot be written.
template <class Mesh>
void save(const std::string& path, const Mesh& mesh, const checkpoint& ckpt) {
  namespace h5 = detail::hdf5;
  const std::string who = "meshpp::save('" + path + "')";
  const boost::mpi::communicator& comm = mesh.world();
  ckpt.validate(who);
  // an optimizer's sharded state: one allgather per state tensor
  ckpt.complete_state(MPI_Comm(comm), who);
  {
    h5::save_visitor dry(H5I_INVALID_HID, comm, who,
                         true);  // throws what the walk would, everywhere
    ckpt.walk(dry);
  }
  // rank 0 draws the temporary name (unique per job: its pid and the time) and checks the
  // directory
  std::string temporary, problem;
  if (comm.rank() == 0) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    temporary = path + ".tmp." + std::to_string(::getpid()) + "." +
                std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
    const std::string dir = h5::directory_of(path);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      problem = who + ": directory '" + dir + "' does not exist";
    else if (::access(dir.c_str(), W_OK) != 0)
      problem = who + ": directory '" + dir + "' is not writable (" + std::strerror(errno) + ")";
  }
  detail::broadcast_text(MPI_Comm(comm), temporary, 0, "save (the temporary file's name)");
  h5::agree_with_rank0(comm, problem);

  h5::errors_off quiet;
  const h5::context c{who, temporary};
  {
    h5::handle fapl = h5::parallel_access(comm, c);
    h5::handle file(
        c.check(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), "H5Fcreate"),
        H5Fclose);
    h5::write_attribute(file, "format", std::string(h5::format_name), c);
    h5::write_attribute(file, "format_version", h5::format_version, c);
    h5::write_attribute(file, "mesh", mesh.describe(), c);
    h5::write_attribute(file, "ranks", std::int64_t{comm.size()}, c);
    {
      h5::save_visitor writer(file, comm, who, false);  // holds a group open until its scope ends
      ckpt.walk(writer);
    }
    file.close(c, "H5Fclose");
  }
  detail::barrier(MPI_Comm(comm), "save (every rank has closed the file)");  // complete on disk
  int failed = 0;
  if (comm.rank() == 0) {
    failed = h5::sync_path(temporary, false);
    if (!failed && std::rename(temporary.c_str(), path.c_str()) != 0) failed = errno;
    if (!failed) h5::sync_path(h5::directory_of(path), true);
  }
  detail::broadcast_values(MPI_Comm(comm), &failed, 1, 0, "save (the rename's result)");
  if (failed)
    throw error(who + ": renaming '" + temporary + "' to '" + path +
                "' failed: " + std::strerror(failed));
}

// load(path, mesh, checkpoint): reads everything the checkpoint holds from `path`, each rank
// the block of its own tensors under their layouts (any mesh, any layout). Collective over
// mesh.world(). Throws meshpp::error on every rank, before any collective HDF5 call and with
// nothing changed, if the file is missing, unreadable or truncated, or lacks or differs in
// anything asked for (see the top of this header).
template <class Mesh>
void load(const std::string& path, const Mesh& mesh, checkpoint& ckpt) {
  namespace h5 = detail::hdf5;
  const std::string who = "meshpp::load('" + path + "')";
  const boost::mpi::communicator& comm = mesh.world();
  ckpt.validate(who);
  h5::errors_off quiet;
  const h5::context c{who, ""};
  std::string problem;
  if (comm.rank() == 0) {
    try {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0)
        c.fail(std::string("cannot read the file: ") + std::strerror(errno));
      if (c.check(H5Fis_hdf5(path.c_str()), "H5Fis_hdf5") <= 0) c.fail("not an HDF5 file");
      h5::handle file(c.check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen"),
                      H5Fclose);
      const auto format = h5::read_strings(file, "format", h5::context{who, "/ attribute format"});
      if (format.size() != 1 || format[0] != h5::format_name)
        c.fail("not a meshpp checkpoint (attribute format is " + h5::joined(format) + ")");
      const auto version =
          h5::read_number<std::int64_t>(file, "format_version", h5::context{who, "/"});
      if (version != h5::format_version)
        c.fail("format version " + std::to_string(version) + ", this meshpp reads " +
               std::to_string(h5::format_version));
      h5::check_visitor checker(file, who);
      ckpt.walk(checker);
      for (std::size_t i = 0; i < checker.problems.size() && i < 8; ++i)
        problem += (i ? "\n" : "") + checker.problems[i];
      if (checker.problems.size() > 8)
        problem += "\n(and " + std::to_string(checker.problems.size() - 8) + " more)";
    } catch (const error& e) {
      problem = e.what();
    }
  }
  h5::agree_with_rank0(comm, problem);

  h5::handle fapl = h5::parallel_access(comm, c);
  h5::handle file(c.check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), "H5Fopen"), H5Fclose);
  {
    h5::load_visitor reader(file, comm, who);  // holds a group open until its scope ends
    ckpt.walk(reader);
  }
  file.close(c, "H5Fclose");
}

}  // namespace meshpp

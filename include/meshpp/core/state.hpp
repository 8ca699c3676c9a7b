// meshpp/core/state.hpp — what a checkpoint sees of a program's state, with no file format in it:
// a type-erased view of one rank's block of a tensor, and a visitor that objects holding state
// (optimizers and their slots) walk their state with, by name.
//
//   block_view b = view_of(w.value());     // dims, global shape, this rank's block, its data
//   void visit_state(state_visitor& v) {   // in an optimizer's slot
//     v.integer("updates", t_);
//     visit_optional_tensor(v, "m", m_, [&] { return zeros_like_parameter(); });
//   }
//
// io/checkpoint.hpp implements state_visitor three times (save, check a file, load) over
// parallel HDF5; this header needs no HDF5, so optimizers include it whether or not it is
// installed. Nothing here communicates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "meshpp/core/error.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

namespace meshpp {

/// @brief The element types a checkpoint stores (IEEE floats and two's-complement integers,
/// little-endian in the file).
enum class element_type { float32, float64, int32, int64 };

// element_type_name(e): "float32", ...
inline const char* element_type_name(element_type e) {
  switch (e) {
    case element_type::float32:
      return "float32";
    case element_type::float64:
      return "float64";
    case element_type::int32:
      return "int32";
    case element_type::int64:
      return "int64";
  }
  return "?";
}

namespace offending {
template <class T>
inline constexpr bool checkpoint_element_type_is_not_float_double_int32_int64 = false;
}  // namespace offending

// element_type_of<T>(): the element_type of T
template <class T>
constexpr element_type element_type_of() {
  static_assert(
      std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
          std::is_same_v<T, std::int64_t> ||
          offending::checkpoint_element_type_is_not_float_double_int32_int64<T>,
      "meshpp::view_of(tensor): a checkpoint stores tensors of float, double, std::int32_t or "
      "std::int64_t");
  if constexpr (std::is_same_v<T, float>)
    return element_type::float32;
  else if constexpr (std::is_same_v<T, double>)
    return element_type::float64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return element_type::int32;
  else
    return element_type::int64;
}

/// @brief One rank's block of a distributed tensor, its type erased: what a checkpoint writes
/// and reads. `writer` is true on one rank of each group of ranks holding the same block (the
/// first along every mesh dim the tensor is not split over), so a replicated block is written
/// once.
struct block_view {
  element_type type = element_type::float32;
  std::vector<std::string> dims;            // the tensor's dim names, in storage order
  std::vector<std::uint64_t> global_shape;  // in the same order
  std::vector<std::uint64_t> local_shape;   // this rank's block
  std::vector<std::uint64_t> offsets;       // the global index of the block's first element
  void* data = nullptr;                     // the block, row-major
  bool writer = false;
  std::string layout;  // "hidden:cols" (informational: any layout can load it)
  std::string mesh;    // "[rows:2, cols:2]" (informational)
};

// view_of(t): the block_view of tensor t (its data pointer aliases t's local slice)
template <class T, class Shape, class Layout, class Mesh>
block_view view_of(tensor<T, Shape, Layout, Mesh>& t) {
  using tensor_t = tensor<T, Shape, Layout, Mesh>;
  block_view b;
  b.type = element_type_of<T>();
  constexpr auto names = dim_names_v<Shape>;
  const auto local = t.local_shape();
  for (std::size_t i = 0; i < tensor_t::rank; ++i) {
    b.dims.emplace_back(names[i]);
    b.global_shape.push_back(t.global_shape()[i]);
    b.local_shape.push_back(local[i]);
    b.offsets.push_back(t.local_offsets()[i]);
  }
  b.data = t.local().data();
  const unsigned all_mesh_dims = (1u << Mesh::ndims) - 1u;
  b.writer = t.mesh().leads(all_mesh_dims & ~tensor_t::split_mask());
  b.layout = to_string(Layout{});
  b.mesh = t.mesh().describe();
  return b;
}

/// @brief A walk over named state. An object holding state calls, for each piece, the member
/// of its kind; a checkpoint saving it records the value, one checking a file compares the
/// file's entry with it (throwing nothing: it collects problems), one loading it overwrites it.
/// Names are relative to the object being walked; '/' nests.
class state_visitor {
 public:
  enum class mode { save, check, load };
  virtual ~state_visitor() = default;
  virtual mode what() const = 0;
  // writes(): saving, whether the values are written (false: a walk that only checks what
  // would be saved, before any collective call, so a state that must be gathered first need
  // not be)
  virtual bool writes() const { return what() == mode::save; }

  // kind(name): the kind of object walked ("adam"): saved; a different one in the file is an
  // error (state saved by SGD does not load into Adam)
  virtual void kind(std::string_view name) = 0;
  virtual void integer(std::string_view name, std::int64_t& value) = 0;
  virtual void number(std::string_view name, double& value) = 0;
  // optional_number(name, x): absent from the file when x has no value
  virtual void optional_number(std::string_view name, std::optional<double>& value) = 0;
  // has_tensor(name): check and load: whether the file holds this state tensor; save: false
  virtual bool has_tensor(std::string_view name) = 0;
  // tensor(name, block): save it, compare the file's dims, shape and type with it, or load it
  virtual void tensor(std::string_view name, const block_view& block) = 0;
};

// visit_flag(v, name, b): a bool as the integer 0 or 1
inline void visit_flag(state_visitor& v, std::string_view name, bool& b) {
  std::int64_t x = b ? 1 : 0;
  v.integer(name, x);
  if (v.what() == state_visitor::mode::load) b = x != 0;
}

// visit_count(v, name, n): an unsigned count as an integer
template <class N>
requires std::is_integral_v<N>
void visit_count(state_visitor& v, std::string_view name, N& n) {
  auto x = static_cast<std::int64_t>(n);
  v.integer(name, x);
  if (v.what() == state_visitor::mode::load) n = static_cast<N>(x);
}

// visit_optional_tensor(v, name, state, make): a state tensor that may not exist yet (created
// at a first update). Saved when present; loaded (created by make() first) when the file has
// it, reset when the file does not; checked against a scratch make() (state stays untouched).
template <class Tensor, class Make>
void visit_optional_tensor(state_visitor& v, std::string_view name, std::optional<Tensor>& state,
                           Make&& make) {
  switch (v.what()) {
    case state_visitor::mode::save:
      if (state) v.tensor(name, view_of(*state));
      return;
    case state_visitor::mode::check:
      if (v.has_tensor(name)) {
        Tensor scratch = make();
        v.tensor(name, view_of(scratch));
      }
      return;
    case state_visitor::mode::load:
      if (v.has_tensor(name)) {
        if (!state) state.emplace(make());
        v.tensor(name, view_of(*state));
      } else {
        state.reset();
      }
      return;
  }
}

}  // namespace meshpp

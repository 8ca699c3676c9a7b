// meshpp/core/tensor.hpp — tensor<T, Shape, Layout, Mesh>: a distributed tensor.
//
// Every rank holds one slice (SPMD). For each split<Dim, MeshDim> of the layout, the slice
// is the stripe of Dim given by this rank's coordinate along MeshDim; dims the layout does
// not name are whole (replicated over the mesh). The slice is an xt::xtensor in the
// tensor's dim order, row-major.
//
//   using t = tensor_of<float, shape<batch, hidden>, mesh_t>;   // layout from the mesh's rules
//   t x(mesh, extents{batch{} = 8, hidden{} = 4});             // zeros
//   x.local()                                                  // this rank's xt::xtensor
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <xtensor/xtensor.hpp>

#include "meshpp/core/config.hpp"
#include "meshpp/core/detail/huge_pages.hpp"
#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp {

struct expression_node;  // expr/expression.hpp
namespace detail {
// Defined by expr/evaluate.hpp, which converting between tensors needs: without it, the
// compiler reports this incomplete type, whose name says what to include.
template <class T>
struct include_meshpp_expr_evaluate_hpp;
}  // namespace detail

namespace offending {
template <class Layout, class Shape>
inline constexpr bool layout_is_not_the_rules_restricted_to_shape = false;
template <class Dim, class Extents>
inline constexpr bool no_size_given_for_tensor_dim = std::is_same_v<Dim, detail::no_dim>;
}  // namespace offending

namespace detail {
template <class Shape, class E>
struct first_missing_extent;
template <class E>
struct first_missing_extent<shape<>, E> {
  using type = no_dim;
};
template <class D, class... Rest, class E>
struct first_missing_extent<shape<D, Rest...>, E> {
  using type = std::conditional_t<E::template has<D>,
                                  typename first_missing_extent<shape<Rest...>, E>::type, D>;
};

// block_at(global, axis_of_dim, mesh_sizes, coords, offset, extent): the block of a tensor of
// these global sizes that the rank at coords holds: along each dim split over a mesh axis
// (axis_of_dim[i] >= 0) the stripe at its coordinate, every other dim whole; one function for
// every tensor type
MESHPP_KERNEL inline void block_at(std::span<const std::size_t> global,
                                   std::span<const int> axis_of_dim,
                                   std::span<const int> mesh_sizes, std::span<const int> coords,
                                   std::span<std::size_t> offset, std::span<std::size_t> extent) {
  for (std::size_t i = 0; i < global.size(); ++i) {
    const int a = axis_of_dim[i];
    if (a < 0) {
      offset[i] = 0;
      extent[i] = global[i];
      continue;
    }
    const auto parts = static_cast<std::size_t>(mesh_sizes[static_cast<std::size_t>(a)]);
    const auto c = static_cast<std::size_t>(coords[static_cast<std::size_t>(a)]);
    offset[i] = stripe_begin(global[i], parts, c);
    extent[i] = stripe_size(global[i], parts, c);
  }
}

// layout_record(type, names, global, axis_of_dim): a tensor's layout as the counters keep it
MESHPP_KERNEL inline tensor_layout layout_record(std::string type,
                                                 std::span<const std::string_view> names,
                                                 std::span<const std::size_t> global,
                                                 std::span<const int> axis_of_dim) {
  return {std::move(type),
          {names.begin(), names.end()},
          {global.begin(), global.end()},
          {axis_of_dim.begin(), axis_of_dim.end()}};
}

// block_slice<T, N>(global, axis_of_dim, mesh, offsets): a new, uninitialized slice of the
// block of these global sizes that this rank holds (block_at), its offsets set in offsets; a
// large one is asked to be mapped in 2 MiB pages before its first write. One function for every
// tensor type of T and N dims.
template <class T, std::size_t N>
MESHPP_KERNEL xt::xtensor<T, N> block_slice(const std::array<std::size_t, N>& global,
                                            const std::array<int, N>& axis_of_dim,
                                            const mesh_base& mesh,
                                            std::array<std::size_t, N>& offsets) {
  std::array<std::size_t, N> extent;
  block_at(global, axis_of_dim, mesh.sizes(), mesh.coordinates(), offsets, extent);
  xt::xtensor<T, N> slice(extent);
  advise_huge_pages(slice.data(), slice.size() * sizeof(T));
  return slice;
}

// axes_of_dims_v<S, Layout, Mesh>: for each dim of S, the axis of Mesh that Layout splits it
// over, or -1 (whole): the run-time form of a layout that block_at reads
template <class S, class Layout, class Mesh>
inline constexpr auto axes_of_dims_v = [] {
  std::array<int, S::rank> a{};
  a.fill(-1);
  [&]<class... Splits>(layout<Splits...>*) {
    (
        [&] {
          if constexpr (contains_v<S, typename Splits::tensor_dim>)
            a[index_of_v<S, typename Splits::tensor_dim>] =
                static_cast<int>(Mesh::template axis_v<typename Splits::mesh_dim>);
        }(),
        ...);
  }(static_cast<Layout*>(nullptr));
  return a;
}();

template <class T>
std::string value_type_name() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, double>)
    return "double";
  else if constexpr (std::is_same_v<T, int>)
    return "int";
  else if constexpr (std::is_same_v<T, long>)
    return "long";
  else
    return typeid(T).name();
}
}  // namespace detail

/// @brief A tensor with named dims, distributed over a mesh.
/// @tparam T      element type
/// @tparam Shape  shape<Dims...>, the dims in storage order
/// @tparam Layout layout<split<Dim, MeshDim>...> naming only Shape's dims, in Shape's order
///                (layout_for_t<Rules, Shape>; tensor_of<> derives it from the mesh's rules)
/// @tparam Mesh   mesh<axes<...>, Rules>
template <class T, class Shape, class Layout, class Mesh>
class tensor {
  static_assert(is_shape_v<Shape>,
                "meshpp::tensor<T, Shape, Layout, Mesh>: Shape must be shape<Dims...>");
  static_assert(is_layout_v<Layout>,
                "meshpp::tensor<T, Shape, Layout, Mesh>: Layout must be layout<split<...>...>");
  static_assert(is_mesh_v<Mesh>,
                "meshpp::tensor<T, Shape, Layout, Mesh>: Mesh must be mesh<axes<...>, Rules>");
  static_assert(std::is_same_v<Layout, layout_for_t<Layout, Shape>> ||
                    offending::layout_is_not_the_rules_restricted_to_shape<Layout, Shape>,
                "meshpp::tensor<T, Shape, Layout, Mesh>: Layout must split only Shape's dims, "
                "listed in Shape's order (write layout_for_t<Rules, Shape>)");
  static_assert(
      offending::two_tensor_dims_on_one_mesh_dim<typename detail::mesh_dim_clash<Layout>::first,
                                                 typename detail::mesh_dim_clash<Layout>::second>,
      "meshpp::tensor: two dims of one tensor are split over the same mesh dim "
      "(illegal layout, Mesh-TensorFlow paper 8.5)");
  static_assert(sizeof(Mesh) > 0 &&
                    offending::rule_names_a_mesh_dim_the_mesh_lacks<
                        detail::unknown_mesh_dim_in_t<typename Mesh::axes_type::shape_type, Layout>,
                        typename Mesh::axes_type>,
                "meshpp::tensor: the layout splits a dim over a mesh dim the mesh does not have");

 public:
  using value_type = T;
  using shape_type = Shape;
  using layout_type = Layout;
  using mesh_type = Mesh;
  static constexpr std::size_t rank = Shape::rank;
  using index_type = std::array<std::size_t, rank>;
  using local_type = xt::xtensor<T, rank>;

  /// A tensor of zeros. `sizes` must give the size of every dim of Shape (it may give more).
  /// A split dim whose size its mesh dim does not divide is split into near-equal blocks, the
  /// last ones shorter (some empty where the dim is smaller than the mesh dim).
  template <class... E>
  tensor(const Mesh& m, const extents<E...>& sizes) : tensor(m, sizes, uninitialized) {
    // xtensor's shape-only constructor leaves the elements uninitialized (a planned mesh's
    // tensors stay so: a plan reads no values)
    if (!m.planning()) local_.fill(T{});
  }

  /// Tag for a tensor whose slice is left uninitialized, for outputs that are about to be
  /// overwritten whole (einsum results, evaluated expressions): saves a pass over memory.
  struct uninitialized_t {};
  static constexpr uninitialized_t uninitialized{};
  template <class... E>
  tensor(const Mesh& m, const extents<E...>& sizes, uninitialized_t)
      : tensor(m, global_sizes(sizes), made_from_sizes{}) {}

  /// Evaluates a named expression (see expr/) into a new tensor, in one fused pass. The
  /// expression must have this tensor's dims (in any order: this transposes by name).
  template <class E>
  requires std::is_base_of_v<expression_node, E> && std::is_same_v<typename E::mesh_type, Mesh>
  tensor(const E& e) : tensor(*e.mesh_ptr(), e.sizes(), uninitialized) {
    assign_expression(*this, e);
  }
  /// A tensor of the same dims in another order or layout, copied and transposed by name
  /// (only where that needs no communication: otherwise a compile error; use relayout).
  template <class T2, class S2, class L2>
  requires(!std::is_same_v<tensor<T2, S2, L2, Mesh>, tensor>)
      tensor(const tensor<T2, S2, L2, Mesh>& other)
      : tensor(other.mesh(), other.sizes(), uninitialized) {
    detail::include_meshpp_expr_evaluate_hpp<T2>::assign(*this, other);
  }
  template <class T2, class S2, class L2>
  requires(!std::is_same_v<tensor<T2, S2, L2, Mesh>, tensor>) tensor& operator=(
      const tensor<T2, S2, L2, Mesh>& other) {
    detail::include_meshpp_expr_evaluate_hpp<T2>::assign(*this, other);
    return *this;
  }

  /// Assigns a named expression element by element (transposing by name).
  template <class E>
  requires std::is_base_of_v<expression_node, E> tensor& operator=(const E& e) {
    assign_expression(*this, e);
    return *this;
  }

  const Mesh& mesh() const { return mesh_; }

  // global_shape(): the global size of every dim, in Shape's order
  const index_type& global_shape() const { return global_; }
  // extent<D>(): the global size of dim D
  template <class D>
  std::size_t extent() const {
    return global_[index_of_v<Shape, D>];
  }
  // sizes(): the global sizes as extents
  auto sizes() const { return sizes_impl(static_cast<Shape*>(nullptr)); }

  // local_shape(): the shape of this rank's slice
  index_type local_shape() const {
    index_type s;
    std::copy_n(local_.shape().begin(), rank, s.begin());
    return s;
  }
  // block_at(coords): the slice the rank at these mesh coordinates holds, as its offsets and
  // extents: along each split dim the stripe at its coordinate (near-equal blocks, the last
  // ones shorter: core/divides.hpp), every other dim whole. This rank's is
  // {local_offsets(), local_shape()}.
  std::pair<index_type, index_type> block_at(const typename Mesh::coordinates_type& coords) const {
    std::pair<index_type, index_type> b;
    detail::block_at(global_, axis_of_dim, mesh_.sizes(), coords, b.first, b.second);
    return b;
  }
  // local_offsets(): the global index of this rank's slice's first element, in each dim
  const index_type& local_offsets() const { return offsets_; }
  // local_offset<D>(): the same for dim D
  template <class D>
  std::size_t local_offset() const {
    return offsets_[index_of_v<Shape, D>];
  }

  // item(): the value of a tensor of no dims. Such a tensor is whole on every rank (it has no
  // dim to split), so every rank returns the same value, without communication.
  T item() const requires(rank == 0) { return *local_.data(); }

  // local(): this rank's slice
  local_type& local() { return local_; }
  const local_type& local() const { return local_; }

  // split_mask(): the mesh dims (as a bit set) that this tensor is split over
  static constexpr unsigned split_mask() { return split_mask_impl(static_cast<Layout*>(nullptr)); }

  /// A human-readable description: dims and sizes, layout, mesh, and this rank's slice.
  ///   tensor<float> [batch:100, rows:28] layout batch:processor_cols on mesh [...]
  ///     rank 3 at (0, 3) holds [75:100, 0:28], local shape [25, 28]
  std::string describe() const {
    constexpr auto names = dim_names_v<Shape>;
    std::string out = "tensor<" + detail::value_type_name<T>() + "> [";
    for (std::size_t i = 0; i < rank; ++i) {
      detail::append(out, i ? ", " : "", names[i], ':', global_[i]);
    }
    std::string rules = to_string(Layout{});
    out += "] layout " + (rules.empty() ? std::string("(replicated)") : rules) + " on mesh " +
           mesh_.describe() + "\n  rank " + std::to_string(mesh_.rank()) + " at (";
    for (std::size_t i = 0; i < Mesh::ndims; ++i) {
      detail::append(out, i ? ", " : "", mesh_.coordinates()[i]);
    }
    out += ") holds [";
    for (std::size_t i = 0; i < rank; ++i) {
      detail::append(out, i ? ", " : "", offsets_[i], ':', offsets_[i] + local_.shape()[i]);
    }
    out += "], local shape [";
    for (std::size_t i = 0; i < rank; ++i) {
      detail::append(out, i ? ", " : "", local_.shape()[i]);
    }
    return out + "]";
  }

 private:
  // The constructors' one body, from the global sizes in Shape's order (the public ones take
  // extents, whose dims and order vary from call to call: each such type instantiates only
  // its conversion to index_type, not this)
  struct made_from_sizes {};
  tensor(const Mesh& m, const index_type& global, made_from_sizes)
      : mesh_(m),
        global_(global),
        local_(detail::block_slice<T, rank>(global_, axis_of_dim, mesh_, offsets_)) {
    mesh_.counters().made(local_.size() * sizeof(T), [this] { return layout_record(); });
  }

  template <class... E>
  static index_type global_sizes(const extents<E...>& sizes) {
    using missing = typename detail::first_missing_extent<Shape, extents<E...>>::type;
    static_assert(offending::no_size_given_for_tensor_dim<missing, extents<E...>>,
                  "meshpp::tensor: the extents give no size for a dim of the tensor");
    if constexpr (std::is_same_v<missing, detail::no_dim>) {
      return sizes.template sizes_of<Shape>();
    } else {
      return {};
    }
  }

  template <class... Dims>
  auto sizes_impl(shape<Dims...>*) const {
    return extents<Dims...>{dim_extent<Dims>{global_[index_of_v<Shape, Dims>]}...};
  }

  template <class... Splits>
  static constexpr unsigned split_mask_impl(layout<Splits...>*) {
    return Mesh::template mask_v<typename Splits::mesh_dim...>;
  }

 public:
  // layout_record(): this tensor's layout, as the counters keep it per operation
  tensor_layout layout_record() const {
    return detail::layout_record(detail::value_type_name<T>(), dim_names_v<Shape>, global_,
                                 axis_of_dim);
  }

  // axis_of_dim[i]: the mesh axis that dim i is split over, or -1 (whole)
  static constexpr const std::array<int, rank>& axis_of_dim =
      detail::axes_of_dims_v<Shape, Layout, Mesh>;

 private:
  Mesh mesh_;
  index_type global_;
  index_type offsets_;
  local_type local_;
};

// is_tensor_v<T>
template <class X>
inline constexpr bool is_tensor_v = false;
template <class T, class S, class L, class M>
inline constexpr bool is_tensor_v<tensor<T, S, L, M>> = true;

// tensor_of<T, Shape, Mesh>: the tensor type laid out by the mesh's rules
template <class T, class Shape, class Mesh>
using tensor_of = tensor<T, Shape, typename Mesh::template layout_for<Shape>, Mesh>;

}  // namespace meshpp

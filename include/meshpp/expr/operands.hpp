// meshpp/expr/operands.hpp — what named expressions are made of: the node tag, the frame
// an operand is read over, and the leaves (tensors and arithmetic scalars).
//
// Protocol of an operand E (tensors, scalars, and function nodes):
//   E::shape_type, E::layout_type, E::mesh_type (void for a scalar), E::value_type
//   e.template size<D>()      global size of dim D
//   e.global_sizes()          global sizes of every dim, in E::shape_type's order (an array)
//   e.mesh_ptr()              the mesh, or nullptr for a scalar
//   e.bytes_read()            bytes of the tensor slices an evaluation reads (its leaves')
//   e.cursor(frame<O>)        a cursor reading e in the dim order O over a local region
//                             (expr/detail/cursors.hpp)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "meshpp/core/layout.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/detail/cursors.hpp"

namespace meshpp {

/// @brief Tag base of every expression node (not tensors: they are leaves).
struct expression_node {};

// is_expression_v<E>: E is a tensor or an expression node
template <class E>
inline constexpr bool is_expression_v = is_tensor_v<std::remove_cvref_t<E>> ||
                                        std::is_base_of_v<expression_node, std::remove_cvref_t<E>>;

/// @brief A region of the local index space, in dim order O: `extent[i]` elements of dim
/// O[i] starting at the global index `offset[i]`.
template <class O>
struct frame {
  static constexpr std::size_t rank = O::rank;
  std::array<std::size_t, rank> extent;
  std::array<std::size_t, rank> offset;
};

// an operand: an expression or an arithmetic scalar
template <class X>
concept operand = is_expression_v<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;
/// binary_operands<A, B>: the operands of a component-wise binary function: at least one an
/// expression, the other an expression or a scalar
template <class A, class B>
concept either_expression = is_expression_v<A> || is_expression_v<B>;
template <class A, class B>
concept binary_operands = operand<A> && operand<B> && either_expression<A, B>;

namespace detail {

/// A tensor as an operand: by pointer when the expression was built from an lvalue (the
/// tensor must outlive the expression, as with xtensor), by value when from an rvalue.
template <class Tensor, bool Owned>
class tensor_leaf : public expression_node {
 public:
  using shape_type = typename Tensor::shape_type;
  using layout_type = typename Tensor::layout_type;
  using mesh_type = typename Tensor::mesh_type;
  using value_type = typename Tensor::value_type;

  explicit tensor_leaf(const Tensor& t) requires(!Owned) : t_(&t) {}
  explicit tensor_leaf(Tensor&& t) requires Owned : t_(std::move(t)) {}

  const Tensor& get() const {
    if constexpr (Owned)
      return t_;
    else
      return *t_;
  }
  template <class D>
  std::size_t size() const {
    return get().template extent<D>();
  }
  // global_sizes(): the global sizes of every dim, in shape_type's order
  const std::array<std::size_t, shape_type::rank>& global_sizes() const {
    return get().global_shape();
  }
  const mesh_type* mesh_ptr() const { return &get().mesh(); }
  // bytes_read(): the bytes of this rank's slice, which an evaluation reads (the counters'
  // passes, core/counters.hpp)
  std::uint64_t bytes_read() const { return get().local().size() * sizeof(value_type); }

  template <class O>
  auto cursor(const frame<O>& fr) const {
    constexpr std::size_t n = O::rank;
    using S = shape_type;
    const Tensor& t = get();
    leaf_cursor<value_type, n, access_of<S, O>()> c{{t.local().data(), {}}};
    const auto local_strides = row_major_strides<S::rank>(t.local().shape());
    for_each_index<n>([&](auto i) {
      using d = dim_at_t<O, i.value>;
      if constexpr (contains_v<S, d>) {
        constexpr std::size_t j = index_of_v<S, d>;
        c.stride[i] = local_strides[j];
        // The frame starts at a global index; this slice starts at its own local offset
        // (the same when both are split alike, 0 when this operand holds the dim whole).
        c.ptr +=
            static_cast<std::ptrdiff_t>(fr.offset[i] - t.local_offsets()[j]) * local_strides[j];
      } else {
        c.stride[i] = 0;
      }
    });
    return c;
  }

 private:
  std::conditional_t<Owned, Tensor, const Tensor*> t_;
};

/// An arithmetic scalar as an operand: broadcast over every dim.
template <class T>
class scalar_leaf : public expression_node {
 public:
  using shape_type = shape<>;
  using layout_type = layout<>;
  using mesh_type = void;
  using value_type = T;

  explicit scalar_leaf(T v) : value_(v) {}
  const std::array<std::size_t, 0>& global_sizes() const {
    static constexpr std::array<std::size_t, 0> none{};
    return none;
  }
  const void* mesh_ptr() const { return nullptr; }
  std::uint64_t bytes_read() const { return 0; }
  template <class O>
  scalar_cursor<T> cursor(const frame<O>&) const {
    return {value_};
  }

 private:
  T value_;
};

// as_operand(x): a tensor (lvalue: referenced; rvalue: owned), an expression node (copied
// or moved), or an arithmetic scalar converted to `Scalar`.
template <class Scalar, class X>
auto as_operand(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_tensor_v<D>) {
    if constexpr (std::is_lvalue_reference_v<X>)
      return tensor_leaf<D, false>(x);
    else
      return tensor_leaf<D, true>(std::forward<X>(x));
  } else if constexpr (std::is_base_of_v<expression_node, D>) {
    return D(std::forward<X>(x));
  } else {
    return scalar_leaf<Scalar>(static_cast<Scalar>(x));
  }
}

template <class X>
struct value_type_of {
  using type = std::remove_cvref_t<X>;
};
template <class X>
requires is_expression_v<X>
struct value_type_of<X> {
  using type = typename std::remove_cvref_t<X>::value_type;
};

// The type scalars are converted to: that of the first expression operand, so `x * 0.5`
// keeps a float tensor float.
template <class... X>
using scalar_type_t = typename value_type_of<
    first_found_t<std::conditional_t<is_expression_v<X>, std::remove_cvref_t<X>, no_dim>...>>::type;

// as_expression(x): a tensor as a (referencing) leaf; an expression node as itself
template <class E>
decltype(auto) as_expression(const E& e) {
  if constexpr (is_tensor_v<E>)
    return tensor_leaf<E, false>(e);
  else
    return (e);
}
}  // namespace detail

}  // namespace meshpp

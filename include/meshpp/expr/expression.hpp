// meshpp/expr/expression.hpp — named expressions: lazy component-wise computations over
// distributed tensors, broadcast by dim *name*.
//
//   auto e = relu(a * b + c);   // a, b: [batch, hidden], c: [hidden]; nothing computed yet
//   tensor_t h = e;             // one fused pass over the local slices, no communication
//
// An expression's dims are the union of its operands' dims (first operand's order, then new
// dims); its layout is the union of its operands' layouts. A shared dim must be split the
// same way in every operand that splits it (a compile error otherwise); an operand that
// holds a dim whole while another splits it is read at this rank's stripe (free slicing).
//
// Protocol of an operand E (tensors, scalars, and function nodes):
//   E::shape_type, E::layout_type, E::mesh_type (void for a scalar), E::value_type
//   e.template size<D>()      global size of dim D
//   e.mesh_ptr()              the mesh, or nullptr for a scalar
//   e.cursor(frame<O>)        a cursor reading e in the dim order O over a local region
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"

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

namespace detail {

// How a leaf is read along the innermost dim of the evaluation order: known from the types.
enum class access { contiguous, invariant, strided };

template <class S, class O>
constexpr access access_of() {
  if constexpr (O::rank == 0) {
    return access::invariant;
  } else {
    using inner = dim_at_t<O, O::rank - 1>;
    if constexpr (!contains_v<S, inner>)
      return access::invariant;
    else if constexpr (index_of_v<S, inner> + 1 == S::rank)
      return access::contiguous;
    else
      return access::strided;
  }
}

/// Reads a leaf's elements along rows of the evaluation order. `ptr` points at the start of
/// the current row; step/unstep move it along the outer dims.
template <class T, std::size_t N, access A>
struct leaf_cursor {
  const T* ptr;
  std::array<std::ptrdiff_t, N> stride;

  T at(std::size_t j) const {
    if constexpr (A == access::contiguous)
      return ptr[j];
    else if constexpr (A == access::invariant)
      return *ptr;
    else
      return ptr[static_cast<std::ptrdiff_t>(j) * stride[N - 1]];
  }
  void step(std::size_t d) { ptr += stride[d]; }
  void unstep(std::size_t d, std::size_t n) { ptr -= stride[d] * static_cast<std::ptrdiff_t>(n); }
  template <class F>
  void visit_strides(F&& f) {
    f(stride);
  }
};

template <class T>
struct scalar_cursor {
  T value;
  T at(std::size_t) const { return value; }
  void step(std::size_t) {}
  void unstep(std::size_t, std::size_t) {}
  template <class F>
  void visit_strides(F&&) {}
};

template <class F, class... C>
struct function_cursor {
  F f;
  std::tuple<C...> args;

  auto at(std::size_t j) const {
    return std::apply([&](const auto&... c) { return f(c.at(j)...); }, args);
  }
  void step(std::size_t d) {
    std::apply([&](auto&... c) { (c.step(d), ...); }, args);
  }
  void unstep(std::size_t d, std::size_t n) {
    std::apply([&](auto&... c) { (c.unstep(d, n), ...); }, args);
  }
  template <class V>
  void visit_strides(V&& v) {
    std::apply([&](auto&... c) { (c.visit_strides(v), ...); }, args);
  }
};

// Row-major strides of a local slice.
template <std::size_t N, class Shape>
std::array<std::ptrdiff_t, N> row_major_strides(const Shape& shape) {
  std::array<std::ptrdiff_t, N> s{};
  std::ptrdiff_t at = 1;
  for (std::size_t i = N; i-- > 0;) {
    s[i] = at;
    at *= static_cast<std::ptrdiff_t>(shape[i]);
  }
  return s;
}

// for_each_index<N>(f): f(std::integral_constant<std::size_t, I>) for I in [0, N)
template <std::size_t N, class F>
constexpr void for_each_index(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::integral_constant<std::size_t, I>{}), ...);
  }
  (std::make_index_sequence<N>{});
}

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
  const mesh_type* mesh_ptr() const { return &get().mesh(); }

  template <class O>
  auto cursor(const frame<O>& fr) const {
    constexpr std::size_t n = O::rank;
    using S = shape_type;
    const Tensor& t = get();
    leaf_cursor<value_type, n, access_of<S, O>()> c{t.local().data(), {}};
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
  const void* mesh_ptr() const { return nullptr; }
  template <class O>
  scalar_cursor<T> cursor(const frame<O>&) const {
    return {value_};
  }

 private:
  T value_;
};

// rule_in_t<L, Rule>: L's rule for Rule's tensor dim (or no_dim when Rule is no_dim)
template <class L, class Rule>
struct rule_in {
  using type = split<typename Rule::tensor_dim, mesh_dim_of_t<L, typename Rule::tensor_dim>>;
};
template <class L>
struct rule_in<L, no_dim> {
  using type = no_dim;
};
template <class L, class Rule>
using rule_in_t = typename rule_in<L, Rule>::type;

// merge_layouts<Ls...>: the union of the operands' layouts. `conflict` is the first rule of
// an operand that splits a dim over another mesh dim than the operands before it, and
// `conflict_with` the earlier rule for that dim (both no_dim if there is none).
template <class... Ls>
struct merge_layouts;
template <class L>
struct merge_layouts<L> {
  using type = L;
  using conflict = no_dim;
  using conflict_with = no_dim;
};
template <class A, class B, class... Rest>
struct merge_layouts<A, B, Rest...> {
  using step = layout_merge<A, B>;
  using next = merge_layouts<typename step::type, Rest...>;
  using type = typename next::type;
  static constexpr bool here = !std::is_same_v<typename step::conflict, no_dim>;
  using conflict = std::conditional_t<here, typename step::conflict, typename next::conflict>;
  using conflict_with =
      std::conditional_t<here, rule_in_t<A, typename step::conflict>, typename next::conflict_with>;
};

// common_mesh<Ms...>: the first mesh type of the operands (void for scalars), and `other`:
// the first operand mesh type that differs from it, or no_dim.
template <class... Ms>
struct common_mesh {
  using type = void;
  using other = no_dim;
};
template <class M, class... Rest>
struct common_mesh<M, Rest...> {
  using type = std::conditional_t<std::is_void_v<M>, typename common_mesh<Rest...>::type, M>;
  using other = first_found_t<
      std::conditional_t<std::is_void_v<Rest> || std::is_same_v<Rest, type>, no_dim, Rest>...>;
};

template <class... Ss>
struct union_all;
template <>
struct union_all<> {
  using type = shape<>;
};
template <class S, class... Rest>
struct union_all<S, Rest...> {
  using type = shape_union_t<S, typename union_all<Rest...>::type>;
};
}  // namespace detail

namespace offending {
template <class Rule, class OtherRule>
inline constexpr bool operands_split_a_shared_dim_over_two_mesh_dims =
    std::is_same_v<Rule, detail::no_dim>;
template <class Mesh, class OtherMesh>
inline constexpr bool operands_on_meshes_of_different_types =
    std::is_same_v<OtherMesh, detail::no_dim>;
template <class Rule, class OtherRule>
inline constexpr bool result_has_two_dims_on_one_mesh_dim = std::is_same_v<Rule, detail::no_dim>;
}  // namespace offending

/// @brief A component-wise function of operands, lazily evaluated.
/// @tparam F    the element functor, called with one element of each operand
/// @tparam Args the operands (tensor_leaf, scalar_leaf, function_expr)
///
/// Every component-wise operation (a + b, exp(a), where(c, a, b), make_function(f, ...))
/// builds this node, so its checks below are the one place for them; their messages name it.
template <class F, class... Args>
class function_expr : public expression_node {
  using merged = detail::merge_layouts<typename Args::layout_type...>;
  using meshes = detail::common_mesh<typename Args::mesh_type...>;
  // If this fails, two operands split one dim over different mesh dims: no rank holds
  // matching stripes of both. The condition names the two rules.
  static_assert(offending::operands_split_a_shared_dim_over_two_mesh_dims<
                    typename merged::conflict_with, typename merged::conflict>,
                "meshpp::function_expr<F, Args...> (a + b, f(a, b), ...): two operands split a "
                "shared dim over different mesh dims; relayout one of them first");
  static_assert(offending::operands_on_meshes_of_different_types<typename meshes::type,
                                                                 typename meshes::other>,
                "meshpp::function_expr<F, Args...> (a + b, f(a, b), ...): the operands live on "
                "meshes of different types");

 public:
  using shape_type = typename detail::union_all<typename Args::shape_type...>::type;
  using layout_type = layout_for_t<typename merged::type, shape_type>;
  using mesh_type = typename meshes::type;
  using value_type =
      std::remove_cvref_t<std::invoke_result_t<const F&, typename Args::value_type...>>;

  // If this fails, each operand's layout is legal but together they split two dims of the
  // result over one mesh dim; the condition names the two rules.
  static_assert(offending::result_has_two_dims_on_one_mesh_dim<
                    typename detail::mesh_dim_clash<layout_type>::first,
                    typename detail::mesh_dim_clash<layout_type>::second>,
                "meshpp::function_expr<F, Args...> (a + b, f(a, b), ...): the operands' layouts "
                "put two dims of the result on one mesh dim (illegal layout, Mesh-TensorFlow "
                "paper 8.5)");

  explicit function_expr(F f, Args... args) : f_(std::move(f)), args_(std::move(args)...) {
    check_operands();
  }

  // size<D>(): the global size of dim D (from the first operand that has it)
  template <class D>
  std::size_t size() const {
    std::size_t out = 0;
    bool found = false;
    auto visit = [&](const auto& a) {
      if constexpr (contains_v<typename std::remove_cvref_t<decltype(a)>::shape_type, D>) {
        if (!found) out = a.template size<D>();
        found = true;
      }
    };
    std::apply([&](const auto&... a) { (visit(a), ...); }, args_);
    return out;
  }

  // sizes(): the global sizes of every dim, as extents
  auto sizes() const { return sizes_impl(static_cast<shape_type*>(nullptr)); }

  const mesh_type* mesh_ptr() const {
    const mesh_type* m = nullptr;
    std::apply(
        [&](const auto&... a) { ((m = m ? m : static_cast<const mesh_type*>(a.mesh_ptr())), ...); },
        args_);
    return m;
  }

  template <class O>
  auto cursor(const frame<O>& fr) const {
    return std::apply(
        [&](const auto&... a) {
          return detail::function_cursor<F, decltype(a.cursor(fr))...>{f_, {a.cursor(fr)...}};
        },
        args_);
  }

 private:
  template <class... Dims>
  auto sizes_impl(shape<Dims...>*) const {
    return extents<Dims...>{dim_extent<Dims>{size<Dims>()}...};
  }

  // Same-named dims must agree in size, and operands must share one mesh. Every rank sees
  // the same sizes, so every rank throws the same error.
  void check_operands() const {
    detail::for_each_index<shape_type::rank>([&](auto i) {
      using d = dim_at_t<shape_type, i.value>;
      const std::size_t expected = size<d>();
      std::apply([&](const auto&... a) { (check_size<d>(a, expected), ...); }, args_);
    });
    if constexpr (!std::is_void_v<mesh_type>) {
      const mesh_type* m = mesh_ptr();
      std::apply(
          [&](const auto&... a) {
            ((a.mesh_ptr() && !(*static_cast<const mesh_type*>(a.mesh_ptr()) == *m)
                  ? throw error("meshpp: the operands of a component-wise operation live on "
                                "different meshes")
                  : void()),
             ...);
          },
          args_);
    }
  }
  template <class D, class A>
  static void check_size(const A& a, std::size_t expected) {
    if constexpr (contains_v<typename A::shape_type, D>) {
      if (a.template size<D>() != expected) {
        throw error(
            "meshpp: the operands of a component-wise operation disagree on the size "
            "of dim '" +
            std::string(D::name()) + "': " + std::to_string(expected) + " and " +
            std::to_string(a.template size<D>()));
      }
    }
  }

  F f_;
  std::tuple<Args...> args_;
};

namespace detail {
// as_operand(x): a tensor (lvalue: referenced; rvalue: owned), an expression node (copied
// or moved), or an arithmetic scalar converted to `Scalar`.
template <class Scalar, class X>
auto as_operand(X&& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_tensor_v<D>) {
    if constexpr (std::is_lvalue_reference_v<X>)
      return tensor_leaf<D, false>(x);
    else
      return tensor_leaf<D, true>(std::move(x));
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
}  // namespace detail

namespace detail {
// as_expression(x): a tensor as a (referencing) leaf; an expression node as itself
template <class E>
decltype(auto) as_expression(const E& e) {
  if constexpr (is_tensor_v<E>)
    return tensor_leaf<E, false>(e);
  else
    return (e);
}
}  // namespace detail

// an operand: an expression or an arithmetic scalar
template <class X>
concept operand = is_expression_v<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;

// make_function(f, operands...): the lazy node applying f element-wise; at least one
// operand must be an expression.
template <class F, class... X>
requires(operand<X>&&...) && (is_expression_v<X> || ...) auto make_function(F f, X&&... x) {
  using scalar = detail::scalar_type_t<X...>;
  return function_expr<F, decltype(detail::as_operand<scalar>(std::forward<X>(x)))...>(
      std::move(f), detail::as_operand<scalar>(std::forward<X>(x))...);
}

}  // namespace meshpp

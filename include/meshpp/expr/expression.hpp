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
// The operands (tensors, scalars, other nodes) and what they provide: expr/operands.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/expr/detail/cursors.hpp"
#include "meshpp/expr/operands.hpp"

namespace meshpp {

namespace detail {
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

// agree_operand_sizes(result, n, operands, where, k, names): result[i], the global size of the
// node's dim i (of n), is that of the first of the k operands that has it, and every operand
// that has it must agree (names[i] is its name). where[j * n + i]: the index of dim i among
// operand j's dims, or -1; operands[j]: operand j's global sizes. One function for every
// component-wise node, not a template: the nodes differ only in these tables, so the check is
// compiled once rather than once per node type, dim and operand.
inline void agree_operand_sizes(std::size_t* result, std::size_t n,
                                const std::size_t* const* operands, const int* where, std::size_t k,
                                const std::string_view* names) {
  for (std::size_t i = 0; i < n; ++i) {
    bool found = false;
    std::size_t expected = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const int at = where[j * n + i];
      if (at < 0) continue;
      const std::size_t got = operands[j][at];
      if (!found) {
        expected = got;
        found = true;
      } else if (got != expected) {
        fail({"meshpp: the operands of a component-wise operation disagree on the ",
              "size of dim '", names[i], "': ", expected, " and ", got});
      }
    }
    result[i] = expected;
  }
}

// agree_operand_meshes<Mesh>(meshes, k): the k operands' meshes (nullptr for a scalar) are one
// mesh; a template of the mesh type alone, not of the node
template <class Mesh>
void agree_operand_meshes(const void* const* meshes, std::size_t k) {
  const Mesh* first = nullptr;
  for (std::size_t j = 0; j < k; ++j) {
    if (meshes[j] == nullptr) continue;
    const Mesh* m = static_cast<const Mesh*>(meshes[j]);
    if (first == nullptr)
      first = m;
    else if (!(*m == *first))
      fail({"meshpp: the operands of a component-wise operation live on ", "different meshes"});
  }
}

// operand_dims_in<S, Operand shapes...>(): where[j * rank + i], the index of S's dim i among
// the j-th shape's dims, or -1 (the table of agree_operand_sizes)
template <class S, class... Ss>
constexpr auto operand_dims_in() {
  std::array<int, (S::rank * sizeof...(Ss)) + 1> where{};  // + 1: no zero-size array
  std::size_t j = 0;
  auto one = [&]<class O>(O*) {
    for_each_index<S::rank>([&](auto i) {
      using d = dim_at_t<S, i.value>;
      if constexpr (contains_v<O, d>)
        where[j * S::rank + i.value] = int(index_of_v<O, d>);
      else
        where[j * S::rank + i.value] = -1;
    });
    ++j;
  };
  (one(static_cast<Ss*>(nullptr)), ...);
  return where;
}

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

  explicit function_expr(F f, Args... args) : f_(std::move(f)), args_{{std::move(args)}...} {
    check_operands(true);
  }

  // size<D>(): the global size of dim D (from the first operand that has it)
  template <class D>
  std::size_t size() const {
    if constexpr (contains_v<shape_type, D>)
      return global_sizes()[index_of_v<shape_type, D>];
    else
      return 0;
  }
  // global_sizes(): the global sizes of every dim, in shape_type's order, as the operands have
  // them now, checked again: a tensor the expression refers to may have been assigned a tensor
  // of other sizes since the expression was made (`auto e = a + 1; a = b; c = e;`)
  const std::array<std::size_t, shape_type::rank>& global_sizes() const {
    check_operands(false);
    return sizes_;
  }

  // sizes(): the global sizes of every dim, as extents
  auto sizes() const { return sizes_impl(static_cast<shape_type*>(nullptr)); }

  const mesh_type* mesh_ptr() const {
    const mesh_type* m = nullptr;
    args_.apply([&](const auto&... a) {
      ((m = m ? m : static_cast<const mesh_type*>(a.mesh_ptr())), ...);
    });
    return m;
  }

  // bytes_read(): the bytes of the tensor slices an evaluation reads: each leaf's whole local
  // slice, once per use (an upper bound where the frame is a part of a leaf's slice)
  std::uint64_t bytes_read() const {
    return args_.apply([](const auto&... a) { return (std::uint64_t{0} + ... + a.bytes_read()); });
  }

  template <class O>
  auto cursor(const frame<O>& fr) const {
    return args_.apply([&](const auto&... a) {
      return detail::function_cursor<F, decltype(a.cursor(fr))...>{{{{a.cursor(fr)}...}}, f_};
    });
  }

 private:
  template <class... Dims>
  auto sizes_impl(shape<Dims...>*) const {
    return extents<Dims...>{dim_extent<Dims>{size<Dims>()}...};
  }

  // Same-named dims must agree in size (and their sizes are this node's), and (when made, with
  // `meshes`) operands must share one mesh. Every rank sees the same sizes, so every rank
  // throws the same error.
  void check_operands(bool meshes) const {
    static constexpr auto where =
        detail::operand_dims_in<shape_type, typename Args::shape_type...>();
    args_.apply([&](const auto&... a) {
      const std::size_t* operands[] = {a.global_sizes().data()..., nullptr};
      detail::agree_operand_sizes(sizes_.data(), shape_type::rank, operands, where.data(),
                                  sizeof...(Args), dim_names_v<shape_type>.data());
      if constexpr (!std::is_void_v<mesh_type>) {
        const void* of_operands[] = {a.mesh_ptr()..., nullptr};
        if (meshes) detail::agree_operand_meshes<mesh_type>(of_operands, sizeof...(Args));
      }
    });
  }
  F f_;
  detail::pack<Args...> args_;
  // global_sizes()'s last answer (an expression is not evaluated from two threads at once)
  mutable std::array<std::size_t, shape_type::rank> sizes_{};
};

// make_function(f, operands...): the lazy node applying f element-wise; at least one
// operand must be an expression.
template <class F, class... X>
requires(operand<X>&&...) && (is_expression_v<X> || ...) auto make_function(F f, X&&... x) {
  using scalar = detail::scalar_type_t<X...>;
  return function_expr<F, decltype(detail::as_operand<scalar>(std::forward<X>(x)))...>(
      std::move(f), detail::as_operand<scalar>(std::forward<X>(x))...);
}

}  // namespace meshpp

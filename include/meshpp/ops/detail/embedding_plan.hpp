// meshpp/ops/detail/embedding_plan.hpp — what take<Dim>(table, ids) and
// one_hot<Dim>(ids, sizes) decide at compile time: the result's dims and layout, the mesh dim
// the lookup sums over, and each check's offender (or no_dim).
#pragma once

#include <type_traits>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/detail/embedding_ids.hpp"

namespace meshpp::detail {

// rule_on_mesh_dim_t<L, M>: the rule of L onto mesh dim M, or no_dim (also when M is
// no_mesh_dim: a dim that is not split)
template <class L, class M>
struct rule_on_mesh_dim;
template <class... Splits, class M>
struct rule_on_mesh_dim<layout<Splits...>, M> {
  using type = first_found_t<
      std::conditional_t<std::is_same_v<typename Splits::mesh_dim, M>, Splits, no_dim>...>;
};
template <class L, class M>
using rule_on_mesh_dim_t = typename rule_on_mesh_dim<L, M>::type;

// no_clash: mesh_dim_clash's answer when there is nothing to check
struct no_clash {
  using first = no_dim;
  using second = no_dim;
};

// lookup_rule_of<L, Dim, true>::type: L's rule for Dim (no_dim when Dim is whole)
template <class L, class Dim, bool Split>
struct lookup_rule_of {
  using type = no_dim;
};
template <class L, class Dim>
struct lookup_rule_of<L, Dim, true> {
  using type = split<Dim, mesh_dim_of_t<L, Dim>>;
};

/// The compile-time plan of take<Dim>(table, ids); each check names the offender or no_dim.
template <class Dim, class Table, class Ids>
struct take_plan {
  using table_shape = typename Table::shape_type;
  using ids_shape = typename Ids::shape_type;
  using table_layout = typename Table::layout_type;
  using ids_layout = typename Ids::layout_type;
  // ids' dims, then the table's dims other than Dim that ids lack (in the table's order)
  using rest = shape_difference_t<table_shape, shape<Dim>>;
  using out = shape_union_t<ids_shape, rest>;
  using new_dims = shape_difference_t<rest, ids_shape>;
  // The layout checks below report only once Dim is named right (else they would repeat
  // that error in other words).
  static constexpr bool names_ok = contains_v<table_shape, Dim> && !contains_v<ids_shape, Dim>;
  using merge = layout_merge<ids_layout, table_layout>;
  using conflict = std::conditional_t<names_ok, typename merge::conflict, no_dim>;  // table's
  using conflict_with = rule_in_t<ids_layout, conflict>;
  using out_layout = layout_for_t<typename merge::type, out>;
  using clash = std::conditional_t<names_ok, mesh_dim_clash<out_layout>, no_clash>;
  static constexpr bool lookup_split = is_split_in_v<table_layout, Dim>;
  using lookup_mesh_dim = mesh_dim_of_t<table_layout, Dim>;  // no_mesh_dim when Dim is whole
  using lookup_rule = typename lookup_rule_of<table_layout, Dim, lookup_split>::type;
  using ids_on_lookup_mesh_dim =
      std::conditional_t<names_ok, rule_on_mesh_dim_t<ids_layout, lookup_mesh_dim>, no_dim>;
  // the mesh dims the allreduce runs over: Dim's, or none (as an over<> and as a shape<>)
  using reduce_over = std::conditional_t<lookup_split, over<lookup_mesh_dim>, over<>>;
  using summed_mesh_dims = std::conditional_t<lookup_split, shape<lookup_mesh_dim>, shape<>>;

  static constexpr bool ok = names_ok && is_id_type_v<typename Ids::value_type> &&
                             std::is_same_v<conflict, no_dim> &&
                             std::is_same_v<typename clash::first, no_dim> &&
                             std::is_same_v<ids_on_lookup_mesh_dim, no_dim> &&
                             std::is_same_v<typename Table::mesh_type, typename Ids::mesh_type>;
};

/// The compile-time plan of one_hot<Dim>(ids, sizes)
template <class Dim, class Ids>
struct one_hot_plan {
  using ids_shape = typename Ids::shape_type;
  using ids_layout = typename Ids::layout_type;
  // as for take_plan, the layout checks report only once Dim is named right
  static constexpr bool names_ok = !contains_v<ids_shape, Dim>;
  using out = shape_concat_t<ids_shape, std::conditional_t<names_ok, shape<Dim>, shape<>>>;
  using out_layout = typename Ids::mesh_type::template layout_for<out>;
  using clash = std::conditional_t<names_ok, mesh_dim_clash<out_layout>, no_clash>;
  // ids' rule for the first dim that ids split and the result does not split alike, or no_dim
  using ids_rule_unlike_the_result =
      std::conditional_t<names_ok,
                         typename assignable_layout<layout_for_t<out_layout, ids_shape>, ids_layout,
                                                    ids_shape>::offending_rule,
                         no_dim>;
  static constexpr bool ok = names_ok && is_id_type_v<typename Ids::value_type> &&
                             std::is_same_v<typename clash::first, no_dim> &&
                             std::is_same_v<ids_rule_unlike_the_result, no_dim>;
};

}  // namespace meshpp::detail

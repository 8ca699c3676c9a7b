// meshpp/ops/embedding.hpp — embedding lookups by name: take<Dim>(table, ids) and
// one_hot<Dim>(ids, sizes).
//
//   auto x = take<vocab>(table, ids);              // table[vocab, d_model], ids[batch, seq]
//                                                    //   -> x[batch, seq, d_model]
//   auto h = one_hot<vocab>(ids, sizes);             // -> h[batch, seq, vocab], float 0/1
//   auto g = einsum<shape<vocab, d_model>>(h, dy);   // the table's gradient: dense
//
// take:    [vocab/cols, d_model] x ids[batch/rows, seq] |-> [batch/rows, seq, d_model]
//              each rank looks up the rows of its vocab stripe (zeros for other ids),
//              then allreduce over cols: vocab is split there (none when vocab is whole)
// take<vocab, layout<split<seq, cols>, ...>>: the same lookup, then reduce_scatter over cols
//              |-> [batch/rows, seq/cols, d_model]: each rank receives only its stripe
// one_hot: ids[batch/rows, seq] |-> [batch/rows, seq, vocab/cols]
//              each rank fills its stripe of vocab: no communication
//
// take<Dim>(table, ids) is einsum(one_hot<Dim>(ids), table) contracting Dim, without
// materializing the one-hot tensor: the same plan (a local pass, then one allreduce over
// the mesh dim the contracted dim is split over) and the same layout rules. The ranks of one
// group along Dim's mesh dim must look up the same ids, so ids must not be split over that
// mesh dim (a compile error; relayout ids first). Shared dims other than Dim (a table per
// batch entry: table[batch, vocab, d], ids[batch, seq]) are batch dims of the lookup:
// out[b, s, :] = table[b, ids[b, s], :].
//
// Why dense: the densifying paper (Cavdar et al., ISC 2019) found that treating the
// gradient of a lookup as sparse (gathering index/row pairs from every rank) grows memory
// with the number of ranks, and that one dense allreduce scales. Here the forward lookup
// sends one dense allreduce (or, laid out by OutRules, reduce_scatter) of the output's size,
// whatever the vocabulary size, and the table's gradient is the dense einsum above: one allreduce
// of the table's stripe over the mesh dims that batch and seq are split over.
//
// Ids out of range (negative, or not below Dim's size) throw meshpp::error on every rank,
// before any communication of the operation: when ids are replicated every rank sees the
// same ids and throws alone; when ids are split, the ranks agree on the error with one
// small allreduce over the mesh's world (core/agree.hpp). That agreement carries no tensor
// data and is not recorded in the counters.
//
// Here: the public gather and one_hot and their work. The compile-time plans are in
// ops/detail/embedding_plan.hpp, the checks of ids in ops/detail/embedding_ids.hpp, the local
// pass over the looked-up rows (shared with the gradient) in ops/detail/embedding_rows.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/traverse.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/detail/complete_sums.hpp"
#include "meshpp/ops/detail/embedding_ids.hpp"
#include "meshpp/ops/detail/embedding_plan.hpp"
#include "meshpp/ops/detail/embedding_rows.hpp"
#include "meshpp/ops/detail/materialized.hpp"
#include "meshpp/ops/operands.hpp"

namespace meshpp {

namespace offending {
template <class Dim, class IdsShape>
inline constexpr bool ids_have_the_lookup_dim = false;
template <class Dim, class TableShape>
inline constexpr bool table_lacks_the_lookup_dim = false;
template <class IdValueType>
inline constexpr bool ids_are_not_integers = false;
template <class Rule, class OtherRule>
inline constexpr bool ids_and_table_split_a_shared_dim_over_two_mesh_dims =
    std::is_same_v<Rule, detail::no_dim>;
template <class IdsRule, class LookupRule>
inline constexpr bool ids_split_over_the_lookup_dims_mesh_dim =
    std::is_same_v<IdsRule, detail::no_dim>;
template <class Rule, class OtherRule>
inline constexpr bool lookup_result_has_two_dims_on_one_mesh_dim =
    std::is_same_v<Rule, detail::no_dim>;
template <class Mesh, class OtherMesh>
inline constexpr bool table_and_ids_on_meshes_of_different_types = std::is_same_v<Mesh, OtherMesh>;
template <class IdsRule, class ResultLayout>
inline constexpr bool ids_split_a_dim_the_one_hot_result_does_not =
    std::is_same_v<IdsRule, detail::no_dim>;
template <class Rule, class OtherRule>
inline constexpr bool one_hot_result_has_two_dims_on_one_mesh_dim =
    std::is_same_v<Rule, detail::no_dim>;
template <class Dim, class Extents>
inline constexpr bool no_size_given_for_the_one_hot_dim = false;
}  // namespace offending

namespace detail {

// take_impl<Dim, OutRules>(table, ids): the work of take<Dim>(table, ids) (OutRules void) or
// take<Dim, OutRules>(table, ids), once the checks there have passed
template <class Dim, class OutRules, class Table, class Ids>
auto take_impl(const Table& table, const Ids& ids) {
  using plan = take_plan<Dim, Table, Ids>;
  using TS = typename plan::table_shape;
  using IS = typename plan::ids_shape;
  using Out = typename plan::out;
  const auto scope = ids.mesh().counters().operation([] {
    return detail::listed_operation(operation_kind::take, "take",
                                    {dim_names_v<TS>, dim_names_v<IS>, dim_names_v<Out>}, " at ");
  });
  using T = typename Table::value_type;
  using Mesh = typename Table::mesh_type;
  const Mesh& mesh = table.mesh();
  const std::string what = "meshpp::take<" + std::string(Dim::name()) + ">(table, ids)";
  check_operands<shape_intersection_t<IS, TS>>(what, "table and ids", as_expression(table),
                                               as_expression(ids));
  check_ids<Dim>(what, ids, table.template extent<Dim>());

  using result_t = tensor<T, Out, typename plan::out_layout, Mesh>;
  const auto out_sizes = sizes_from<Out>(as_expression(ids), as_expression(table));
  result_t out(mesh, out_sizes, result_t::uninitialized);
  // the ids and the rows read (as many as are written)
  mesh.counters().streamed([&] {
    return ids.local().size() * sizeof(typename Ids::value_type) + out.local().size() * sizeof(T);
  });

  // The local pass: for each id of this rank's region, its row of the table if this rank
  // holds it, else zeros.
  for_each_lookup_row<Dim>(
      ids, table, out, [](const T& from, T& to) { to = from; },
      [](std::span<T> row) { std::fill(row.begin(), row.end(), T{}); });

  // Each id's row lives on one rank of the group along Dim's mesh dim; the others wrote
  // zeros, so the sum is the row (an allreduce over no mesh dims is nothing at all). Laid out
  // by OutRules, a dim requested split over that mesh dim is reduce-scattered instead.
  if constexpr (std::is_void_v<OutRules>) {
    allreduce<typename plan::reduce_over, op::sum>::run(
        mesh, std::span(out.local().data(), out.local().size()));
    return out;
  } else {
    return sums_laid_out<layout_for_t<OutRules, Out>, typename plan::summed_mesh_dims>(
        std::move(out));
  }
}

// one_hot_impl<Dim, T>(ids, size): the work of one_hot<Dim, T>(ids, sizes)
template <class Dim, class T, class Ids>
auto one_hot_impl(const Ids& ids, std::size_t size) {
  using plan = one_hot_plan<Dim, Ids>;
  using IS = typename plan::ids_shape;
  using Out = typename plan::out;
  using Mesh = typename Ids::mesh_type;
  const auto scope = ids.mesh().counters().operation(
      [] { return "one_hot " + to_string(IS{}) + " -> " + to_string(Out{}); });
  check_ids<Dim>("meshpp::one_hot<" + std::string(Dim::name()) + ">(ids, sizes)", ids, size);

  using result_t = tensor<T, Out, typename plan::out_layout, Mesh>;
  const auto out_sizes = [&]<class... Dims>(shape<Dims...>*) {
    return extents<Dims..., Dim>{dim_extent<Dims>{ids.template extent<Dims>()}...,
                                 dim_extent<Dim>{size}};
  }(static_cast<IS*>(nullptr));
  result_t out(ids.mesh(), out_sizes);  // zeros

  constexpr std::size_t ni = IS::rank;
  const auto out_shape = out.local_shape();
  const auto& out_offsets = out.local_offsets();
  const auto ids_strides = row_major_strides<ni>(ids.local().shape());
  const auto* ids_at = ids.local().data();
  for (std::size_t i = 0; i < ni; ++i) {
    ids_at += static_cast<std::ptrdiff_t>(out_offsets[i] - ids.local_offsets()[i]) * ids_strides[i];
  }
  const std::size_t stripe_begin = out_offsets[ni];
  const std::size_t stripe_size = out_shape[ni];
  std::array<std::size_t, ni> outer{};  // one position per index of ids' dims
  for (std::size_t i = 0; i < ni; ++i) outer[i] = out_shape[i];

  T* o = out.local().data();
  strided_cursor<decltype(ids_at), ni> id_at{ids_at, ids_strides};
  if (stripe_size == 0) return out;
  for_each_position(outer, id_at, [&](const auto&) {
    const std::size_t row = static_cast<std::size_t>(*id_at.ptr) - stripe_begin;  // wraps if below
    if (static_cast<std::size_t>(*id_at.ptr) >= stripe_begin && row < stripe_size) o[row] = T(1);
    o += stripe_size;
  });
  return out;
}

}  // namespace detail

// Both entry points check their operands here, at the call, so an error is reported in the
// user's terms; each condition names the offending dims or rules.

/// take<Dim>(table, ids): the rows of `table` along Dim that `ids` name (an embedding
/// lookup). The result has ids' dims, then table's dims other than Dim (those ids lack), and
/// table's value type: out[b, s, :] = table[ids[b, s], :]. Laid out as ids and table
/// together on those dims. One allreduce over the mesh dim Dim is split over (none when Dim
/// is whole); throws meshpp::error on every rank if an id is outside [0, size of Dim).
template <class Dim, class Table, class Ids>
requires is_expression_v<Table> && is_expression_v<Ids>
auto take(const Table& table, const Ids& ids) {
  using plan = detail::take_plan<Dim, Table, Ids>;
  using TS = typename plan::table_shape;
  using IS = typename plan::ids_shape;
  static_assert(offending::table_lacks_the_lookup_dim<Dim, TS> || contains_v<TS, Dim>,
                "meshpp::take<Dim>(table, ids): the table has no dim Dim to look up along");
  static_assert(offending::ids_have_the_lookup_dim<Dim, IS> || !contains_v<IS, Dim>,
                "meshpp::take<Dim>(table, ids): ids must not have the dim Dim they index; the "
                "result replaces Dim by ids' dims");
  static_assert(offending::ids_are_not_integers<typename Ids::value_type> ||
                    detail::is_id_type_v<typename Ids::value_type>,
                "meshpp::take<Dim>(table, ids): ids must hold integers (not bool or a character "
                "type)");
  // If this fails, a dim of both table and ids is split over one mesh dim in ids and another
  // in table: no rank holds matching stripes of both. The condition names both rules.
  static_assert(
      offending::ids_and_table_split_a_shared_dim_over_two_mesh_dims<typename plan::conflict_with,
                                                                     typename plan::conflict>,
      "meshpp::take<Dim>(table, ids): a dim of both table and ids is split over "
      "different mesh dims in each; relayout one of them first");
  // If this fails, ids are split over the mesh dim that the table splits Dim over: the ranks
  // holding the other rows of Dim hold other ids, so one allreduce cannot assemble the rows.
  // The condition names ids' rule and the table's rule for Dim.
  static_assert(
      offending::ids_split_over_the_lookup_dims_mesh_dim<typename plan::ids_on_lookup_mesh_dim,
                                                         typename plan::lookup_rule>,
      "meshpp::take<Dim>(table, ids): ids are split over the mesh dim that the table "
      "splits Dim over; ids must be whole along it (relayout ids first)");
  // If this fails, each operand's layout is legal but together they split two dims of the
  // result over one mesh dim (Mesh-TensorFlow paper 8.5): the condition names the two rules.
  static_assert(offending::lookup_result_has_two_dims_on_one_mesh_dim<typename plan::clash::first,
                                                                      typename plan::clash::second>,
                "meshpp::take<Dim>(table, ids): the operands' layouts put two dims of the "
                "result on one mesh dim (illegal layout, Mesh-TensorFlow paper 8.5)");
  static_assert(offending::table_and_ids_on_meshes_of_different_types<typename Table::mesh_type,
                                                                      typename Ids::mesh_type>,
                "meshpp::take<Dim>(table, ids): table and ids live on meshes of different "
                "types");
  if constexpr (plan::ok) {  // else: only the errors above
    const auto& t = detail::materialized(table);
    const auto& i = detail::materialized(ids);
    return detail::take_impl<Dim, void>(t, i);
  }
}

/// take<Dim, OutRules>(table, ids): the same lookup, laid out by OutRules (restricted to the
/// result's dims). A result dim that take<Dim> keeps whole and OutRules split over the mesh dim
/// the table splits Dim over is reduce-scattered over it (each rank receives only its stripe of the
/// rows: half the bytes of the allreduce, and no slice after it); any other difference from
/// take<Dim>'s layout is a relayout. The model-parallel lookup into a stream split over batch:
///   [vocab/all, d] x ids[batch, seq] -> take<vocab, layout<split<batch, all>>> -> [batch/all, seq,
///   d]
template <class Dim, class OutRules, class Table, class Ids>
requires is_layout_v<OutRules> && is_expression_v<Table> && is_expression_v<Ids>
auto take(const Table& table, const Ids& ids) {
  using plan = detail::take_plan<Dim, Table, Ids>;
  static_assert(plan::ok,
                "meshpp::take<Dim, OutRules>(table, ids): take<Dim>(table, ids) is not legal "
                "(compile take<Dim>(table, ids) for the reason)");
  using requested = layout_for_t<OutRules, typename plan::out>;
  static_assert(offending::lookup_result_has_two_dims_on_one_mesh_dim<
                    typename detail::mesh_dim_clash<requested>::first,
                    typename detail::mesh_dim_clash<requested>::second>,
                "meshpp::take<Dim, OutRules>(table, ids): the requested result layout puts two "
                "dims on one mesh dim (illegal layout, Mesh-TensorFlow paper 8.5)");
  if constexpr (plan::ok) {
    const auto& t = detail::materialized(table);
    const auto& i = detail::materialized(ids);
    return detail::take_impl<Dim, OutRules>(t, i);
  }
}

/// one_hot<Dim, T = float>(ids, sizes): 1 where Dim's index equals the id, else 0. The
/// result has ids' dims then Dim (of size sizes.get<Dim>()), laid out by the mesh's rules.
/// Each rank fills its own stripe: no communication. Throws meshpp::error on every rank if an
/// id is outside [0, size of Dim).
template <class Dim, class T = float, class Ids, class... E>
requires is_expression_v<Ids>
auto one_hot(const Ids& ids, const extents<E...>& sizes) {
  using plan = detail::one_hot_plan<Dim, Ids>;
  using IS = typename plan::ids_shape;
  static_assert(offending::ids_have_the_lookup_dim<Dim, IS> || !contains_v<IS, Dim>,
                "meshpp::one_hot<Dim>(ids, sizes): ids must not have the dim Dim the result "
                "adds");
  static_assert(offending::ids_are_not_integers<typename Ids::value_type> ||
                    detail::is_id_type_v<typename Ids::value_type>,
                "meshpp::one_hot<Dim>(ids, sizes): ids must hold integers (not bool or a character "
                "type)");
  static_assert(offending::no_size_given_for_the_one_hot_dim<Dim, extents<E...>> ||
                    extents<E...>::template has<Dim>,
                "meshpp::one_hot<Dim>(ids, sizes): the sizes give no size for Dim");
  // If this fails, the mesh's rules put Dim and a dim of ids on one mesh dim (Mesh-TensorFlow
  // paper 8.5): the condition names the two rules.
  static_assert(
      offending::one_hot_result_has_two_dims_on_one_mesh_dim<typename plan::clash::first,
                                                             typename plan::clash::second>,
      "meshpp::one_hot<Dim>(ids, sizes): the mesh's rules put two dims of the result "
      "on one mesh dim (illegal layout, Mesh-TensorFlow paper 8.5)");
  // If this fails, ids split a dim that the result (laid out by the mesh's rules) holds
  // whole or splits over another mesh dim: filling it would need communication.
  static_assert(offending::ids_split_a_dim_the_one_hot_result_does_not<
                    typename plan::ids_rule_unlike_the_result, typename plan::out_layout>,
                "meshpp::one_hot<Dim>(ids, sizes): ids split a dim that the result does not "
                "split the same way under the mesh's rules; relayout ids first");
  if constexpr (plan::ok && extents<E...>::template has<Dim>) {  // else: only the errors above
    const auto& i = detail::materialized(ids);
    return detail::one_hot_impl<Dim, T>(i, sizes.template get<Dim>());
  }
}

}  // namespace meshpp

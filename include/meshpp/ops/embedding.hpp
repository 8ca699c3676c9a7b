// meshpp/ops/embedding.hpp — embedding lookups by name: gather<Dim>(table, ids) and
// one_hot<Dim>(ids, sizes).
//
//   auto x = gather<vocab>(table, ids);              // table[vocab, d_model], ids[batch, seq]
//                                                    //   -> x[batch, seq, d_model]
//   auto h = one_hot<vocab>(ids, sizes);             // -> h[batch, seq, vocab], float 0/1
//   auto g = einsum<shape<vocab, d_model>>(h, dy);   // the table's gradient: dense
//
// gather:  [vocab/cols, d_model] x ids[batch/rows, seq] |-> [batch/rows, seq, d_model]
//              each rank looks up the rows of its vocab stripe (zeros for other ids),
//              then allreduce over cols: vocab is split there (none when vocab is whole)
// one_hot: ids[batch/rows, seq] |-> [batch/rows, seq, vocab/cols]
//              each rank fills its stripe of vocab: no communication
//
// gather<Dim>(table, ids) is einsum(one_hot<Dim>(ids), table) contracting Dim, without
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
// sends one dense allreduce of the output's size, whatever the vocabulary size, and the
// table's gradient is the dense einsum above: one allreduce of the table's stripe over the
// mesh dims that batch and seq are split over.
//
// Ids out of range (negative, or not below Dim's size) throw meshpp::error on every rank,
// before any communication of the operation: when ids are replicated every rank sees the
// same ids and throws alone; when ids are split, the ranks agree on the error with one
// small allreduce over the mesh's world (core/detail/agree.hpp). That agreement carries no tensor
// data and is not recorded in the counters.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/detail/agree.hpp"
#include "meshpp/core/detail/row_major.hpp"
#include "meshpp/core/detail/traverse.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/text.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"

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

// is_id_type_v<T>: T can hold ids: an integer type, not bool or a character type
template <class T>
inline constexpr bool is_id_type_v =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
    !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> &&
    !std::is_same_v<T, char32_t>;

/// The compile-time plan of gather<Dim>(table, ids); each check names the offender or no_dim.
template <class Dim, class Table, class Ids>
struct gather_plan {
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
  // the mesh dims the allreduce runs over: Dim's, or none
  using reduce_over = std::conditional_t<lookup_split, over<lookup_mesh_dim>, over<>>;

  static constexpr bool ok = names_ok && is_id_type_v<typename Ids::value_type> &&
                             std::is_same_v<conflict, no_dim> &&
                             std::is_same_v<typename clash::first, no_dim> &&
                             std::is_same_v<ids_on_lookup_mesh_dim, no_dim> &&
                             std::is_same_v<typename Table::mesh_type, typename Ids::mesh_type>;
};

// as_tensor(x): a tensor as itself; an expression node evaluated into a new tensor
template <class X>
decltype(auto) as_tensor(const X& x) {
  if constexpr (is_tensor_v<X>)
    return (x);
  else
    return eval(x);
}

// "[batch:3, seq:1]": a global index of the dims of S
template <class S, std::size_t N>
std::string index_text(const std::array<std::size_t, N>& index) {
  constexpr auto names = dim_names_v<S>;
  std::string out = "[";
  for (std::size_t i = 0; i < N; ++i) append(out, i ? ", " : "", names[i], ':', index[i]);
  return out + "]";
}

// check_ids<Dim>(what, ids, size): every id of this rank's slice is in [0, size), or throws
// meshpp::error on every rank: the ranks agree over the world (one allreduce of one int),
// since split ids differ between ranks, and replicated ones can too, by mistake (labels
// computed or read per rank): a rank that alone threw would leave the others waiting in the
// lookup's collective.
template <class Dim, class Ids>
void check_ids(std::string_view what, const Ids& ids, std::size_t size) {
  using S = typename Ids::shape_type;
  const auto& local = ids.local();
  std::string problem;
  const auto* data = local.data();
  for (std::size_t j = 0; j < local.size(); ++j) {
    const auto v = data[j];
    if (std::cmp_greater_equal(v, 0) && std::cmp_less(v, size)) continue;
    std::array<std::size_t, S::rank> at{};
    std::size_t rest = j;
    for (std::size_t i = S::rank; i-- > 0;) {
      at[i] = ids.local_offsets()[i] + rest % local.shape()[i];
      rest /= local.shape()[i];
    }
    using wide = std::conditional_t<std::is_signed_v<std::remove_const_t<decltype(v)>>, long long,
                                    unsigned long long>;
    append(problem, what, ": id ", static_cast<wide>(v), " at ids", index_text<S>(at),
           " is outside [0, ", size, "), the range of dim '", Dim::name(), "'");
    break;
  }
  agree_or_throw(ids.mesh().world(), problem);
}

// zip_strided(strided, extent, step, contiguous, f): f(a, b) for each element a of strided at
// the given steps and the element b of contiguous (row-major over extent) at the same index
template <class S, class C, std::size_t N, class F>
void zip_strided(S* strided, const std::array<std::size_t, N>& extent,
                 const std::array<std::ptrdiff_t, N>& step, C* contiguous, F& f) {
  if constexpr (N == 0) {
    f(*strided, *contiguous);
  } else {
    strided_cursor<S*, N> a{strided, step};
    strided_cursor<C*, N> b{contiguous, row_major_strides<N>(extent)};
    auto both = group(a, b);
    const std::ptrdiff_t s = step[N - 1];
    for_each_row(extent, both, [&](std::size_t run) {
      S* x = a.ptr;
      C* y = b.ptr;
      if (s == 1) {  // the common case, apart so that the compiler vectorizes it
        for (std::size_t j = 0; j < run; ++j) f(x[j], y[j]);
      } else {
        for (std::size_t j = 0; j < run; ++j) f(x[static_cast<std::ptrdiff_t>(j) * s], y[j]);
      }
    });
  }
}

// for_each_lookup_row<Dim>(ids, table, out, pair, missing): the local pass of a lookup along
// Dim, shared by gather (table into out) and its gradient (out into table). out has the
// lookup's output dims (ids' dims, then the table's dims other than Dim that ids lack) and
// table the table's dims (either may be const). For each index of ids' dims in out's local
// region, in row-major order: if this rank's stripe of Dim holds the id, pair(t, o) for each
// element o of out's row there and the element t of the id's row of table's slice it
// corresponds to; else missing(std::span of out's row). Ids and table are read at out's
// region along the dims they share with it (a dim one holds whole and out splits: at this
// rank's stripe of it). Ids must lie in [0, size of Dim).
template <class Dim, class Ids, class Table, class Out, class Pair, class Missing>
void for_each_lookup_row(const Ids& ids, Table& table, Out& out, Pair pair, Missing missing) {
  using IS = typename Ids::shape_type;
  using TS = typename std::remove_const_t<Table>::shape_type;
  using OS = typename std::remove_const_t<Out>::shape_type;
  constexpr std::size_t ni = IS::rank;
  constexpr std::size_t nn = OS::rank - ni;  // the dims out adds to ids' (the table's)
  const auto out_shape = out.local_shape();
  const auto& out_offsets = out.local_offsets();

  // Where each operand's slice starts in out's local region, and how it moves along out's
  // dims (0 along a dim it lacks).
  const auto ids_strides = row_major_strides<ni>(ids.local().shape());
  const auto* ids_at = ids.local().data();
  std::array<std::ptrdiff_t, ni> ids_step{};
  for (std::size_t i = 0; i < ni; ++i) {  // out begins with ids' dims, in ids' order
    ids_step[i] = ids_strides[i];
    ids_at += static_cast<std::ptrdiff_t>(out_offsets[i] - ids.local_offsets()[i]) * ids_strides[i];
  }
  const auto table_strides = row_major_strides<TS::rank>(table.local().shape());
  auto* table_at = table.local().data();
  std::array<std::ptrdiff_t, OS::rank> table_step{};
  for_each_index<OS::rank>([&](auto k) {
    using d = dim_at_t<OS, k.value>;
    if constexpr (contains_v<TS, d>) {
      constexpr std::size_t j = index_of_v<TS, d>;
      table_step[k] = table_strides[j];
      table_at +=
          static_cast<std::ptrdiff_t>(out_offsets[k] - table.local_offsets()[j]) * table_strides[j];
    }
  });
  constexpr std::size_t dim_index = index_of_v<TS, Dim>;
  const std::ptrdiff_t row_step = table_strides[dim_index];
  const std::size_t stripe_begin = table.local_offsets()[dim_index];
  const std::size_t stripe_size = table.local().shape()[dim_index];

  std::array<std::size_t, nn> inner_extent{};
  std::array<std::ptrdiff_t, nn> inner_step{};
  std::size_t inner = 1;
  for (std::size_t k = 0; k < nn; ++k) {
    inner_extent[k] = out_shape[ni + k];
    inner_step[k] = table_step[ni + k];
    inner *= inner_extent[k];
  }
  // one position per index of ids' dims in out's region; out's rows follow one another
  std::array<std::size_t, ni> outer{};
  std::array<std::ptrdiff_t, ni> table_outer_step{};
  for (std::size_t i = 0; i < ni; ++i) {
    outer[i] = out_shape[i];
    table_outer_step[i] = table_step[i];
  }
  strided_cursor<decltype(ids_at), ni> id_at{ids_at, ids_step};
  strided_cursor<decltype(table_at), ni> row_at{table_at, table_outer_step};
  auto cursors = group(id_at, row_at);
  auto* o = out.local().data();
  if (inner == 0) return;
  for_each_position(outer, cursors, [&](const auto&) {
    const auto id = *id_at.ptr;  // in [0, size): checked by gather
    const std::size_t row = static_cast<std::size_t>(id) - stripe_begin;  // wraps if below
    if (static_cast<std::size_t>(id) >= stripe_begin && row < stripe_size) {
      zip_strided(row_at.ptr + static_cast<std::ptrdiff_t>(row) * row_step, inner_extent,
                  inner_step, o, pair);
    } else {
      missing(std::span(o, inner));
    }
    o += inner;
  });
}

// gather_impl<Dim>(table, ids): the work of gather<Dim>(table, ids), once its checks passed
template <class Dim, class Table, class Ids>
auto gather_impl(const Table& table, const Ids& ids) {
  using plan = gather_plan<Dim, Table, Ids>;
  using TS = typename plan::table_shape;
  using IS = typename plan::ids_shape;
  using Out = typename plan::out;
  using T = typename Table::value_type;
  using Mesh = typename Table::mesh_type;
  const Mesh& mesh = table.mesh();
  if (!(mesh == ids.mesh())) {
    throw error("meshpp::gather<" + std::string(Dim::name()) +
                ">(table, ids): table and ids live on different meshes");
  }
  for_each_index<IS::rank>([&](auto i) {
    using d = dim_at_t<IS, i.value>;
    if constexpr (contains_v<TS, d>) {
      if (table.template extent<d>() != ids.template extent<d>()) {
        throw error("meshpp::gather<" + std::string(Dim::name()) +
                    ">(table, ids): table and ids disagree on the size of dim '" +
                    std::string(d::name()) + "': " + std::to_string(table.template extent<d>()) +
                    " and " + std::to_string(ids.template extent<d>()));
      }
    }
  });
  check_ids<Dim>("meshpp::gather<" + std::string(Dim::name()) + ">(table, ids)", ids,
                 table.template extent<Dim>());

  using result_t = tensor<T, Out, typename plan::out_layout, Mesh>;
  const auto out_sizes = [&]<class... Dims>(shape<Dims...>*) {
    auto size = [&]<class D>(D*) {
      if constexpr (contains_v<IS, D>)
        return ids.template extent<D>();
      else
        return table.template extent<D>();
    };
    return extents<Dims...>{dim_extent<Dims>{size(static_cast<Dims*>(nullptr))}...};
  }(static_cast<Out*>(nullptr));
  result_t out(mesh, out_sizes, result_t::uninitialized);

  // The local pass: for each id of this rank's region, its row of the table if this rank
  // holds it, else zeros.
  for_each_lookup_row<Dim>(
      ids, table, out, [](const T& from, T& to) { to = from; },
      [](std::span<T> row) { std::fill(row.begin(), row.end(), T{}); });

  // Each id's row lives on one rank of the group along Dim's mesh dim; the others wrote
  // zeros, so the sum is the row (an allreduce over no mesh dims is nothing at all).
  allreduce<typename plan::reduce_over, op::sum>::run(
      mesh, std::span(out.local().data(), out.local().size()));
  return out;
}

/// The compile-time plan of one_hot<Dim>(ids, sizes)
template <class Dim, class Ids>
struct one_hot_plan {
  using ids_shape = typename Ids::shape_type;
  using ids_layout = typename Ids::layout_type;
  // as for gather_plan, the layout checks report only once Dim is named right
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

// one_hot_impl<Dim, T>(ids, size): the work of one_hot<Dim, T>(ids, sizes)
template <class Dim, class T, class Ids>
auto one_hot_impl(const Ids& ids, std::size_t size) {
  using plan = one_hot_plan<Dim, Ids>;
  using IS = typename plan::ids_shape;
  using Out = typename plan::out;
  using Mesh = typename Ids::mesh_type;
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

/// gather<Dim>(table, ids): the rows of `table` along Dim that `ids` name (an embedding
/// lookup). The result has ids' dims, then table's dims other than Dim (those ids lack), and
/// table's value type: out[b, s, :] = table[ids[b, s], :]. Laid out as ids and table
/// together on those dims. One allreduce over the mesh dim Dim is split over (none when Dim
/// is whole); throws meshpp::error on every rank if an id is outside [0, size of Dim).
template <class Dim, class Table, class Ids>
requires is_expression_v<Table> && is_expression_v<Ids>
auto gather(const Table& table, const Ids& ids) {
  using plan = detail::gather_plan<Dim, Table, Ids>;
  using TS = typename plan::table_shape;
  using IS = typename plan::ids_shape;
  static_assert(offending::table_lacks_the_lookup_dim<Dim, TS> || contains_v<TS, Dim>,
                "meshpp::gather<Dim>(table, ids): the table has no dim Dim to look up along");
  static_assert(offending::ids_have_the_lookup_dim<Dim, IS> || !contains_v<IS, Dim>,
                "meshpp::gather<Dim>(table, ids): ids must not have the dim Dim they index; the "
                "result replaces Dim by ids' dims");
  static_assert(offending::ids_are_not_integers<typename Ids::value_type> ||
                    detail::is_id_type_v<typename Ids::value_type>,
                "meshpp::gather<Dim>(table, ids): ids must hold integers (not bool or a character "
                "type)");
  // If this fails, a dim of both table and ids is split over one mesh dim in ids and another
  // in table: no rank holds matching stripes of both. The condition names both rules.
  static_assert(
      offending::ids_and_table_split_a_shared_dim_over_two_mesh_dims<typename plan::conflict_with,
                                                                     typename plan::conflict>,
      "meshpp::gather<Dim>(table, ids): a dim of both table and ids is split over "
      "different mesh dims in each; relayout one of them first");
  // If this fails, ids are split over the mesh dim that the table splits Dim over: the ranks
  // holding the other rows of Dim hold other ids, so one allreduce cannot assemble the rows.
  // The condition names ids' rule and the table's rule for Dim.
  static_assert(
      offending::ids_split_over_the_lookup_dims_mesh_dim<typename plan::ids_on_lookup_mesh_dim,
                                                         typename plan::lookup_rule>,
      "meshpp::gather<Dim>(table, ids): ids are split over the mesh dim that the table "
      "splits Dim over; ids must be whole along it (relayout ids first)");
  // If this fails, each operand's layout is legal but together they split two dims of the
  // result over one mesh dim (Mesh-TensorFlow paper 8.5): the condition names the two rules.
  static_assert(offending::lookup_result_has_two_dims_on_one_mesh_dim<typename plan::clash::first,
                                                                      typename plan::clash::second>,
                "meshpp::gather<Dim>(table, ids): the operands' layouts put two dims of the "
                "result on one mesh dim (illegal layout, Mesh-TensorFlow paper 8.5)");
  static_assert(offending::table_and_ids_on_meshes_of_different_types<typename Table::mesh_type,
                                                                      typename Ids::mesh_type>,
                "meshpp::gather<Dim>(table, ids): table and ids live on meshes of different "
                "types");
  if constexpr (plan::ok) {  // else: only the errors above
    const auto& t = detail::as_tensor(table);
    const auto& i = detail::as_tensor(ids);
    return detail::gather_impl<Dim>(t, i);
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
    const auto& i = detail::as_tensor(ids);
    return detail::one_hot_impl<Dim, T>(i, sizes.template get<Dim>());
  }
}

}  // namespace meshpp

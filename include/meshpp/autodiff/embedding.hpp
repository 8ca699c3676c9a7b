// meshpp/autodiff/embedding.hpp — embedding lookups of a traced table, and the table's
// gradient as one dense scatter-add.
//
//   mp::variable table(mp::random_normal<float, vocab, d_model>(mesh, sizes, 1), "table");
//   auto x = mp::take<vocab>(table, ids);   // ids[batch, seq]: a plain integer tensor
//   mp::backward(loss);                       // table.grad(): [vocab, d_model], as the table
//
// Forward: exactly take<Dim>(table, ids) of ops/embedding.hpp (a local lookup, then one
// allreduce of the output over the mesh dim Dim is split over), with its layout rules: ids must
// be whole along that mesh dim. take<Dim, OutRules> reduce-scatters instead where OutRules
// split a result dim over that mesh dim; its backward first allgathers the gradient back. Backward,
// given the output's gradient g:
//
//   g[batch/rows, seq, d_model] x ids[batch/rows, seq] |-> [vocab/cols, d_model]
//       local scatter-add into a zero slice of the table, then allreduce over rows
//
// Each rank adds its rows of g into a zero slice of the table at the ids that fall in its stripe
// of Dim (repeated ids add up), then one allreduce (sum) runs over the mesh dims that ids' own
// dims (those of g the table lacks) are split over: none when ids are whole. Ids are whole along
// Dim's mesh dim, so the ranks of a group along it see the same ids and each fills its own
// stripe: nothing moves along it. The result is the table's gradient, laid out as the table.
// In backward that allreduce is deferred like an einsum's (autodiff/traced.hpp): a variable
// table's gradient is summed in backward()'s bucket with the other weights'.
// (Only for a table with batch dims of the lookup, table[batch, vocab, d] and ids[batch, seq],
// where ids split batch and the table holds it whole: each rank's batch stripe is complete
// without the allreduce, and the stripes are then allgathered into the table's layout, as
// conform<Table> does for any gradient; the one-hot einsum below communicates the same.)
//
// That is einsum<table dims>(one_hot<Dim>(ids), g) contracting ids' dims, with the same single
// allreduce of the table's slice, but without materializing the one-hot tensor, and with a pass
// over g instead of a gemm through mostly zeros. It is dense on purpose: the densifying paper
// (Cavdar et al., "Densifying Assumed-sparse Tensors", ISC 2019) found that accumulating a
// lookup's gradient as sparse index/row pieces, gathered from every rank, grows memory and
// time with the number of ranks (11.4 GB of buffers at 64 ranks), and that converting it to a
// dense tensor and reducing instead scales (82x less memory, 25x faster). Here the allreduce is
// the table's slice, whatever the batch and the number of ranks.
//
// one_hot<Dim>(ids, sizes) has no traced version and needs none: ids are integers, so there is
// nothing to differentiate, and the one-hot tensor is a constant of the graph. einsum of it with
// a traced table (autodiff/einsum.hpp) gives the table the same gradient as gather does.
#pragma once

#include <span>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/embedding.hpp"
#include "meshpp/ops/relayout.hpp"

namespace meshpp {

namespace detail {

/// The table's gradient of take<Dim>(table, ids), as the scatter-add leaves it: laid out as
/// the table, except that a dim the table shares with ids is split as the lookup's output
/// splits it (where ids split it and the table does not); summed by one allreduce over the
/// mesh dims that the output is split over and that layout is not: those of ids' own dims.
template <class Dim, class Table, class Ids>
struct gather_grad_plan {
  using plan = take_plan<Dim, Table, Ids>;
  using table_shape = typename plan::table_shape;
  using grad_layout =
      layout_for_t<layout_merge_t<typename plan::out_layout, typename Table::layout_type>,
                   table_shape>;
  using natural =
      tensor<typename Table::value_type, table_shape, grad_layout, typename Table::mesh_type>;
  using reduce_mesh_dims =
      shape_difference_t<split_mesh_dims_t<typename plan::out_layout, typename plan::out>,
                         split_mesh_dims_t<grad_layout, table_shape>>;
  using reduce_over = over_t<reduce_mesh_dims>;
};

// scatter_add<Dim>(g, ids, table): the gradient of take<Dim>(table, ids) with respect to the
// table, given the output's gradient g: zeros, plus each row of g at its id (this rank's stripe
// of Dim), summed over the ranks that hold other ids; laid out as gather_grad_plan says
// scatter_add<Dim>(g, ids, table, deferred): the table's gradient; with `deferred`, the final
// allreduce is left to the caller (the result holds partial sums over the mesh dims *deferred
// names: deferred sums, autodiff/traced.hpp)
template <class Dim, class Table, class Ids, class G>
auto scatter_add(const G& g, const Ids& ids, const Table& table, unsigned* deferred = nullptr) {
  using plan = take_plan<Dim, Table, Ids>;
  using grad_plan = gather_grad_plan<Dim, Table, Ids>;
  using Out = typename plan::out;
  using T = typename Table::value_type;
  static_assert(std::is_same_v<typename G::shape_type, Out> &&
                    std::is_same_v<typename G::layout_type, typename plan::out_layout>,
                "meshpp::take<Dim>(table, ids): the gradient must be laid out as the lookup's "
                "output");
  typename grad_plan::natural grad(table.mesh(), table.sizes());  // zeros

  // The local pass of gather (ops/embedding.hpp), the other way: each row of g whose id this
  // rank's stripe holds is added to that row (ids and the gradient's slice read at g's region).
  for_each_lookup_row<Dim>(
      ids, grad, g, [](T& to, const T& from) { to += from; }, [](auto) {});

  // The ranks that differ along ids' mesh dims added the rows of other ids: one dense sum (an
  // allreduce over no mesh dims, when ids are whole, is nothing at all).
  if (deferred) {
    *deferred = mesh_mask_v<typename Table::mesh_type, typename grad_plan::reduce_mesh_dims>;
    return grad;
  }
  allreduce<typename grad_plan::reduce_over, op::sum>::run(
      table.mesh(), std::span(grad.local().data(), grad.local().size()));
  return grad;
}

// traced_take<Dim, OutRules>(table, ids): the traced take<Dim>(table, ids) (OutRules void) or
// take<Dim, OutRules>(table, ids), recorded with the table's gradient
template <class Dim, class OutRules, class Table, class Ids>
auto traced_take(const traced<Table>& table, const Ids& ids) {
  auto id_tensor = [&] {
    if constexpr (is_tensor_v<Ids>)
      return ids;
    else
      return eval(ids);
  }();
  using plan = take_plan<Dim, Table, decltype(id_tensor)>;
  auto lookup = [](const auto& t, const auto& i) {
    if constexpr (std::is_void_v<OutRules>)
      return take<Dim>(t, i);
    else
      return take<Dim, OutRules>(t, i);
  };
  if constexpr (!plan::ok) {
    lookup(table.value(), id_tensor);  // only its errors, in the plain lookup's words
  } else {
    auto y = lookup(table.value(), id_tensor);  // before the capture below moves the ids
    return record(
        std::move(y),
        [id_tensor = std::move(id_tensor)](const auto&, const auto& g, const auto& t) {
          if (!t.wants_grad()) return;
          // the gradient conformed to the table: free, unless ids split a dim the table shares
          // and holds whole (then an allgather of the dense stripes over ids' mesh dim)
          unsigned mask = 0;
          auto send = [&](const auto& gn) {
            auto partial = scatter_add<Dim>(gn, id_tensor, t.value(), &mask);
            t.add_partial_grad(std::move(partial), mask);
          };
          if constexpr (std::is_void_v<OutRules>)
            send(g);
          else  // first back to take<Dim>'s layout: the reduce_scatter's adjoint, an allgather
            send(relayout<typename plan::out_layout>(g));
        },
        table);
  }
}

}  // namespace detail

/// take<Dim>(table, ids) of a traced table (or a variable): the rows of the table along Dim
/// that the integer tensor ids names, as ops/embedding.hpp computes them, recorded; the
/// table's gradient is one dense scatter-add and one allreduce of the table's slice over ids'
/// mesh dims (see above). Ids are plain: integers have no gradient. (The empty pack int&...
/// takes no explicit argument: take<Dim, OutRules>'s layout cannot land in Table and form
/// traced<layout>, which is a hard error before the constraints are checked under clang.)
template <class Dim, int&..., class Table, class Ids>
requires is_expression_v<Ids>
auto take(const traced<Table>& table, const Ids& ids) {
  return detail::traced_take<Dim, void>(table, ids);
}

/// take<Dim, OutRules>(table, ids) of a traced table: the lookup laid out by OutRules (a dim
/// requested split over the mesh dim Dim is split over is reduce-scattered, ops/embedding.hpp).
/// Backward first brings the gradient to take<Dim>'s layout (that reduce_scatter's adjoint: an
/// allgather over the same mesh dim; a free slice where OutRules left a dim whole), then
/// scatter-adds it as take<Dim>'s backward does.
template <class Dim, class OutRules, class Table, class Ids>
requires is_layout_v<OutRules> && is_expression_v<Ids>
auto take(const traced<Table>& table, const Ids& ids) {
  return detail::traced_take<Dim, OutRules>(table, ids);
}

}  // namespace meshpp

// meshpp/autodiff/embedding.hpp — embedding lookups of a traced table, and the table's
// gradient as one dense scatter-add.
//
//   mp::variable table(mp::random_normal<float, vocab, d_model>(mesh, sizes, 1), "table");
//   auto x = mp::gather<vocab>(table, ids);   // ids[batch, seq]: a plain integer tensor
//   mp::backward(loss);                       // table.grad(): [vocab, d_model], as the table
//
// Forward: exactly gather<Dim>(table, ids) of ops/embedding.hpp (a local lookup, then one
// allreduce of the output over the mesh dim Dim is split over), with its layout rules: ids must
// be whole along that mesh dim. Backward, given the output's gradient g:
//
//   g[batch/rows, seq, d_model] x ids[batch/rows, seq] |-> [vocab/cols, d_model]
//       local scatter-add into a zero slice of the table, then allreduce over rows
//
// Each rank adds its rows of g into a zero slice of the table at the ids that fall in its stripe
// of Dim (repeated ids add up), then one allreduce (sum) runs over the mesh dims that ids' own
// dims (those of g the table lacks) are split over: none when ids are whole. Ids are whole along
// Dim's mesh dim, so the ranks of a group along it see the same ids and each fills its own
// stripe: nothing moves along it. The result is the table's gradient, laid out as the table.
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

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/traced.hpp"
#include "meshpp/comm/collectives.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"
#include "meshpp/ops/embedding.hpp"

namespace meshpp {

namespace detail {

// scatter_add_strided(src, extent, step, dst): dst's elements at the given steps += src
// (contiguous, row-major over extent): copy_strided's reverse, adding
template <class T, std::size_t N>
void scatter_add_strided(const T* src, const std::array<std::size_t, N>& extent,
                         const std::array<std::ptrdiff_t, N>& step, T* dst) {
  if constexpr (N == 0) {
    *dst += *src;
  } else {
    const std::size_t run = extent[N - 1];
    const std::ptrdiff_t s = step[N - 1];
    std::size_t rows = 1;
    for (std::size_t i = 0; i + 1 < N; ++i) rows *= extent[i];
    if (run == 0) return;
    std::array<std::size_t, N> index{};
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < run; ++j) dst[static_cast<std::ptrdiff_t>(j) * s] += src[j];
      src += run;
      for (std::size_t i = N - 1; i-- > 0;) {
        dst += step[i];
        if (++index[i] < extent[i]) break;
        dst -= step[i] * static_cast<std::ptrdiff_t>(extent[i]);
        index[i] = 0;
      }
    }
  }
}

/// The table's gradient of gather<Dim>(table, ids), as the scatter-add leaves it: laid out as
/// the table, except that a dim the table shares with ids is split as the lookup's output
/// splits it (where ids split it and the table does not); summed by one allreduce over the
/// mesh dims that the output is split over and that layout is not: those of ids' own dims.
template <class Dim, class Table, class Ids>
struct gather_grad_plan {
  using plan = gather_plan<Dim, Table, Ids>;
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

// scatter_add<Dim>(g, ids, table): the gradient of gather<Dim>(table, ids) with respect to the
// table, given the output's gradient g: zeros, plus each row of g at its id (this rank's stripe
// of Dim), summed over the ranks that hold other ids; laid out as gather_grad_plan says
template <class Dim, class Table, class Ids, class G>
auto scatter_add(const G& g, const Ids& ids, const Table& table) {
  using plan = gather_plan<Dim, Table, Ids>;
  using grad_plan = gather_grad_plan<Dim, Table, Ids>;
  using TS = typename plan::table_shape;
  using IS = typename plan::ids_shape;
  using Out = typename plan::out;
  using T = typename Table::value_type;
  static_assert(std::is_same_v<typename G::shape_type, Out> &&
                    std::is_same_v<typename G::layout_type, typename plan::out_layout>,
                "meshpp::gather<Dim>(table, ids): the gradient must be laid out as the lookup's "
                "output");
  typename grad_plan::natural grad(table.mesh(), table.sizes());  // zeros

  constexpr std::size_t ni = IS::rank;
  constexpr std::size_t nn = plan::new_dims::rank;
  const auto out_shape = g.local_shape();
  const auto& out_offsets = g.local_offsets();

  // The walk of gather_impl (ops/embedding.hpp) over the output's local region, writing where
  // it reads: ids (read at this rank's stripe where they are whole and g is split) and the
  // gradient's slice, placed at g's region along the dims it shares with g.
  const auto ids_strides = row_major_strides<ni>(ids.local().shape());
  const auto* ids_at = ids.local().data();
  std::array<std::ptrdiff_t, ni> ids_step{};
  for (std::size_t i = 0; i < ni; ++i) {  // Out begins with ids' dims, in ids' order
    ids_step[i] = ids_strides[i];
    ids_at += static_cast<std::ptrdiff_t>(out_offsets[i] - ids.local_offsets()[i]) * ids_strides[i];
  }
  const auto grad_strides = row_major_strides<TS::rank>(grad.local().shape());
  T* grad_at = grad.local().data();
  std::array<std::ptrdiff_t, Out::rank> grad_step{};
  for_each_index<Out::rank>([&](auto k) {
    using d = dim_at_t<Out, k.value>;
    if constexpr (contains_v<TS, d>) {
      constexpr std::size_t j = index_of_v<TS, d>;
      grad_step[k] = grad_strides[j];
      grad_at +=
          static_cast<std::ptrdiff_t>(out_offsets[k] - grad.local_offsets()[j]) * grad_strides[j];
    }
  });
  constexpr std::size_t dim_index = index_of_v<TS, Dim>;
  const std::ptrdiff_t row_step = grad_strides[dim_index];
  const std::size_t stripe_begin = grad.local_offsets()[dim_index];
  const std::size_t stripe_size = grad.local().shape()[dim_index];

  std::array<std::size_t, nn> inner_extent{};
  std::array<std::ptrdiff_t, nn> inner_step{};
  std::size_t inner = 1;
  for (std::size_t k = 0; k < nn; ++k) {
    inner_extent[k] = out_shape[ni + k];
    inner_step[k] = grad_step[ni + k];
    inner *= inner_extent[k];
  }
  std::size_t outer = 1;
  for (std::size_t i = 0; i < ni; ++i) outer *= out_shape[i];

  // The local pass: each row of g whose id this rank's stripe holds is added to that row.
  const T* o = g.local().data();
  std::array<std::size_t, ni> index{};
  for (std::size_t r = 0; r < outer && inner > 0; ++r) {
    const auto id = *ids_at;  // in [0, size): gather checked it
    const std::size_t row = static_cast<std::size_t>(id) - stripe_begin;  // wraps if below
    if (static_cast<std::size_t>(id) >= stripe_begin && row < stripe_size) {
      scatter_add_strided<T, nn>(o, inner_extent, inner_step,
                                 grad_at + static_cast<std::ptrdiff_t>(row) * row_step);
    }
    o += inner;
    for (std::size_t i = ni; i-- > 0;) {
      ids_at += ids_step[i];
      grad_at += grad_step[i];
      if (++index[i] < out_shape[i]) break;
      ids_at -= ids_step[i] * static_cast<std::ptrdiff_t>(out_shape[i]);
      grad_at -= grad_step[i] * static_cast<std::ptrdiff_t>(out_shape[i]);
      index[i] = 0;
    }
  }

  // The ranks that differ along ids' mesh dims added the rows of other ids: one dense sum (an
  // allreduce over no mesh dims, when ids are whole, is nothing at all).
  allreduce<typename grad_plan::reduce_over, op::sum>::run(
      table.mesh(), std::span(grad.local().data(), grad.local().size()));
  return grad;
}

}  // namespace detail

/// gather<Dim>(table, ids) of a traced table (or a variable): the rows of the table along Dim
/// that the integer tensor ids names, as ops/embedding.hpp computes them, recorded; the
/// table's gradient is one dense scatter-add and one allreduce of the table's slice over ids'
/// mesh dims (see above). Ids are plain: integers have no gradient.
template <class Dim, class Table, class Ids>
requires is_expression_v<Ids>
auto gather(const traced<Table>& table, const Ids& ids) {
  auto ht = table.node();
  auto id_tensor = [&] {
    if constexpr (is_tensor_v<Ids>)
      return ids;
    else
      return eval(ids);
  }();
  using plan = detail::gather_plan<Dim, Table, decltype(id_tensor)>;
  if constexpr (!plan::ok) {
    gather<Dim>(ht->value, id_tensor);  // only its errors, in the plain lookup's words
  } else {
    auto y = gather<Dim>(ht->value, id_tensor);
    using Y = decltype(y);
    return detail::record(
        std::move(y),
        [ht, id_tensor = std::move(id_tensor)](const Y&, const Y& g) {
          if (!ht->wanted) return;
          // conformed to the table: free, unless ids split a dim the table shares and holds
          // whole (then an allgather of the dense stripes over ids' mesh dim)
          detail::send(ht, detail::scatter_add<Dim>(g, id_tensor, ht->value));
        },
        ht);
  }
}

}  // namespace meshpp

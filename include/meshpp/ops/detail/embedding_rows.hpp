// meshpp/ops/detail/embedding_rows.hpp — the local pass of a lookup: for each id of this
// rank's region, its row of this rank's stripe of the table paired with the output's row
// (gather copies table into out; its gradient and softmax_cross_entropy's add the other way).
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <type_traits>

#include "meshpp/core/blocks.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/traverse.hpp"

namespace meshpp::detail {

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

}  // namespace meshpp::detail

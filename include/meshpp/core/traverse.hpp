// meshpp/core/traverse.hpp — the one N-d traversal: every position of a box, with
// cursors stepped along.
//
//   strided_cursor<const float*, 2> in{src, row_major_strides<2>(src_shape)};
//   strided_cursor<float*, 2> out{dst, row_major_strides<2>(box)};
//   auto both = group(in, out);
//   for_each_row(box, both, [&](std::size_t n) { std::copy_n(in.ptr, n, out.ptr); });
//
// for_each_position(extent, cursors, f) calls f(position) at every position of a box of these
// extents, in row-major order, and moves the cursors from each position to the next: a cursor
// is anything with step(d) (one position on along dim d), unstep(d, n) (n positions back along
// d) and visit_strides(v) (v(its strides), for for_each_row). Only the counter is kept here;
// what a position means (a pointer, an offset, several of them) is the cursors'.
//
// for_each_row(extent, cursors, row) is the same over the rows of the last dim: row(n) for
// each, the cursors at the row's first element. Trailing dims that every cursor traverses
// contiguously are merged first (dim k-1 joins when each cursor's stride on it is its stride
// on the last dim times the merged length), so a row is as long as the data allows: a
// [2048, 512] box of a [2048, 1024] array is 2048 rows of 512; of a [2048, 512] array, one row.
// The fused evaluation of expressions, the copies of blocks for collectives, reductions and
// the lookups all walk their data so; only row()'s loop is theirs.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

namespace meshpp::detail {

/// @brief A place in an N-d array, `ptr` (a pointer; any type that adds a ptrdiff_t, such as
/// an offset, will do), and the array's strides in elements.
template <class Pointer, std::size_t N>
struct strided_cursor {
  Pointer ptr;
  std::array<std::ptrdiff_t, N> stride;
  void step(std::size_t d) { ptr += stride[d]; }
  void unstep(std::size_t d, std::size_t n) { ptr -= stride[d] * static_cast<std::ptrdiff_t>(n); }
  template <class V>
  void visit_strides(V&& v) const {
    v(stride);
  }
};

/// @brief Values of types Ts (references too) side by side, visited all at once: apply(f) is
/// f(the values...). What std::tuple and std::apply do for meshpp, without their machinery:
/// a tuple of n types instantiates some forty functions and classes, a pack n + 2, and every
/// expression and traversal of meshpp makes one (docs/building.md, Compile time).
template <std::size_t I, class T>
struct pack_slot {
  T value;
};
template <class Indices, class... Ts>
struct pack_of;
template <std::size_t... I, class... Ts>
struct pack_of<std::index_sequence<I...>, Ts...> : pack_slot<I, Ts>... {
  template <class F>
  decltype(auto) apply(F&& f) {
    return f(static_cast<pack_slot<I, Ts>&>(*this).value...);
  }
  template <class F>
  decltype(auto) apply(F&& f) const {
    return f(static_cast<const pack_slot<I, Ts>&>(*this).value...);
  }
};
template <class... Ts>
using pack = pack_of<std::index_sequence_for<Ts...>, Ts...>;

/// @brief Several cursors moved as one; C may be references (group()) or values (an
/// expression node's cursor owns its operands' cursors).
template <class... C>
struct cursor_group {
  pack<C...> members;
  void step(std::size_t d) {
    members.apply([&](auto&... c) { (c.step(d), ...); });
  }
  void unstep(std::size_t d, std::size_t n) {
    members.apply([&](auto&... c) { (c.unstep(d, n), ...); });
  }
  template <class V>
  void visit_strides(V&& v) const {
    members.apply([&](const auto&... c) { (c.visit_strides(v), ...); });
  }
};

// group(c...): the cursors c, by reference, moved as one
template <class... C>
cursor_group<C&...> group(C&... c) {
  return {{{c}...}};
}

// for_each_position(extent, cursors, f): f(position) at every position of the box, row-major
template <std::size_t N, class Cursors, class F>
void for_each_position(const std::array<std::size_t, N>& extent, Cursors& cursors, F&& f) {
  for (std::size_t e : extent) {
    if (e == 0) return;
  }
  std::array<std::size_t, N> position{};
  while (true) {
    f(static_cast<const std::array<std::size_t, N>&>(position));
    std::size_t d = N;
    while (true) {  // the next position: the last dim that can go on does, those after restart
      if (d == 0) return;
      --d;
      if (++position[d] < extent[d]) {
        cursors.step(d);
        break;
      }
      cursors.unstep(d, position[d] - 1);
      position[d] = 0;
    }
  }
}

// for_each_position(extent, f): the same with no cursors
template <std::size_t N, class F>
void for_each_position(const std::array<std::size_t, N>& extent, F&& f) {
  cursor_group<> none;
  for_each_position(extent, none, f);
}

// for_each_row(extent, cursors, row): row(n) for every row of the box, trailing dims merged
template <std::size_t N, class Cursors, class Row>
void for_each_row(std::array<std::size_t, N> extent, Cursors& cursors, Row&& row) {
  if constexpr (N == 0) {
    row(std::size_t{1});
  } else {
    for (std::size_t e : extent) {
      if (e == 0) return;
    }
    std::size_t length = extent[N - 1];
    for (std::size_t k = N - 1; k > 0; --k) {
      bool mergeable = true;
      cursors.visit_strides([&](const auto& s) {
        mergeable = mergeable && s[k - 1] == s[N - 1] * static_cast<std::ptrdiff_t>(length);
      });
      if (!mergeable) break;
      length *= extent[k - 1];
      extent[k - 1] = 1;
    }
    std::array<std::size_t, N - 1> outer{};
    for (std::size_t i = 0; i + 1 < N; ++i) outer[i] = extent[i];
    for_each_position(outer, cursors, [&](const auto&) { row(length); });
  }
}

}  // namespace meshpp::detail

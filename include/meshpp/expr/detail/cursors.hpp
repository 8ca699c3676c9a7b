// meshpp/expr/detail/cursors.hpp — detail: how an expression's operands are read.
//
// An operand's cursor(frame) returns one of these: it stands at the first element of a row of
// the evaluation order and returns the row's j-th element with at(j); the traversal
// (core/traverse.hpp) moves it from row to row. How a leaf is read along the row is
// known from the types: contiguous (its last dim is the row's dim), invariant (it lacks the
// row's dim: a broadcast) or strided (it has the dim elsewhere: a transpose), so the fused
// loop of expr/evaluate.hpp compiles to the plainest loop that reads each operand.
#pragma once

#include <cstddef>

#include "meshpp/core/shape.hpp"
#include "meshpp/core/traverse.hpp"

namespace meshpp::detail {

// How a leaf is read along the innermost dim of the evaluation order: known from the types.
enum class access { contiguous, invariant, strided };

// access_of<S, O>(): how an operand of dims S is read along the last dim of order O
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
/// the current row; stride[d] is the leaf's stride along dim d of the order (0: broadcast).
template <class T, std::size_t N, access A>
struct leaf_cursor : strided_cursor<const T*, N> {
  T at(std::size_t j) const {
    if constexpr (A == access::contiguous)
      return this->ptr[j];
    else if constexpr (A == access::invariant)
      return *this->ptr;
    else
      return this->ptr[static_cast<std::ptrdiff_t>(j) * this->stride[N - 1]];
  }
};

/// A scalar: the same value everywhere, nothing to move.
template <class T>
struct scalar_cursor {
  T value;
  T at(std::size_t) const { return value; }
  void step(std::size_t) {}
  void unstep(std::size_t, std::size_t) {}
  template <class V>
  void visit_strides(V&&) const {}
};

/// A function node: f of its operands' elements; moving it moves them all.
template <class F, class... C>
struct function_cursor : cursor_group<C...> {
  F f;
  auto at(std::size_t j) const {
    return this->members.apply([&](const auto&... c) { return f(c.at(j)...); });
  }
};

}  // namespace meshpp::detail

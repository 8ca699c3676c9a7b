// meshpp/ops/detail/materialized.hpp — materialized(x): an operand read more than once, or
// read by index, as a tensor: a tensor as itself (by reference), an expression node evaluated
// once into a new tensor.
#pragma once

#include "meshpp/core/tensor.hpp"
#include "meshpp/expr/evaluate.hpp"

namespace meshpp::detail {

// materialized(x): a tensor as itself (by reference), an expression node evaluated once
template <class E>
decltype(auto) materialized(const E& e) {
  if constexpr (is_tensor_v<E>)
    return (e);
  else
    return eval(e);
}

}  // namespace meshpp::detail

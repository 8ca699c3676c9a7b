// meshpp/expr/functions.hpp — component-wise operators and functions of named expressions.
//
//   a + b, a - b, a * b, a / b, -a            (with scalars too: 2 * a, a / 3.0f)
//   a < b, a <= b, a > b, a >= b, equal(a, b), not_equal(a, b)   -> bool expressions
//   where(cond, a, b)                          cond ? a : b, element-wise
//   abs exp log sqrt rsqrt tanh sigmoid relu gelu softplus   pow(a, b) maximum(a, b) minimum(a, b)
//   cast<U>(a)
//
// Every one is lazy (a node of expr/expression.hpp) and broadcasts by dim name. Scalars take
// the value type of the first expression operand, so `x * 0.5` of a float tensor stays float.
#pragma once

#include <cmath>
#include <numbers>
#include <type_traits>
#include <utility>

#include "meshpp/expr/evaluate.hpp"
#include "meshpp/expr/expression.hpp"

namespace meshpp {

/// Element functors. Each is a plain struct, so nodes stay small and calls inline.
///
/// A differentiable function of one argument (abs ... gelu below) is written once, value and
/// derivative together, and serves expressions, traced tensors (autodiff/elementwise.hpp) and
/// the fused bias + activation of layers (nn/bias_activation.hpp) alike:
///
///   struct f {
///     static constexpr bool gradient_reads_input = false;   // gradient() needs y alone
///     template <class A> A operator()(A x) const;            // y = f(x)
///     template <class A> A gradient(A g, A x, A y) const;    // g f'(x), given y = f(x)
///   };
///
/// With gradient_reads_input false, gradient() is called with y in place of x (so the backward
/// pass reads y and g only, and need not keep or recompute x). A new function is such a functor
/// and one line MESHPP_UNARY_FUNCTION(f) below; componentwise(f{}, x) takes any such functor
/// without a name of its own.
namespace fn {
struct plus {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return a + b;
  }
};
struct minus {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return a - b;
  }
};
struct multiplies {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return a * b;
  }
};
struct divides {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return a / b;
  }
};
struct negate {
  template <class A>
  A operator()(A a) const {
    return -a;
  }
};
struct less {
  template <class A, class B>
  bool operator()(A a, B b) const {
    return a < b;
  }
};
struct less_equal {
  template <class A, class B>
  bool operator()(A a, B b) const {
    return a <= b;
  }
};
struct greater {
  template <class A, class B>
  bool operator()(A a, B b) const {
    return a > b;
  }
};
struct greater_equal {
  template <class A, class B>
  bool operator()(A a, B b) const {
    return a >= b;
  }
};
struct equal_to {
  template <class A, class B>
  bool operator()(A a, B b) const {
    return a == b;
  }
};
struct not_equal_to {
  template <class A, class B>
  bool operator()(A a, B b) const {
    return a != b;
  }
};
// where: the condition comes last, so that the result's dims follow the branches (see where())
struct where {
  template <class A, class B, class C>
  std::common_type_t<A, B> operator()(A a, B b, C c) const {
    return c ? a : b;
  }
};
struct abs {
  static constexpr bool gradient_reads_input = true;
  template <class A>
  A operator()(A a) const {
    return a < A(0) ? -a : a;
  }
  template <class A>
  A gradient(A g, A x, A) const {
    return x < A(0) ? -g : g;
  }
};
struct exp {
  static constexpr bool gradient_reads_input = false;
  template <class A>
  A operator()(A a) const {
    return std::exp(a);
  }
  template <class A>
  A gradient(A g, A, A y) const {
    return g * y;
  }
};
struct log {
  static constexpr bool gradient_reads_input = true;
  template <class A>
  A operator()(A a) const {
    return std::log(a);
  }
  template <class A>
  A gradient(A g, A x, A) const {
    return g / x;
  }
};
struct sqrt {
  static constexpr bool gradient_reads_input = false;
  template <class A>
  A operator()(A a) const {
    return std::sqrt(a);
  }
  template <class A>
  A gradient(A g, A, A y) const {
    return g * A(0.5) / y;
  }
};
struct rsqrt {
  static constexpr bool gradient_reads_input = false;
  template <class A>
  A operator()(A a) const {
    return A(1) / std::sqrt(a);
  }
  template <class A>
  A gradient(A g, A, A y) const {
    return g * A(-0.5) * y * y * y;
  }
};
struct tanh {
  static constexpr bool gradient_reads_input = false;
  template <class A>
  A operator()(A a) const {
    return std::tanh(a);
  }
  // f' = 1 - y^2
  template <class A>
  A gradient(A g, A, A y) const {
    return g * (A(1) - y * y);
  }
};
struct sigmoid {
  static constexpr bool gradient_reads_input = false;
  template <class A>
  A operator()(A a) const {
    return A(1) / (A(1) + std::exp(-a));
  }
  // f' = y (1 - y)
  template <class A>
  A gradient(A g, A, A y) const {
    return g * y * (A(1) - y);
  }
};
struct relu {
  static constexpr bool gradient_reads_input = false;
  // NaN stays NaN: the comparison is false for it and it is returned as is
  template <class A>
  A operator()(A a) const {
    return a < A(0) ? A(0) : a;
  }
  // f' = 1 where the output is positive (x > 0 exactly there); g passes unscaled: no 0 * inf
  template <class A>
  A gradient(A g, A, A y) const {
    return y > A(0) ? g : A(0);
  }
};
struct gelu {
  static constexpr bool gradient_reads_input = true;
  // the exact form, x * Phi(x), as in Hendrycks & Gimpel (2016)
  template <class A>
  A operator()(A a) const {
    return A(0.5) * a * (A(1) + std::erf(a * A(std::numbers::sqrt2 / 2)));
  }
  // f' = Phi(x) + x phi(x)
  template <class A>
  A gradient(A g, A x, A) const {
    const A cdf = A(0.5) * (A(1) + std::erf(x * A(std::numbers::sqrt2 / 2)));
    const A pdf = std::exp(A(-0.5) * x * x) * A(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return g * (cdf + x * pdf);
  }
};
struct softplus {
  static constexpr bool gradient_reads_input = true;
  // log(1 + e^x), stably: x + log1p(e^-x) for x > 0 (e^x would overflow), log1p(e^x) otherwise
  template <class A>
  A operator()(A a) const {
    return a > A(0) ? a + std::log1p(std::exp(-a)) : std::log1p(std::exp(a));
  }
  // f' = sigmoid(x)
  template <class A>
  A gradient(A g, A x, A) const {
    return g / (A(1) + std::exp(-x));
  }
};
struct pow {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return std::pow(a, b);
  }
};
struct maximum {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return a < b ? b : a;
  }
};
struct minimum {
  template <class A, class B>
  auto operator()(A a, B b) const {
    return b < a ? b : a;
  }
};
template <class U>
struct cast {
  template <class A>
  U operator()(A a) const {
    return static_cast<U>(a);
  }
};
}  // namespace fn

// Binary operators: at least one side is an expression; the other may be a scalar.
template <class A, class B>
auto operator+(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::plus{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator-(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::minus{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator*(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::multiplies{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator/(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::divides{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator<(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::less{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator<=(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::less_equal{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator>(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::greater{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto operator>=(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::greater_equal{}, std::forward<A>(a), std::forward<B>(b));
}
// equal(a, b), not_equal(a, b): element-wise == and != (the operators are left alone, so
// they never mean something other than comparing whole values)
template <class A, class B>
auto equal(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::equal_to{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto not_equal(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::not_equal_to{}, std::forward<A>(a), std::forward<B>(b));
}

// -a
template <class A>
requires is_expression_v<A>
auto operator-(A&& a) { return make_function(fn::negate{}, std::forward<A>(a)); }

namespace detail {
// where_scalar_t<A, B>: the type where()'s scalar branches take: that of the first of a, b
// that is an expression; when both are scalars, their common type (not the condition's
// bool, which would turn where(c, 1.0, -1.0) into where(c, true, true)).
template <class A, class B>
struct where_scalar {
  using type = scalar_type_t<A, B>;
};
template <class A, class B>
requires(!is_expression_v<A> && !is_expression_v<B>) struct where_scalar<A, B> {
  using type = std::common_type_t<std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
};
}  // namespace detail

// where(cond, a, b): a where cond holds, b elsewhere.
// The result's dims are a's, then those of b that a lacks, then those of cond that neither
// branch has: the branches decide the order, so where(mask, x, 0) keeps x's dim order whatever
// order the mask lists its dims in (a condition never transposes the result).
template <class C, class A, class B>
requires is_expression_v<C> && operand<A> && operand<B>
auto where(C&& c, A&& a, B&& b) {
  using scalar = typename detail::where_scalar<A, B>::type;
  return function_expr<fn::where, decltype(detail::as_operand<scalar>(std::forward<A>(a))),
                       decltype(detail::as_operand<scalar>(std::forward<B>(b))),
                       decltype(detail::as_operand<bool>(std::forward<C>(c)))>(
      fn::where{}, detail::as_operand<scalar>(std::forward<A>(a)),
      detail::as_operand<scalar>(std::forward<B>(b)), detail::as_operand<bool>(std::forward<C>(c)));
}

// componentwise(f, a): f (an element functor, fn:: above) applied to each component of the
// expression a, lazily. Other operands bring their own overload, found by argument-dependent
// lookup: componentwise(f, x) of a traced x (autodiff/elementwise.hpp) records f's gradient.
template <class F, class A>
requires is_expression_v<A>
auto componentwise(F f, A&& a) { return make_function(f, std::forward<A>(a)); }

namespace detail {
// gradient_from_output<F>: (g, y) |-> g f'(x), for an F whose gradient needs y alone
template <class F>
struct gradient_from_output {
  [[no_unique_address]] F f;
  template <class A>
  A operator()(A g, A y) const {
    return f.gradient(g, y, y);
  }
};
// gradient_from_input<F>: (g, x, y) |-> g f'(x)
template <class F>
struct gradient_from_input {
  [[no_unique_address]] F f;
  template <class A>
  A operator()(A g, A x, A y) const {
    return f.gradient(g, x, y);
  }
};
}  // namespace detail

// Unary functions: abs(a), exp(a), ...: componentwise(fn::NAME{}, a), for an expression a or a
// traced tensor (and its gradient)
#define MESHPP_UNARY_FUNCTION(NAME)                                            \
  template <class A>                                                           \
  requires requires(A && a) { componentwise(fn::NAME{}, std::forward<A>(a)); } \
  auto NAME(A&& a) { return componentwise(fn::NAME{}, std::forward<A>(a)); }
MESHPP_UNARY_FUNCTION(abs)
MESHPP_UNARY_FUNCTION(exp)
MESHPP_UNARY_FUNCTION(log)
MESHPP_UNARY_FUNCTION(sqrt)
MESHPP_UNARY_FUNCTION(rsqrt)
MESHPP_UNARY_FUNCTION(tanh)
MESHPP_UNARY_FUNCTION(sigmoid)
MESHPP_UNARY_FUNCTION(relu)
MESHPP_UNARY_FUNCTION(gelu)
MESHPP_UNARY_FUNCTION(softplus)
#undef MESHPP_UNARY_FUNCTION

// pow(a, b), maximum(a, b), minimum(a, b): at least one side an expression
template <class A, class B>
auto pow(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::pow{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto maximum(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::maximum{}, std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B>
auto minimum(A&& a, B&& b) requires binary_operands<A, B> {
  return make_function(fn::minimum{}, std::forward<A>(a), std::forward<B>(b));
}

// cast<U>(a)
template <class U, class A>
requires is_expression_v<A>
auto cast(A&& a) { return make_function(fn::cast<U>{}, std::forward<A>(a)); }

}  // namespace meshpp

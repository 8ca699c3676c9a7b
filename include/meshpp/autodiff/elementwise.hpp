// meshpp/autodiff/elementwise.hpp — component-wise operations on traced tensors, and their
// gradients.
//
//   auto z = x * w + b;          // x traced [batch, io], w a variable [io], b a plain [io]
//   auto h = mp::relu(z);        // each operation: one fused pass, recorded
//
// The operands may mix traced tensors, plain tensors, expressions and scalars (at least one
// traced). Each operation is evaluated at once in one pass over the local slices, without
// communication, exactly as on plain tensors; broadcasting is by name. Its gradient with
// respect to an operand is one component-wise expression, conformed to the operand
// (autodiff/traced.hpp): dims the operand was broadcast over are summed out locally, and the
// sum over the mesh dims they are split over (the data-parallel gradient sum) is deferred.
//
//   a + b, a - b, -a    d/da = g, d/db = +-g
//   a * b, a / b        g * b, g * a;  g / b, -g * a / b^2
//   exp(a), relu(a), ...  g f'(a): every unary function of expr/functions.hpp, through
//                       componentwise(f, a) and the derivative its functor defines
//   pow(a, b)           g * b * a^(b-1), g * log(a) * a^b
//   maximum, minimum    g to the operand chosen (the first on ties)
//   where(c, a, b)      g where c holds to a, elsewhere to b (c: a plain condition)
//   cast<U>(a)          g cast back
// Comparisons of traced tensors (a > 0) are plain bool expressions over their values.
#pragma once

#include <cmath>
#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/expr/functions.hpp"

namespace meshpp {

namespace detail {

// traced_arg: what a traced operation accepts: traced tensors, plain tensors or expressions,
// and arithmetic scalars
template <class X>
concept traced_arg =
    is_traced_operand_v<X> || is_expression_v<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;
// traced_pair: two such operands, at least one of them traced
template <class A, class B>
concept traced_pair = traced_arg<A> && traced_arg<B> &&
    (is_traced_operand_v<A> || is_traced_operand_v<B>);

// traced_binary(a, b, forward, grad_a, grad_b): y = forward(a, b); d/da = grad_a(g, a, b, y),
// d/db = grad_b(g, a, b, y) (not called for scalars)
template <class A, class B, class Forward, class GradA, class GradB>
auto traced_binary(const A& a, const B& b, Forward forward, GradA grad_a, GradB grad_b) {
  return record(
      forward,
      [grad_a, grad_b](const auto& out, const auto& g, const auto& ha, const auto& hb) {
        (void)grad_a, (void)grad_b;  // one of them is unused when its operand is a scalar
        if constexpr (!std::is_arithmetic_v<std::remove_cvref_t<decltype(ha)>>) {
          if (ha.wants_grad()) ha.add_grad(grad_a(g, handle_value(ha), handle_value(hb), out));
        }
        if constexpr (!std::is_arithmetic_v<std::remove_cvref_t<decltype(hb)>>) {
          if (hb.wants_grad()) hb.add_grad(grad_b(g, handle_value(ha), handle_value(hb), out));
        }
      },
      a, b);
}

}  // namespace detail

namespace detail {
// log_of(x): log(x) of a tensor or expression (lazy), std::log(x) of a number: meshpp::log
// takes expressions only, and hides std::log inside namespace meshpp
template <class X>
auto log_of(const X& x) {
  if constexpr (std::is_arithmetic_v<X>)
    return std::log(x);
  else
    return log(x);
}
}  // namespace detail

#define MESHPP_TRACED_BINARY(NAME, FORWARD, GRAD_A, GRAD_B)                                  \
  template <class A, class B>                                                                \
  requires detail::traced_pair<A, B>                                                         \
  auto NAME(const A& a, const B& b) {                                                        \
    return detail::traced_binary(                                                            \
        a, b, [](const auto& x, const auto& y) { return FORWARD; },                          \
        [](const auto& g, const auto& x, const auto& y, const auto& out) -> decltype(auto) { \
          (void)x, (void)y, (void)out;                                                       \
          return (GRAD_A); /* g itself by reference: no copy */                              \
        },                                                                                   \
        [](const auto& g, const auto& x, const auto& y, const auto& out) -> decltype(auto) { \
          (void)x, (void)y, (void)out;                                                       \
          return (GRAD_B);                                                                   \
        });                                                                                  \
  }
// a + b, a - b, a * b, a / b
MESHPP_TRACED_BINARY(operator+, x + y, g, g)
MESHPP_TRACED_BINARY(operator-, x - y, g, -g)
MESHPP_TRACED_BINARY(operator*, x* y, g* y, g* x)
MESHPP_TRACED_BINARY(operator/, x / y, g / y, -g* out / y)
// pow(a, b): d/da = b a^(b-1) = b y / a would divide by zero at a = 0, so a^(b-1) is computed;
// d/db = ln(a) y, with a plain number a in pow(2, b) (detail::log_of)
MESHPP_TRACED_BINARY(pow, pow(x, y), g* y* pow(x, y - 1), g* detail::log_of(x) * out)
// maximum(a, b), minimum(a, b): the gradient goes to the operand chosen (a on ties)
MESHPP_TRACED_BINARY(maximum, maximum(x, y), where(x >= y, g, 0), where(x >= y, 0, g))
MESHPP_TRACED_BINARY(minimum, minimum(x, y), where(x <= y, g, 0), where(x <= y, 0, g))
#undef MESHPP_TRACED_BINARY

// componentwise(f, a) of a traced a: y = f(a) in one pass, recorded; the backward step is
// one pass g f'(a) = f.gradient(g, a, y), reading g and y alone unless f.gradient_reads_input.
// Every unary function of expr/functions.hpp (exp(a) ... gelu(a)) is this with its functor.
template <class F, class A>
auto componentwise(F f, const traced<A>& a) {
  static_assert(
      requires(const F& fv, typename A::value_type v) {
        { F::gradient_reads_input } -> std::convertible_to<bool>;
        fv.gradient(v, v, v);
      },
      "meshpp::componentwise(f, a) of a traced a: f must define gradient(g, x, y) and "
      "gradient_reads_input (see the element functors of expr/functions.hpp)");
  return record([f](const A& x) { return make_function(f, x); },
                [f](const auto& out, const auto& g, const auto& x) {
                  if (!x.wants_grad()) return;
                  if constexpr (F::gradient_reads_input)
                    x.add_grad(make_function(detail::gradient_from_input<F>{f}, g, x.value(), out));
                  else
                    x.add_grad(make_function(detail::gradient_from_output<F>{f}, g, out));
                },
                a);
}

// -a of a traced a
template <class A>
auto operator-(const traced<A>& a) {
  return record([](const A& x) { return -x; },
                [](const auto&, const auto& g, const auto& x) { x.add_grad(-g); }, a);
}

// cast<U>(a): a's values as U; the gradient is cast back
template <class U, class A>
auto cast(const traced<A>& a) {
  return record([](const A& x) { return cast<U>(x); },
                [](const auto&, const auto& g, const auto& x) {
                  x.add_grad(cast<typename A::value_type>(g));
                },
                a);
}

// where(c, a, b): a where the plain condition c (a bool tensor or expression) holds, b
// elsewhere; a and b any mix of traced tensors, plain tensors, expressions and scalars (at least
// one traced). The result's dims follow the branches, as for plain where (expr/functions.hpp).
template <class C, class A, class B>
requires is_expression_v<C> && detail::traced_pair<A, B>
auto where(const C& c, const A& a, const B& b) {
  // one copy of the condition, shared by the forward and both backward steps
  const auto cond = std::make_shared<const decltype(eval(c))>(eval(c));
  return detail::traced_binary(
      a, b, [cond](const auto& x, const auto& y) { return where(*cond, x, y); },
      [cond](const auto& g, const auto&, const auto&, const auto&) { return where(*cond, g, 0); },
      [cond](const auto& g, const auto&, const auto&, const auto&) { return where(*cond, 0, g); });
}

// a < b, a <= b, a > b, a >= b, equal(a, b), not_equal(a, b) with a traced operand: plain bool
// expressions over the values (not differentiable; nothing is recorded)
#define MESHPP_TRACED_COMPARISON(NAME) \
  template <class A, class B>          \
  requires detail::traced_pair<A, B>   \
  auto NAME(const A& a, const B& b) { return NAME(detail::plain_value(a), detail::plain_value(b)); }
namespace detail {
template <class X>
decltype(auto) plain_value(const X& x) {
  if constexpr (is_traced_operand_v<X>)
    return (x.value());
  else
    return (x);
}
}  // namespace detail
MESHPP_TRACED_COMPARISON(operator<)
MESHPP_TRACED_COMPARISON(operator<=)
MESHPP_TRACED_COMPARISON(operator>)
MESHPP_TRACED_COMPARISON(operator>=)
MESHPP_TRACED_COMPARISON(equal)
MESHPP_TRACED_COMPARISON(not_equal)
#undef MESHPP_TRACED_COMPARISON

}  // namespace meshpp

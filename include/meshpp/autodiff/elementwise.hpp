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
//   exp log sqrt rsqrt tanh sigmoid relu gelu abs          g times the derivative
//   pow(a, b)           g * b * a^(b-1), g * log(a) * a^b
//   maximum, minimum    g to the operand chosen (the first on ties)
//   where(c, a, b)      g where c holds to a, elsewhere to b (c: a plain condition)
//   cast<U>(a)          g cast back
// Comparisons of traced tensors (a > 0) are plain bool expressions over their values.
#pragma once

#include <cmath>
#include <memory>
#include <numbers>
#include <type_traits>

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

// handle_of(x): a graph node for tensors and expressions; a scalar stays a scalar
template <class X>
auto handle_of(const X& x) {
  if constexpr (std::is_arithmetic_v<X>)
    return x;
  else
    return node_of(x);
}
template <class H>
decltype(auto) value_of(const H& h) {
  if constexpr (std::is_arithmetic_v<H>)
    return h;
  else
    return (h->value);
}
template <class H>
std::shared_ptr<node_base> input_of(const H& h) {
  if constexpr (std::is_arithmetic_v<H>)
    return nullptr;
  else
    return h;
}

// traced_unary(a, forward, grad): y = eval(forward(a)), d/da = grad(g, a, y)
template <class A, class Forward, class Grad>
auto traced_unary(const traced<A>& a, Forward forward, Grad grad) {
  auto ha = a.node();
  auto y = eval(forward(ha->value));
  using Y = decltype(y);
  return record(
      std::move(y), [ha, grad](const Y& out, const Y& g) { send(ha, grad(g, ha->value, out)); },
      ha);
}

// traced_binary(a, b, forward, grad_a, grad_b): y = eval(forward(a, b)); d/da =
// grad_a(g, a, b, y), d/db = grad_b(g, a, b, y) (not called for scalars)
template <class A, class B, class Forward, class GradA, class GradB>
auto traced_binary(const A& a, const B& b, Forward forward, GradA grad_a, GradB grad_b) {
  auto ha = handle_of(a);
  auto hb = handle_of(b);
  auto y = eval(forward(value_of(ha), value_of(hb)));
  using Y = decltype(y);
  return record(
      std::move(y),
      [ha, hb, grad_a, grad_b](const Y& out, const Y& g) {
        (void)grad_a, (void)grad_b;  // one of them is unused when its operand is a scalar
        if constexpr (!std::is_arithmetic_v<decltype(ha)>) {
          if (ha->wanted) ha->accumulate(grad_a(g, value_of(ha), value_of(hb), out));
        }
        if constexpr (!std::is_arithmetic_v<decltype(hb)>) {
          if (hb->wanted) hb->accumulate(grad_b(g, value_of(ha), value_of(hb), out));
        }
      },
      input_of(ha), input_of(hb));
}

// d/dx gelu(x) = Phi(x) + x phi(x)
struct gelu_derivative {
  template <class A>
  A operator()(A a) const {
    const A cdf = A(0.5) * (A(1) + std::erf(a * A(std::numbers::sqrt2 / 2)));
    const A pdf = std::exp(A(-0.5) * a * a) * A(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return cdf + a * pdf;
  }
};

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
// pow(a, b): d/da = b a^(b-1) = b y / a would divide by zero at a = 0, so a^(b-1) is computed
MESHPP_TRACED_BINARY(pow, pow(x, y), g* y* pow(x, y - 1), g* log(x) * out)
// maximum(a, b), minimum(a, b): the gradient goes to the operand chosen (a on ties)
MESHPP_TRACED_BINARY(maximum, maximum(x, y), where(x >= y, g, 0), where(x >= y, 0, g))
MESHPP_TRACED_BINARY(minimum, minimum(x, y), where(x <= y, g, 0), where(x <= y, 0, g))
#undef MESHPP_TRACED_BINARY

#define MESHPP_TRACED_UNARY(NAME, FORWARD, GRAD)            \
  template <class A>                                        \
  auto NAME(const traced<A>& a) {                           \
    return detail::traced_unary(                            \
        a, [](const auto& x) { return FORWARD; },           \
        [](const auto& g, const auto& x, const auto& out) { \
          (void)x, (void)out;                               \
          return GRAD;                                      \
        });                                                 \
  }
// -a, exp(a), log(a), sqrt(a), rsqrt(a), tanh(a), sigmoid(a), relu(a), gelu(a), abs(a)
MESHPP_TRACED_UNARY(operator-, -x, -g)
MESHPP_TRACED_UNARY(exp, exp(x), g* out)
MESHPP_TRACED_UNARY(log, log(x), g / x)
MESHPP_TRACED_UNARY(sqrt, sqrt(x), g * 0.5 / out)
MESHPP_TRACED_UNARY(rsqrt, rsqrt(x), g*(-0.5) * out * out * out)
MESHPP_TRACED_UNARY(tanh, tanh(x), g*(1 - out * out))
MESHPP_TRACED_UNARY(sigmoid, sigmoid(x), g* out*(1 - out))
MESHPP_TRACED_UNARY(relu, relu(x), where(x > 0, g, 0))
MESHPP_TRACED_UNARY(gelu, gelu(x), g* make_function(detail::gelu_derivative{}, x))
MESHPP_TRACED_UNARY(abs, abs(x), where(x < 0, -g, g))
#undef MESHPP_TRACED_UNARY

// cast<U>(a): a's values as U; the gradient is cast back
template <class U, class A>
auto cast(const traced<A>& a) {
  return detail::traced_unary(
      a, [](const auto& x) { return cast<U>(x); },
      [](const auto& g, const auto&, const auto&) { return cast<typename A::value_type>(g); });
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

// Shared by grad_softmax.cpp, grad_softmax_replicated.cpp, grad_softmax_masked.cpp and
// grad_softmax_where.cpp: on grad_fixture.hpp's dims and meshes (split_mesh: batch:rows,
// hidden:cols; replicated_mesh), the dim seq (whole on both), the sizes, the meshes every check
// runs on, and the central-difference checks:
//   check(what, x, f)          gradients(f(trace(x)), x) against central differences of f, as
//                              check_gradient, and also the gradient and the loss finite: a NaN
//                              gradient would pass check_gradient, since a NaN difference never
//                              exceeds the largest error so far
//   check_held(what, x, f, c)  gradients of f(t, stop_gradient(c(t))) against central
//                              differences of f(t, c(x)), c held at x's value: no gradient may
//                              flow through stop_gradient
// and over<Dim>(x), which checks softmax, log_softmax and logsumexp over Dim.
#pragma once

#include <meshpp/autodiff/softmax.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "grad_fixture.hpp"

MESHPP_DIM(seq);

namespace grad_softmax {

inline constexpr std::size_t nb = 4, nh = 8, ns = 3;
inline const auto sizes = mp::extents{batch{} = nb, hidden{} = nh, seq{} = ns};

// on_every_mesh(f): f(mesh) on split_mesh and replicated_mesh of every shape
template <class F>
void on_every_mesh(F&& f) {
  for (const auto& shape : mesh_shapes()) {
    f(split_mesh(shape));
    f(replicated_mesh(shape));
  }
}

// all_finite(a): every element of the array a is finite
template <class A>
bool all_finite(const A& a) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(static_cast<double>(a.data()[i]))) return false;
  }
  return true;
}

// report(what, x, loss, grad, loss_at): checks the central-difference error of grad (x's
// gradient gathered whole) against loss_at, and that loss and grad are finite
template <class X, class L, class G, class F>
void report(std::string_view what, const X& x, const L& loss, const G& grad, F&& loss_at) {
  const double error = meshpp_test::central_difference_error(x, grad, loss_at, 1e-6);
  const bool finite = all_finite(grad) && std::isfinite(meshpp_test::scalar_of(loss));
  meshpp_test::check_gradient_error(what, x.mesh().describe(),
                                    finite ? error : std::numeric_limits<double>::infinity(),
                                    meshpp_test::gradient_tolerance);
}

// The loss functions, type-erased: check and check_held are compiled once per tensor type,
// not once per loss (about a seventh of these tests' compile time)
template <class X>
using loss_t = decltype(mp::reduce_sum(std::declval<const mp::traced<X>&>()));
template <class X>
using loss_of = std::function<loss_t<X>(const mp::traced<X>&)>;
template <class X, class C>
using held_t =
    std::remove_cvref_t<decltype(std::declval<C>()(std::declval<const mp::traced<X>&>()).value())>;
template <class X, class C>
using held_loss_of = std::function<loss_t<X>(const mp::traced<X>&, const held_t<X, C>&)>;

template <class X>
void check(std::string_view what, const X& x, const std::type_identity_t<loss_of<X>>& f) {
  const auto xt = mp::trace(x);
  const auto loss = f(xt);
  const auto [g] = mp::gradients(loss, xt);
  report(what, x, loss, mp::gather(g),
         [&](const X& p) { return meshpp_test::scalar_of(f(mp::trace(p))); });
}

template <class X, class C>
void check_held(std::string_view what, const X& x,
                const std::type_identity_t<held_loss_of<X, C>>& f, const C& c) {
  const auto xt = mp::trace(x);
  const auto loss = f(xt, mp::stop_gradient(c(xt)));
  const auto [g] = mp::gradients(loss, xt);
  const held_t<X, C> held = c(xt).value();  // c at x, a constant
  report(what, x, loss, mp::gather(g),
         [&](const X& p) { return meshpp_test::scalar_of(f(mp::trace(p), held)); });
}

// over<Dim>(x): softmax, log_softmax and logsumexp over Dim, each through weighted_sum (every
// output element its own weight: softmax's rows sum to 1, so a plain sum has gradient 0)
template <class Dim, class X>
void over(std::string_view dim, const X& x) {
  const std::string name(dim);
  check("softmax<" + name + ">", x,
        [](const auto& t) { return weighted_sum(mp::softmax<Dim>(t)); });
  check("log_softmax<" + name + ">", x,
        [](const auto& t) { return weighted_sum(mp::log_softmax<Dim>(t)); });
  check("logsumexp<" + name + ">", x,
        [](const auto& t) { return weighted_sum(mp::logsumexp<Dim>(t)); });
}

}  // namespace grad_softmax

// meshpp/autodiff/movement.hpp — data-movement operations on traced tensors, and their
// gradients.
//
//   auto y = mp::relayout<mp::layout<mp::split<hidden, rows>>>(x);   // x traced or a variable
//   auto pieces = mp::split_along<seq>(x, {4, 4});   // a std::vector of traced pieces
//
// Forward: exactly the plain operation (ops/relayout.hpp, reshape.hpp, slice.hpp, shift.hpp),
// with the same communication. Backward: the transposed named operation, so a gradient
// communicates what the layouts of that operation imply, nothing more (m: the mesh dim the
// moved dim is split over; nothing at all where it is whole):
//   relayout<R>(a)           g relayouted back to a's layout, each step transposed:
//                              [a/m] |-> [a] allgather      <->  [a] |-> [a/m] local slice
//                              [a] |-> [a/m] local slice    <->  [a/m] |-> [a] allgather
//                              [a/m, b] |-> [a, b/m] alltoall  <->  the reverse alltoall
//                            (an allgather's transpose is a slice, not a reduce_scatter: the
//                            gradient of a replicated value is itself replicated)
//   reshape<S>(a[, sizes])   reshape<a's shape>(g, a's sizes), then to a's layout: the
//                            reshape's relayouts in reverse (a local copy where splits survive)
//   rename<Old, New>(a)      rename<New, Old>(g), then to a's layout
//   slice<D>(a, b, k)        pad<D>(g, b, n - b - k): one permute over m of the rows that
//                            cross into another rank's stripe
//   pad<D>(a, b, e, v)       slice<D>(g, b, n): one permute over m (v gets no gradient)
//   concat<D>(a, b)          slice<D>(g, 0, na) to a, slice<D>(g, na, nb) to b: one permute
//                            over m each. Two slices, not split_along<D>(g, {na, nb}): they
//                            move exactly the same rows (split_along is those two remaps), but
//                            a slice is made only for an operand that wants a gradient, so
//                            concat with a plain operand moves only the traced one's rows
//   split_along<D>(a, sizes) piece i is recorded as slice<D>(a, b_i, k_i): its gradient is
//                            pad<D>(g_i, b_i, n - b_i - k_i) (one permute over m), and a's
//                            gradient is their sum; pieces that get no gradient send nothing
//                            (zeros). The rows moved are those concat<D> of the pieces would
//                            move; the price is one a-sized local tensor (and add) per piece
//   shift<D>(a, s, b)        shift<D>(g, -s, b): the same permute over m, the other way.
//                            Exact for both boundaries: out[i] = a[i - s] (zero outside, or
//                            indices mod n) has transpose da[j] = g[j + s], zero outside /
//                            mod n alike
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "meshpp/autodiff/record.hpp"
#include "meshpp/autodiff/traced.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/ops/relayout.hpp"
#include "meshpp/ops/remap.hpp"
#include "meshpp/ops/reshape.hpp"
#include "meshpp/ops/shift.hpp"
#include "meshpp/ops/slice.hpp"

namespace meshpp {

// relayout<NewRules>(a) of a traced tensor: the gradient is relayouted back to a's layout
template <class NewRules, class A>
requires is_layout_v<NewRules>
auto relayout(const traced<A>& a) {
  // add_grad relayouts g to a's layout (one pass when that is a free slice)
  auto r = record([](const A& x) { return relayout<NewRules>(x); },
                  [](const auto&, const auto& g, const auto& x) { x.add_grad(g); }, a);
  using Y = typename decltype(r)::tensor_type;
  detail::pass_pending(r, a.node(), [](const Y& g) -> const Y& { return g; });
  return r;
}

// reshape<NewShape>(a, sizes) of a traced tensor: the gradient is reshaped back
template <class NewShape, class A, class... E>
requires is_shape_v<NewShape>
auto reshape(const traced<A>& a, const extents<E...>& sizes) {
  const auto back = [sizes = a.value().sizes()](const auto& g) {
    return reshape<typename A::shape_type>(g, sizes);
  };
  auto r = record([&sizes](const A& x) { return reshape<NewShape>(x, sizes); },
                  [back](const auto&, const auto& g, const auto& x) {
                    if (x.wants_grad()) x.add_grad(back(g));
                  },
                  a);
  using Y = typename decltype(r)::tensor_type;
  detail::pass_pending(r, a.node(), [back](const Y& g) { return back(g); });
  return r;
}

// reshape<NewShape>(a) of a traced tensor: all sizes inferred
template <class NewShape, class A>
requires is_shape_v<NewShape>
auto reshape(const traced<A>& a) { return reshape<NewShape>(a, extents<>{}); }

// rename<Old, New>(a) of a traced tensor: the gradient is renamed back
template <class Old, class New, class A>
auto rename(const traced<A>& a) {
  auto r = record([](const A& x) { return rename<Old, New>(x); },
                  [](const auto&, const auto& g, const auto& x) {
                    if (x.wants_grad()) x.add_grad(rename<New, Old>(g));
                  },
                  a);
  using Y = typename decltype(r)::tensor_type;
  detail::pass_pending(r, a.node(), [](const Y& g) { return rename<New, Old>(g); });
  return r;
}

namespace detail {
// pad_back<Dim>{begin, size}: the backward step of slice<Dim>(x, begin, size): g padded back
// with zeros to x's extent
template <class Dim>
struct pad_back {
  std::size_t begin, size;
  template <class A, class X>
  void operator()(const A&, const A& g, const X& x) const {
    if (!x.wants_grad()) return;
    const std::size_t n = x.value().template extent<Dim>();
    x.add_grad(pad<Dim>(g, begin, n - begin - size));
  }
};
}  // namespace detail

// slice<Dim>(a, begin, size) of a traced tensor: the gradient is padded back with zeros
template <class Dim, class A>
traced<A> slice(const traced<A>& a, std::size_t begin, std::size_t size) {
  detail::check_dim_of<Dim, A>();
  return record(slice<Dim>(a.value(), begin, size), detail::pad_back<Dim>{begin, size}, a);
}

// pad<Dim>(a, before, after, value = 0) of a traced tensor: the gradient is sliced back
template <class Dim, class A>
traced<A> pad(const traced<A>& a, std::size_t before, std::size_t after,
              typename A::value_type value = {}) {
  detail::check_dim_of<Dim, A>();
  return record(
      pad<Dim>(a.value(), before, after, value),
      [before](const A&, const A& g, const auto& x) {
        if (x.wants_grad()) x.add_grad(slice<Dim>(g, before, x.value().template extent<Dim>()));
      },
      a);
}

namespace detail {
// concat_operands: a traced tensor and a traced or plain tensor (either order)
template <class X>
concept concat_operand = is_traced_operand_v<X> || is_tensor_v<X>;
template <class A, class B>
concept either_traced = is_traced_operand_v<A> || is_traced_operand_v<B>;
template <class A, class B>
concept concat_operands = concat_operand<A> && concat_operand<B> && either_traced<A, B>;

template <class X>
struct plain_tensor_of {
  using type = X;
};
template <class X>
requires is_traced_operand_v<X>
struct plain_tensor_of<X> {
  using type = typename X::tensor_type;
};
}  // namespace detail

// concat<Dim>(a, b) with a traced operand (the other may be a plain tensor of the same type):
// each operand's gradient is its slice of g
template <class Dim, class A, class B>
requires detail::concat_operands<A, B>
auto concat(const A& a, const B& b) {
  using TA = typename detail::plain_tensor_of<A>::type;
  using TB = typename detail::plain_tensor_of<B>::type;
  static_assert(std::is_same_v<TA, TB>,
                "meshpp::concat<Dim>(a, b): a and b must be tensors of one type (the same dims "
                "in the same order, the same layout and mesh)");
  detail::check_dim_of<Dim, TA>();
  return record([](const TA& x, const TA& y) { return concat<Dim>(x, y); },
                [](const TA&, const TA& g, const auto& x, const auto& y) {
                  const std::size_t nx = x.value().template extent<Dim>();
                  if (x.wants_grad()) x.add_grad(slice<Dim>(g, 0, nx));
                  if (y.wants_grad())
                    y.add_grad(slice<Dim>(g, nx, y.value().template extent<Dim>()));
                },
                a, b);
}

// split_along<Dim>(a, sizes) of a traced tensor: the pieces, each traced as a slice of a
template <class Dim, class A>
std::vector<traced<A>> split_along(const traced<A>& a, const std::vector<std::size_t>& sizes) {
  detail::check_dim_of<Dim, A>();
  std::vector<A> values = split_along<Dim>(a.value(), sizes);  // checks sizes, on every rank
  std::vector<traced<A>> pieces;
  pieces.reserve(values.size());
  std::size_t begin = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    pieces.push_back(record(std::move(values[i]), detail::pad_back<Dim>{begin, sizes[i]}, a));
    begin += sizes[i];
  }
  return pieces;
}

// shift<Dim>(a, offset, b = boundary::zero) of a traced tensor: the gradient is shifted back
template <class Dim, class A>
traced<A> shift(const traced<A>& a, long offset, boundary b = boundary::zero) {
  detail::check_dim_of<Dim, A>();
  return record(
      shift<Dim>(a.value(), offset, b),
      [offset, b](const A&, const A& g, const auto& x) {
        if (x.wants_grad()) x.add_grad(shift<Dim>(g, -offset, b));
      },
      a);
}

}  // namespace meshpp

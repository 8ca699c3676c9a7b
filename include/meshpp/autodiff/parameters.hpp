// meshpp/autodiff/parameters.hpp — a model's variables, found from the parts it declares once.
//
//   struct model {
//     mp::embedding<float, vocab, mp::shape<d_model>, Mesh> tokens;
//     mp::variable<positions_t> positions;
//     std::vector<block_t> blocks;
//     mp::dense<float, mp::shape<d_model>, mp::shape<vocab>, Mesh> unembed;
//     auto layers() const { return std::tie(tokens, positions, blocks, unembed); }
//   };
//
//   mp::adam opt({.learning_rate = 1e-3}, model);   // or opt.add(model): every variable
//   ckpt.add(model);                                // every variable, under its own name
//   mp::set_inference(model, true);                 // dropout off in every layer that has it
//   mp::parameter_count(model);                     // global elements of every variable
//
// A part is a variable; a layer, whose variables() is a tuple of its variables; a model, whose
// layers() is a std::tie of its members (layers, variables, other models, containers of them);
// a std::tuple or a range of parts. The walk is in declaration order, the same on every rank,
// so it fixes the optimizer's and the checkpoint's order. Nothing here communicates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

#include "meshpp/autodiff/traced.hpp"

namespace meshpp {

namespace detail {

template <class X>
inline constexpr bool is_variable_v = false;
template <class Tensor>
inline constexpr bool is_variable_v<variable<Tensor>> = true;

template <class X>
inline constexpr bool is_tuple_v = false;
template <class... Xs>
inline constexpr bool is_tuple_v<std::tuple<Xs...>> = true;

template <class X>
concept has_layers = requires(const X& x) {
  x.layers();
};
template <class X>
concept has_variables = requires(const X& x) {
  x.variables();
};
template <class X>
concept has_set_inference = requires(X& x) {
  x.set_inference(true);
};
// a container (a tensor or a traced value is a range of numbers, not of parts)
template <class X>
concept part_container = std::ranges::input_range<const X> && !is_tensor_v<X> && !is_traced_v<X>;

// part_check<X>(): X is a variable, a layer, a model, or a tuple or container of parts
template <class X>
constexpr bool part_check() {
  if constexpr (is_variable_v<X> || has_layers<X> || has_variables<X>) {
    return true;
  } else if constexpr (is_tuple_v<X>) {
    return []<class... Xs>(std::type_identity<std::tuple<Xs...>>) {
      return (part_check<std::remove_cvref_t<Xs>>() && ...);
    }(std::type_identity<X>{});
  } else if constexpr (part_container<X>) {
    return part_check<std::remove_cvref_t<std::ranges::range_value_t<const X>>>();
  } else {
    return false;
  }
}

// layers() must name the model's own members: set_inference writes through them
template <class Tuple, std::size_t... I>
constexpr bool parts_by_reference(std::index_sequence<I...>) {
  return (... && (std::is_lvalue_reference_v<std::tuple_element_t<I, Tuple>> ||
                  is_variable_v<std::remove_cvref_t<std::tuple_element_t<I, Tuple>>>));
}

}  // namespace detail

/// Whether X is a part of a model: a variable, a layer, a model, or a tuple or range of parts.
template <class X>
inline constexpr bool is_model_part_v = detail::part_check<std::remove_cvref_t<X>>();

namespace offending {
template <class X>
inline constexpr bool model_part_is_not_a_variable_layer_model_tuple_or_range = false;
template <class X>
inline constexpr bool layers_must_return_std_tie_of_members = false;
}  // namespace offending

/// for_each_variable(part, f): f(v) for every variable v of part (a handle: a copy shares the
/// value and the gradient), in declaration order
template <class Part, class F>
void for_each_variable(const Part& part, F&& f) {
  if constexpr (detail::is_variable_v<Part>) {
    f(part);
  } else if constexpr (detail::has_layers<Part>) {
    for_each_variable(part.layers(), f);
  } else if constexpr (detail::has_variables<Part>) {
    for_each_variable(part.variables(), f);
  } else if constexpr (detail::is_tuple_v<Part>) {
    std::apply([&](const auto&... p) { (for_each_variable(p, f), ...); }, part);
  } else if constexpr (detail::part_container<Part>) {
    for (const auto& p : part) for_each_variable(p, f);
  } else {
    // If this fails, something handed to an optimizer, a checkpoint or the walk is none of:
    // a variable, a layer with variables(), a model with layers(), a tuple or a range of them
    // (a plain tensor or a traced value is not trained: wrap it, mp::variable w(tensor, "w")).
    static_assert(offending::model_part_is_not_a_variable_layer_model_tuple_or_range<Part>,
                  "meshpp::for_each_variable(part, f): a part must be a variable, a layer with "
                  "variables(), a model with layers(), or a tuple or range of them");
  }
}

/// set_inference(part, on): every layer of part that has set_inference(bool) (dropout, the
/// attention, the Transformer block) to inference (dropout off: evaluation, generation) or, with
/// on = false, back to training. A layer that has set_inference is left to set its own parts.
template <class Part>
void set_inference(Part& part, bool on) {
  if constexpr (detail::has_set_inference<Part>) {
    part.set_inference(on);
  } else if constexpr (detail::has_layers<Part>) {
    using parts = decltype(std::as_const(part).layers());
    static_assert(detail::parts_by_reference<std::remove_cvref_t<parts>>(
                      std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<parts>>>{}) ||
                      offending::layers_must_return_std_tie_of_members<Part>,
                  "meshpp::set_inference(model, on): layers() must return std::tie(...) of the "
                  "model's members, not copies");
    // part is not const, so neither are its members: the const references layers() gives may
    // be written through
    std::apply(
        [&](const auto&... p) {
          (set_inference(const_cast<std::remove_cvref_t<decltype(p)>&>(p), on), ...);
        },
        std::as_const(part).layers());
  } else if constexpr (detail::is_tuple_v<Part>) {
    std::apply([&](auto&... p) { (set_inference(p, on), ...); }, part);
  } else if constexpr (detail::part_container<Part>) {
    for (auto& p : part) set_inference(p, on);
  }
  // variables and layers without a mode: nothing to set
}

/// parameter_count(part): the global number of elements of every variable of part
template <class Part>
std::size_t parameter_count(const Part& part) {
  std::size_t total = 0;
  for_each_variable(part, [&](const auto& v) {
    std::size_t n = 1;
    for (const auto extent : v.value().global_shape()) n *= extent;
    total += n;
  });
  return total;
}

/// add_variables(target, parts...): target.add(v) for every variable v of every part, in order
/// (target: an optimizer, a checkpoint, or anything with add(variable))
template <class Target, class... Parts>
void add_variables(Target& target, const Parts&... parts) {
  (for_each_variable(parts, [&](const auto& v) { target.add(v); }), ...);
}

}  // namespace meshpp

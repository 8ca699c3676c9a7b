// meshpp/ops/reshape.hpp — reshape<NewShape>(t, sizes) and rename<Old, New>(t).
//
//   auto heads = reshape<shape<batch, seq, head, d_kv>>(x, extents{head{} = 8, d_kv{} = 64});
//   auto y     = rename<hidden, hidden2>(x);
//
// The global row-major order of the elements is kept: dims in both shapes (by name) are kept
// and must appear in the same order; between them, runs of old dims become runs of new dims
// whose sizes multiply to the same product ([seq, d_model] |-> [seq, head, d_kv]). Sizes of
// new dims come from `sizes`, or are inferred when a run has one new dim.
// The output is laid out by the mesh's rules. Data moves only when the layout must change:
//   [a/m, b] |-> [ab/m]   local: the outermost dim of a run keeps its split
//   [a, b/m] |-> [ab/m]   relayout: allgather b over m, then slice (relayout.hpp)
// so a reshape is: relayout to the splits that survive a local reinterpretation, reinterpret
// locally (a copy of the slice), relayout to the output's rules. A split survives only when the
// old dim split and the first new dim of its run both divide by the mesh dim ([tokens/m] |->
// [batch/m, seq] needs tokens and batch divisible by m); when one would not, only the splits of
// kept dims survive and the others are gathered first. A result dim the mesh's rules split
// unevenly is laid out in near-equal blocks, as any tensor. Sizes that do not multiply out
// throw meshpp::error on every rank before any communication.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

#include "meshpp/core/divides.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/text.hpp"
#include "meshpp/ops/relayout.hpp"

namespace meshpp {

namespace offending {
template <class From, class To>
inline constexpr bool reshape_reorders_kept_dims = false;
template <class Dim, class Shape>
inline constexpr bool renamed_dim_not_in_tensor = false;
}  // namespace offending

namespace detail {

/// Groups of a reshape From -> To: each kept dim is a group of its own; the runs of other dims
/// between kept dims form one group each (old run -> new run).
template <class From, class To>
struct reshape_groups {
  static constexpr std::size_t n = From::rank, k = To::rank;
  struct result {
    std::array<int, n> old_group{};
    std::array<bool, n> old_first{};
    std::array<int, k> new_group{};
    std::array<bool, k> new_first{};
    std::array<int, n + k + 1> new_count{};  // new dims per group
    int groups = 0;
    bool order_ok = true;
  };
  static constexpr std::array<bool, n> old_kept = [] {
    std::array<bool, n> a{};
    for_each_index<n>([&](auto i) { a[i] = contains_v<To, dim_at_t<From, i.value>>; });
    return a;
  }();
  static constexpr std::array<bool, k> new_kept = [] {
    std::array<bool, k> a{};
    for_each_index<k>([&](auto j) { a[j] = contains_v<From, dim_at_t<To, j.value>>; });
    return a;
  }();
  // position in To of each kept old dim (-1 for others)
  static constexpr std::array<int, n> position_in_to = [] {
    std::array<int, n> a{};
    for_each_index<n>([&](auto i) {
      using d = dim_at_t<From, i.value>;
      if constexpr (contains_v<To, d>)
        a[i] = int(index_of_v<To, d>);
      else
        a[i] = -1;
    });
    return a;
  }();
  static constexpr result value = [] {
    result r;
    int last = -1;
    for (std::size_t i = 0; i < n; ++i) {
      if (position_in_to[i] >= 0) {
        if (position_in_to[i] < last) r.order_ok = false;
        last = position_in_to[i];
      }
    }
    if (!r.order_ok) return r;
    std::size_t i = 0, j = 0;
    while (i < n || j < k) {
      bool any = false;
      bool first = true;
      while (i < n && !old_kept[i]) {
        r.old_group[i] = r.groups;
        r.old_first[i] = first;
        first = false;
        any = true;
        ++i;
      }
      first = true;
      while (j < k && !new_kept[j]) {
        r.new_group[j] = r.groups;
        r.new_first[j] = first;
        first = false;
        ++r.new_count[r.groups];
        any = true;
        ++j;
      }
      if (any) ++r.groups;
      if (i < n && j < k) {  // the same kept dim on both sides
        r.old_group[i] = r.groups;
        r.old_first[i] = true;
        r.new_group[j] = r.groups;
        r.new_first[j] = true;
        r.new_count[r.groups] = 1;
        ++r.groups;
        ++i;
        ++j;
      }
    }
    return r;
  }();
};

// layout_from_t<S, AxesShape, A>: the layout splitting S's i-th dim over axis A[i] (if >= 0)
template <class S, class AxesShape, auto A>
struct layout_from {
  template <std::size_t I>
  static auto rule() {
    if constexpr (A[I] < 0)
      return layout<>{};
    else
      return layout<split<dim_at_t<S, I>, dim_at_t<AxesShape, std::size_t(A[I])>>>{};
  }
  // a function, not a lambda in decltype: clang 14 crashes reading such a lambda back from a
  // precompiled header (the tests' PCH)
  template <std::size_t... I>
  static auto rules(std::index_sequence<I...>) {
    return (layout<>{} + ... + rule<I>());
  }
  using type = decltype(rules(std::make_index_sequence<S::rank>{}));
};

// KeepRunSplits: false keeps only the splits of dims that both shapes have (always legal)
template <class From, class To, class FromLayout, class AxesShape, bool KeepRunSplits = true>
struct reshape_layouts {
  using g = reshape_groups<From, To>;
  static constexpr auto groups = g::value;
  static constexpr auto from = assignment<From, FromLayout, AxesShape>();  // per axis: dim or -1
  // per old dim: the axis it stays split over through the local reinterpretation, or -1
  static constexpr std::array<int, From::rank> kept_split = [] {
    std::array<int, From::rank> a{};
    a.fill(-1);
    for (std::size_t m = 0; m < AxesShape::rank; ++m) {
      const int d = from[m];
      if (d >= 0 && groups.old_first[d] && groups.new_count[groups.old_group[d]] > 0 &&
          (KeepRunSplits || g::old_kept[d])) {
        a[d] = int(m);
      }
    }
    return a;
  }();
  // per new dim: the axis it is split over right after the local reinterpretation
  static constexpr std::array<int, To::rank> new_split = [] {
    std::array<int, To::rank> a{};
    a.fill(-1);
    for (std::size_t i = 0; i < From::rank; ++i) {
      if (kept_split[i] < 0) continue;
      for (std::size_t j = 0; j < To::rank; ++j) {
        if (groups.new_first[j] && groups.new_group[j] == groups.old_group[i]) a[j] = kept_split[i];
      }
    }
    return a;
  }();
  using before = typename layout_from<From, AxesShape, kept_split>::type;  // old names
  using after = typename layout_from<To, AxesShape, new_split>::type;      // new names
};

// split_problem<Layout, Shape>(mesh, sizes): a split dim of a tensor of Shape with these sizes,
// laid out by Layout on mesh, that its mesh dim does not divide, or "" if every one divides
template <class Layout, class Shape, class Mesh, std::size_t N>
std::string split_problem(const Mesh& m, const std::array<std::size_t, N>& sizes) {
  std::string problem;
  [&]<class... Splits>(layout<Splits...>*) {
    [[maybe_unused]] auto check = [&]<class D, class M>(D*, M*) {  // unused if no Splits
      if (problem.empty()) {
        problem = split_not_divisible(D::name(), sizes[index_of_v<Shape, D>], M::name(),
                                      static_cast<std::size_t>(m.template size<M>()));
      }
    };
    (check(static_cast<typename Splits::tensor_dim*>(nullptr),
           static_cast<typename Splits::mesh_dim*>(nullptr)),
     ...);
  }(static_cast<Layout*>(nullptr));
  return problem;
}

// reshape_through<Plan, To>(t, sizes): relayout to Plan::before, reinterpret locally as
// Plan::after, relayout to the mesh's rules
template <class Plan, class To, class Tensor, class Sizes>
auto reshape_through(const Tensor& t, const Sizes& new_extents) {
  const auto scope = t.mesh().counters().operation([] {
    return detail::listed_operation(operation_kind::reshape, "reshape",
                                    {dim_names_v<typename Tensor::shape_type>, dim_names_v<To>});
  });
  using middle_t =
      tensor<typename Tensor::value_type, To, typename Plan::after, typename Tensor::mesh_type>;
  middle_t middle(t.mesh(), new_extents, middle_t::uninitialized);
  auto reinterpret = [&](const auto& source) {  // the one local copy of the slice
    t.mesh().counters().streamed(
        [&] { return source.local().size() * sizeof(typename Tensor::value_type); });
    std::copy(source.local().data(), source.local().data() + source.local().size(),
              middle.local().data());
  };
  // relayout to an unchanged layout would be one more copy of the slice: skipped
  if constexpr (std::is_same_v<typename Plan::before, typename Tensor::layout_type>) {
    reinterpret(t);
  } else {
    reinterpret(relayout<typename Plan::before>(t));
  }
  using target = layout_for_t<typename Tensor::mesh_type::rules, To>;
  if constexpr (std::is_same_v<typename Plan::after, target>) {
    return middle;
  } else {
    return relayout<typename Tensor::mesh_type::rules>(middle);
  }
}

template <class S, class Old, class New>
struct renamed;
template <class... Dims, class Old, class New>
struct renamed<shape<Dims...>, Old, New> {
  using type = shape<std::conditional_t<std::is_same_v<Dims, Old>, New, Dims>...>;
};

}  // namespace detail

// reshape<NewShape>(t, sizes): t's elements, in the same global row-major order, as NewShape
// (laid out by the mesh's rules). `sizes` gives the sizes of new dims (optional where a run
// has a single new dim).
template <class NewShape, class Tensor, class... E>
requires is_tensor_v<Tensor> && is_shape_v<NewShape>
auto reshape(const Tensor& t, const extents<E...>& sizes) {
  using From = typename Tensor::shape_type;
  using To = NewShape;
  using Mesh = typename Tensor::mesh_type;
  using G = detail::reshape_groups<From, To>;
  static_assert(G::value.order_ok || offending::reshape_reorders_kept_dims<From, To>,
                "meshpp::reshape<NewShape>(t): dims of both shapes must keep their order (a "
                "reshape keeps the row-major order of the elements; transpose by assigning to a "
                "tensor of another dim order)");
  using axes = typename Mesh::axes_type::shape_type;
  using plan = detail::reshape_layouts<From, To, typename Tensor::layout_type, axes>;
  constexpr auto groups = G::value;

  // Sizes of the new shape, and the group products, checked before anything moves.
  std::array<std::size_t, To::rank> new_size{};
  std::array<std::size_t, From::rank + To::rank + 1> old_product{}, new_product{};
  old_product.fill(1);
  new_product.fill(1);
  detail::for_each_index<From::rank>([&](auto i) {
    old_product[groups.old_group[i]] *= t.template extent<dim_at_t<From, i.value>>();
  });
  detail::for_each_index<To::rank>([&](auto j) {
    using d = dim_at_t<To, j.value>;
    if constexpr (contains_v<From, d>) {
      new_size[j] = t.template extent<d>();
    } else if constexpr (extents<E...>::template has<d>) {
      new_size[j] = sizes.template get<d>();
    } else {
      if (groups.new_count[groups.new_group[j]] != 1) {
        throw error("meshpp::reshape: no size given for the new dim '" + std::string(d::name()) +
                    "' (pass it in the extents)");
      }
      new_size[j] = old_product[groups.new_group[j]];
    }
    new_product[groups.new_group[j]] *= new_size[j];
  });
  for (int g = 0; g < groups.groups; ++g) {
    if (old_product[g] != new_product[g]) {
      std::string msg = "meshpp::reshape: " + to_string(From{}) + " -> " + to_string(To{}) +
                        ": a run of dims of total size ";
      detail::append(msg, old_product[g], " would become a run of total size ", new_product[g],
                     " (sizes ", to_string(t.sizes()), ")");
      throw error(msg);
    }
  }
  const auto new_extents = [&]<class... Dims>(shape<Dims...>*) {
    return extents<Dims...>{dim_extent<Dims>{new_size[index_of_v<To, Dims>]}...};
  }(static_cast<To*>(nullptr));

  // A split of a run survives the local reinterpretation only if its stripes are the same
  // elements before and after: the run's split old dim and its first new dim both divide by the
  // mesh dim. Otherwise keep only the kept dims' splits (a kept dim's stripes are the same
  // under any split, even or not). Sizes only: the same choice on every rank.
  using fallback = detail::reshape_layouts<From, To, typename Tensor::layout_type, axes, false>;
  if constexpr (!std::is_same_v<typename plan::after, typename fallback::after>) {
    if (!detail::split_problem<typename plan::before, From>(t.mesh(), t.global_shape()).empty() ||
        !detail::split_problem<typename plan::after, To>(t.mesh(), new_size).empty()) {
      return detail::reshape_through<fallback, To>(t, new_extents);
    }
  }
  return detail::reshape_through<plan, To>(t, new_extents);
}

// reshape<NewShape>(t): all sizes inferred (each run of new dims has one dim)
template <class NewShape, class Tensor>
requires is_tensor_v<Tensor> && is_shape_v<NewShape>
auto reshape(const Tensor& t) { return reshape<NewShape>(t, extents<>{}); }

// rename<Old, New>(t): dim Old called New (laid out by the mesh's rules for New)
template <class Old, class New, class Tensor>
requires is_tensor_v<Tensor>
auto rename(const Tensor& t) {
  using S = typename Tensor::shape_type;
  static_assert(contains_v<S, Old> || offending::renamed_dim_not_in_tensor<Old, S>,
                "meshpp::rename<Old, New>(t): t has no dim Old");
  return reshape<typename detail::renamed<S, Old, New>::type>(t);
}

}  // namespace meshpp

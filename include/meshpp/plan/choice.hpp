// meshpp/plan/choice.hpp — several layouts in one program, one of them chosen at run time: by
// name (a command-line flag), or by the layout search, in the same process.
//
//   using layouts = mp::mesh_choice<mp::named<"data", mesh_data>,
//                                   mp::named<"model", mesh_model>,
//                                   mp::named<"data+model", mesh_data_model>>;
//   layouts::run(layouts::fitted("data+model", world.size()),   // {"data+model", {2, 2}}
//                [&](const auto& mesh) { train(mesh); });
//
//   mp::layout_search search(machine);
//   layouts::add_to(search, ranks, [&](const auto& mesh) { one_step(mesh); });
//   layouts::run(layouts::agreed(search.best(), world), [&](const auto& mesh) { train(mesh); });
//
// Each candidate is a mesh type (its dims and layout rules) under a name, with an optional tag
// type for what else tells the candidates apart (the rules of a model's residual stream, say).
// The function is called as f(mesh) or, when it takes two arguments, f(mesh, option) with
// option an empty named<...> whose tag it can read. Every candidate's call is compiled, so every
// compile-time check holds for each; the name and the mesh shape pick one at run time. A name
// no candidate has, or a mesh shape of the wrong number of dims, is a meshpp::error naming it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/mesh.hpp"
#include "meshpp/plan/plan.hpp"
#include "meshpp/plan/search.hpp"

namespace meshpp {

/// @brief A name as a template argument: named<"data+model", Mesh>.
template <std::size_t N>
struct fixed_name {
  char text[N]{};
  constexpr fixed_name(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit
  constexpr std::string_view view() const { return {text, N - 1}; }
};

/// @brief A candidate layout of a mesh_choice: the mesh type Mesh under Name, and Tag, any type
/// the program's function may read (void: none).
template <fixed_name Name, class Mesh, class Tag = void>
struct named {
  static_assert(is_mesh_v<Mesh>, "meshpp::named<Name, Mesh, Tag>: Mesh must be a meshpp::mesh");
  static_assert(!Name.view().empty(), "meshpp::named<Name, Mesh, Tag>: the name is empty");
  using mesh_type = Mesh;
  using tag = Tag;
  static constexpr std::string_view name() { return Name.view(); }
};

/// @brief A layout chosen at run time: its candidate's name and its mesh shape.
struct mesh_pick {
  std::string name;
  std::vector<int> sizes;
};

namespace detail {
template <class T>
struct is_named : std::false_type {};
template <fixed_name Name, class Mesh, class Tag>
struct is_named<named<Name, Mesh, Tag>> : std::true_type {};

template <class... Options>
constexpr bool names_distinct() {
  constexpr std::array<std::string_view, sizeof...(Options)> names{Options::name()...};
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = i + 1; j < names.size(); ++j)
      if (names[i] == names[j]) return false;
  return true;
}

// call_option<Option>(f, mesh): f(mesh, Option{}) where f takes two arguments, else f(mesh)
template <class Option, class F, class Mesh>
decltype(auto) call_option(F& f, const Mesh& mesh) {
  if constexpr (std::is_invocable_v<F&, const Mesh&, Option>)
    return f(mesh, Option{});
  else
    return f(mesh);
}

// mesh_shapes(dims, ranks): every shape of `dims` sizes whose product is `ranks`, in
// lexicographic order ({1, 4}, {2, 2}, {4, 1} for 2 dims and 4 ranks)
inline std::vector<std::vector<int>> mesh_shapes(std::size_t dims, int ranks) {
  std::vector<std::vector<int>> out;
  if (dims == 0) {
    if (ranks == 1) out.emplace_back();
    return out;
  }
  for (int first = 1; first <= ranks; ++first) {
    if (ranks % first != 0) continue;
    for (auto rest : mesh_shapes(dims - 1, ranks / first)) {
      rest.insert(rest.begin(), first);
      out.push_back(std::move(rest));
    }
  }
  return out;
}
}  // namespace detail

/// @brief A compile-time list of candidate layouts (named<...>), one of which a program runs,
/// picked at run time.
template <class... Options>
class mesh_choice {
  static_assert(sizeof...(Options) > 0, "meshpp::mesh_choice: no candidate layout");
  static_assert((detail::is_named<Options>::value && ...),
                "meshpp::mesh_choice<Options...>: every candidate must be meshpp::named<Name, "
                "Mesh, Tag>");
  static_assert(detail::names_distinct<Options...>(),
                "meshpp::mesh_choice<Options...>: two candidates have the same name");

 public:
  /// names(): the candidates' names, in order
  static std::vector<std::string> names() { return {std::string(Options::name())...}; }

  /// knows(name): whether a candidate has this name
  static bool knows(std::string_view name) { return ((name == Options::name()) || ...); }

  /// visit(name, f): f(option) for the candidate called name, option an empty named<...>
  /// (read its mesh_type and tag); throws meshpp::error naming the candidates if none is
  template <class F>
  static decltype(auto) visit(std::string_view name, F&& f) {
    using first = std::tuple_element_t<0, std::tuple<Options...>>;
    using result = decltype(f(first{}));
    return visit_from<0, result>(name, f);
  }

  /// dims(name): the number of mesh dims of the candidate called name
  static std::size_t dims(std::string_view name) {
    return visit(name, [](auto option) { return decltype(option)::mesh_type::ndims; });
  }

  /// fitted(name, ranks): the candidate called name on the mesh shape that balanced_grid fits
  /// to `ranks` ranks ({ranks} for one mesh dim, {2, 3} for two and 6 ranks)
  static mesh_pick fitted(std::string_view name, int ranks) {
    return visit(name, [&](auto option) {
      const auto sizes = balanced_grid<decltype(option)::mesh_type::ndims>(ranks);
      return mesh_pick{std::string(name), std::vector<int>(sizes.begin(), sizes.end())};
    });
  }

  /// run(pick, f): f(mesh) (or f(mesh, option)) on a mesh of the picked candidate's type and
  /// shape; collective, as the mesh's constructor is. Returns what f returns.
  template <class F>
  static decltype(auto) run(const mesh_pick& pick, F&& f) {
    return visit(pick.name, [&](auto option) -> decltype(auto) {
      using Mesh = typename decltype(option)::mesh_type;
      const Mesh mesh(sizes_of<Mesh>(pick.name, pick.sizes));
      return detail::call_option<decltype(option)>(f, mesh);
    });
  }

  /// plan_of(pick, step): the plan of step(mesh) (or step(mesh, option)) on a planned mesh of
  /// the picked candidate's type and shape (make_plan: no communication, no arithmetic)
  template <class Step>
  static plan plan_of(const mesh_pick& pick, Step&& step, int as_rank = 0) {
    return visit(pick.name, [&](auto option) {
      using Mesh = typename decltype(option)::mesh_type;
      return make_plan<Mesh>(
          sizes_of<Mesh>(pick.name, pick.sizes),
          [&](const Mesh& m) { detail::call_option<decltype(option)>(step, m); }, as_rank);
    });
  }

  /// add_to(search, ranks, step): every candidate as a candidate of the search, each on every
  /// mesh shape of its dims whose product is `ranks` (data+model on 1 x 4, 2 x 2 and 4 x 1),
  /// planned with step(mesh) (or step(mesh, option)); the search's names are the candidates'
  template <class Step>
  static void add_to(layout_search& search, int ranks, Step&& step) {
    if (ranks < 1)
      throw error("meshpp::mesh_choice::add_to: the number of ranks must be at least 1, not " +
                  std::to_string(ranks));
    (add_one<Options>(search, ranks, step), ...);
  }

  /// agreed(candidate, comm, root): the search's candidate as a pick, root's on every member of
  /// comm (collective). A search that timed gemm shapes timed them on each rank, so candidates
  /// close in price may rank differently from rank to rank: root's choice is everyone's.
  static mesh_pick agreed(const layout_search::candidate& c, MPI_Comm comm, int root = 0) {
    mesh_pick pick{c.name, c.steps.mesh_sizes()};
    detail::broadcast_text(comm, pick.name, root, "mesh_choice::agreed");
    unsigned long long n = pick.sizes.size();
    detail::broadcast_values(comm, &n, 1, root, "mesh_choice::agreed");
    pick.sizes.resize(static_cast<std::size_t>(n));
    detail::broadcast_values(comm, pick.sizes.data(), pick.sizes.size(), root,
                             "mesh_choice::agreed");
    visit(pick.name, [](auto) {});  // a name this program knows (a search of other candidates)
    return pick;
  }

 private:
  template <std::size_t I, class Result, class F>
  static Result visit_from(std::string_view name, F& f) {
    if constexpr (I == sizeof...(Options)) {
      std::string known;
      for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
      throw error("meshpp::mesh_choice: no layout is named '" + std::string(name) + "' (" + known +
                  ")");
    } else {
      using option = std::tuple_element_t<I, std::tuple<Options...>>;
      if (name == option::name()) return f(option{});
      return visit_from<I + 1, Result>(name, f);
    }
  }

  // sizes_of<Mesh>(name, shape): shape as Mesh's sizes; an error naming the layout unless it
  // has Mesh's number of dims
  template <class Mesh>
  static typename Mesh::coordinates_type sizes_of(std::string_view name,
                                                  const std::vector<int>& shape) {
    typename Mesh::coordinates_type sizes{};
    if (shape.size() != sizes.size())
      throw error("meshpp::mesh_choice: layout '" + std::string(name) + "' has a mesh of " +
                  std::to_string(sizes.size()) + " dims, not " + std::to_string(shape.size()));
    std::copy(shape.begin(), shape.end(), sizes.begin());
    return sizes;
  }

  template <class Option, class Step>
  static void add_one(layout_search& search, int ranks, Step& step) {
    using Mesh = typename Option::mesh_type;
    for (const auto& shape : detail::mesh_shapes(Mesh::ndims, ranks)) {
      search.template add<Mesh>(std::string(Option::name()), sizes_of<Mesh>(Option::name(), shape),
                                [&](const Mesh& m) { detail::call_option<Option>(step, m); });
    }
  }
};

}  // namespace meshpp

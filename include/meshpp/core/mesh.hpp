// meshpp/core/mesh.hpp — mesh<axes<MeshDims...>, Rules>: MPI ranks arranged on named dims.
//
//   MESHPP_DIM(rows); MESHPP_DIM(cols);
//   using mesh_t = mesh<axes<rows, cols>, layout<split<batch, rows>>>;
//   mesh_t m({2, 2});                 // throws unless the communicator has 4 ranks
//                                     // (collective: the ranks agree on the shape first)
//   m.coordinate<cols>()              // this rank's place along cols: rank = r * 2 + c
//   m.communicator<rows>()            // the ranks that differ from this one only in rows
//   mesh_t fitted(balanced_grid<2>(world.size()));   // any rank count: 6 ranks -> {2, 3}
//
// A mesh is a cheap handle: copies share one state (the communicators), so tensors keep a
// copy of their mesh and never dangle.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/counters.hpp"
#include "meshpp/core/dim.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/layout.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/text.hpp"

namespace meshpp {

/// @brief The named dims of a mesh, in row-major order (the last varies fastest over ranks).
template <class... MeshDims>
struct axes {
  static_assert(offending::not_a_dim_name<detail::first_non_dim_t<MeshDims...>>,
                "meshpp::axes<MeshDims...>: every mesh dim must be declared with MESHPP_DIM");
  static_assert(offending::duplicate_dim<detail::first_duplicate_t<MeshDims...>>,
                "meshpp::axes<MeshDims...>: a mesh dim appears twice");
  using shape_type = shape<MeshDims...>;
  static constexpr std::size_t rank = sizeof...(MeshDims);
};

namespace detail {
// first_unknown_mesh_dim_t<Shape, Splits...>: the first rule whose mesh dim is not in Shape.
template <class S, class... Splits>
struct first_unknown_mesh_dim {
  using type = no_dim;
};
template <class S, class R, class... Rest>
struct first_unknown_mesh_dim<S, R, Rest...> {
  using type = std::conditional_t<contains_v<S, typename R::mesh_dim>,
                                  typename first_unknown_mesh_dim<S, Rest...>::type, R>;
};
// unknown_mesh_dim_in_t<Shape, Layout>: the first rule of Layout whose mesh dim Shape lacks.
template <class S, class L>
struct unknown_mesh_dim_in;
template <class S, class... Splits>
struct unknown_mesh_dim_in<S, layout<Splits...>> {
  using type = typename first_unknown_mesh_dim<S, Splits...>::type;
};
template <class S, class L>
using unknown_mesh_dim_in_t = typename unknown_mesh_dim_in<S, L>::type;
}  // namespace detail

namespace offending {
template <class Rule, class Axes>
inline constexpr bool rule_names_a_mesh_dim_the_mesh_lacks = std::is_same_v<Rule, detail::no_dim>;
template <class MeshDim, class Axes>
inline constexpr bool not_a_mesh_dim = false;
}  // namespace offending

namespace detail {
/// @brief What every mesh holds at run time, whatever its type: the sizes of its dims, this
/// rank's coordinates, their names, and one communicator per subset of its dims. Built once by
/// non-template code, so that a program of several meshes compiles it once.
struct mesh_state {
  static constexpr std::size_t max_dims = 8;
  boost::mpi::communicator world;
  std::size_t ndims = 0;
  std::array<int, max_dims> sizes{}, coordinates{};
  std::array<std::string_view, max_dims> names{};  // MESHPP_DIM names: static storage
  std::vector<boost::mpi::communicator> groups;    // indexed by mesh-dim bit set
  int rank = 0, size = 1;
  bool planned = false;

  // describe(sizes): "[rows:2, cols:4]" for a mesh of these dims and sizes
  std::string describe(std::span<const int> s) const {
    std::string out = "[";
    for (std::size_t i = 0; i < ndims; ++i) append(out, i ? ", " : "", names[i], ':', s[i]);
    return out + "]";
  }

  // check_positive(who, s): throws unless every size is at least 1 (the same on every rank)
  void check_positive(const char* who, std::span<const int> s) const {
    for (std::size_t i = 0; i < ndims; ++i) {
      if (s[i] < 1) {
        throw error(std::string(who) + ": mesh shape " + describe(s) + " has a mesh dim of size " +
                    std::to_string(s[i]) + "; every mesh dim needs at least 1 rank");
      }
    }
  }

  mesh_state(std::span<const std::string_view> dim_names, std::span<const int> s)
      : ndims(dim_names.size()) {
    std::copy(dim_names.begin(), dim_names.end(), names.begin());
    std::copy(s.begin(), s.end(), sizes.begin());
  }

  // a planned mesh's: sizes and one rank's coordinates only (world is unused: a default
  // communicator handle, which is MPI_COMM_WORLD attached, and needs no MPI call)
  mesh_state(std::span<const std::string_view> dim_names, std::span<const int> s, int as_rank)
      : mesh_state(dim_names, s) {
    planned = true;
    check_positive("meshpp::mesh::planned", s);
    const long long product = std::accumulate(s.begin(), s.end(), 1LL, std::multiplies<>());
    if (as_rank < 0 || as_rank >= product) {
      throw error("meshpp::mesh::planned: rank " + std::to_string(as_rank) +
                  " is not a rank of mesh " + describe(s) + " (0 to " +
                  std::to_string(product - 1) + ")");
    }
    rank = as_rank;
    size = static_cast<int>(product);
    place(rank);
  }

  mesh_state(std::span<const std::string_view> dim_names, std::span<const int> s,
             const boost::mpi::communicator& comm)
      : mesh_state(dim_names, s) {
    world = comm;
    rank = world.rank();
    size = world.size();
    const long long product = std::accumulate(s.begin(), s.end(), 1LL, std::multiplies<>());
    const std::string shape_text = describe(s);
    // The shape must be the same on every rank: agreed first (one allreduce of 2 ndims ints),
    // so that a shape wrong on one rank only fails on all of them, not there alone while the
    // others wait in the communicator splits below.
    std::array<int, 2 * max_dims> most{};
    for (std::size_t i = 0; i < ndims; ++i) {
      most[2 * i] = s[i];
      most[2 * i + 1] = -s[i];  // the largest -s[i] is minus the smallest s[i]
    }
    allreduce_values(MPI_Comm(world), most.data(), 2 * ndims, MPI_MAX,
                     "mesh (agreeing on its shape)");
    for (std::size_t i = 0; i < ndims; ++i) {
      if (most[2 * i] != -most[2 * i + 1]) {
        throw error("meshpp::mesh: the ranks disagree on the mesh shape: mesh dim '" +
                    std::string(names[i]) + "' has size " + std::to_string(-most[2 * i + 1]) +
                    " on some ranks and " + std::to_string(most[2 * i]) +
                    " on others (this rank: " + shape_text + ")");
      }
    }
    check_positive("meshpp::mesh", s);
    if (product != world.size()) {
      throw error("meshpp::mesh: mesh shape " + shape_text + " needs " + std::to_string(product) +
                  " ranks, but the communicator has " + std::to_string(world.size()));
    }
    place(world.rank());
    // One split per subset of mesh dims, in the same order on every rank. Ranks agree on
    // every coordinate outside the subset (the color) and are ordered row-major by their
    // coordinates inside it (the key).
    const std::span<const int> sz(sizes.data(), ndims), co(coordinates.data(), ndims);
    groups.reserve(std::size_t{1} << ndims);
    for (unsigned mask = 0; mask < (1u << ndims); ++mask) {
      const int color = linear_index(co, sz, ~mask);
      const int key = linear_index(co, sz, mask);
      // The mesh's own communicators return MPI errors to meshpp's checks
      // (core/checked.hpp) rather than end the job, whatever the world's handler is
      MPI_Comm group = MPI_COMM_NULL;
      checked(MPI_Comm_split(MPI_Comm(world), color, key, &group), "MPI_Comm_split");
      checked(MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
      groups.emplace_back(group, boost::mpi::comm_take_ownership);
    }
  }

 private:
  // place(r): the coordinates of rank r (row-major: core/row_major.hpp)
  void place(int r) { set_coordinates(r, std::span<const int>(sizes.data(), ndims), coordinates); }
};
}  // namespace detail

/// @brief The run-time part of every mesh<Axes, Rules>: its sizes, this rank's coordinates,
/// the communicators of its groups and its counters, with mesh dims named by position (bit i
/// of a mask is axis i). meshpp's kernels take a mesh_base, so that they are compiled once per
/// element type, not once per mesh type (docs/building.md, Compile time). A mesh converts to it.
class mesh_base {
 public:
  // planning(): this is a planned mesh; operations record and do not run
  bool planning() const { return state_->planned; }
  int rank() const { return state_->rank; }
  int size() const { return state_->size; }
  // ndims(): the number of mesh dims
  std::size_t ndims() const { return state_->ndims; }
  // sizes(): the size of each mesh dim; coordinates(): this rank's place along each
  std::span<const int> sizes() const { return {state_->sizes.data(), state_->ndims}; }
  std::span<const int> coordinates() const { return {state_->coordinates.data(), state_->ndims}; }
  // names(): the mesh dims' printable names
  std::span<const std::string_view> names() const { return {state_->names.data(), state_->ndims}; }

  /// The communicator of all ranks of the mesh (none on a planned mesh: an error).
  const boost::mpi::communicator& world() const {
    if (state_->planned) no_communicators();
    return state_->world;
  }
  /// communicator(mask): the ranks that differ from this one only in the mesh dims of the bit
  /// set mask, ranked in row-major order of their coordinates along them.
  const boost::mpi::communicator& communicator(unsigned mask) const {
    if (state_->planned) no_communicators();
    return state_->groups.at(mask);
  }
  // group_size(mask): the number of ranks in this rank's group over the mesh dims in the bit
  // set mask (what communicator(mask).size() is, known on a planned mesh too)
  int group_size(unsigned mask) const { return detail::group_size(sizes(), mask); }
  // group_rank(mask): this rank's place in that group (communicator(mask).rank())
  int group_rank(unsigned mask) const { return detail::linear_index(coordinates(), sizes(), mask); }
  /// leads(mask): this rank is the first of its group over the mesh dims in mask (coordinate 0
  /// along each): where a value that every member holds whole joins a sum of partial values
  bool leads(unsigned mask) const {
    for (std::size_t i = 0; i < state_->ndims; ++i) {
      if ((mask & (1u << i)) && state_->coordinates[i] != 0) return false;
    }
    return true;
  }
  /// "[rows:2, cols:4]"
  std::string describe() const { return state_->describe(sizes()); }

  /// What this mesh communicated and computed (shared by copies of the mesh).
  meshpp::counters& counters() const { return *counters_; }

  friend bool operator==(const mesh_base& a, const mesh_base& b) { return a.state_ == b.state_; }

  mesh_base(const mesh_base&) = default;
  mesh_base(mesh_base&&) = default;

 protected:
  // assigned only as part of a mesh of one type: a mesh_base assigned from a mesh of another
  // type would hold another type's state
  mesh_base& operator=(const mesh_base&) = default;
  mesh_base& operator=(mesh_base&&) = default;

  mesh_base(std::shared_ptr<const detail::mesh_state> s, bool planned)
      : state_(std::move(s)),
        counters_(std::make_shared<meshpp::counters>(
            std::vector<std::string>(names().begin(), names().end()),
            std::vector<int>(sizes().begin(), sizes().end()))) {
    if (planned) counters_->by_operation(true);  // a plan is read by operation
  }

  [[noreturn]] static void no_communicators() {
    throw error(
        "meshpp::mesh: a planned mesh (mesh::planned) has no communicators: this operation "
        "cannot be planned (it communicates outside meshpp's counted collectives)");
  }

  std::shared_ptr<const detail::mesh_state> state_;
  std::shared_ptr<meshpp::counters> counters_;
};

/// @brief A mesh of MPI ranks with named dims and the program's layout rules.
/// @tparam Axes axes<MeshDims...>
/// @tparam Rules layout<split<TensorDim, MeshDim>...>: every MeshDim must be in Axes.
template <class Axes, class Rules = layout<>>
class mesh;

template <class... MeshDims, class... Splits>
class mesh<axes<MeshDims...>, layout<Splits...>> : public mesh_base {
  using axes_shape = shape<MeshDims...>;
  static_assert(sizeof(axes<MeshDims...>) > 0);  // instantiates the axes checks
  static_assert(
      offending::rule_names_a_mesh_dim_the_mesh_lacks<
          detail::unknown_mesh_dim_in_t<axes_shape, layout<Splits...>>, axes<MeshDims...>>,
      "meshpp::mesh<Axes, Rules>: a layout rule names a mesh dim that the mesh does "
      "not have");
  static_assert(sizeof...(MeshDims) <= detail::mesh_state::max_dims,
                "meshpp::mesh<Axes, Rules>: at most 8 mesh dims (one communicator is made for "
                "every subset of them)");

 public:
  using axes_type = axes<MeshDims...>;
  using rules = layout<Splits...>;
  static constexpr std::size_t ndims = sizeof...(MeshDims);
  using coordinates_type = std::array<int, ndims>;

  // layout_for<Shape>: the program's rules restricted to Shape
  template <class Shape>
  using layout_for = layout_for_t<rules, Shape>;

  // axis_v<M>: the position of mesh dim M in the axes
  template <class M>
  static constexpr std::size_t axis_v = [] {
    static_assert(contains_v<axes_shape, M> || offending::not_a_mesh_dim<M, axes_type>,
                  "meshpp::mesh: this mesh has no such mesh dim");
    if constexpr (contains_v<axes_shape, M>)
      return index_of_v<axes_shape, M>;
    else
      return std::size_t{0};  // unreachable: the static_assert above has already failed
  }();

  // mask_v<Ms...>: the bit set naming mesh dims Ms (bit i is axis i)
  template <class... Ms>
  static constexpr unsigned mask_v = (0u | ... | (1u << axis_v<Ms>));

  /// Arranges the ranks of `comm` (world by default) on a mesh of the given sizes.
  /// Collective over `comm`. Throws meshpp::error, on every rank, unless the sizes are
  /// the same on every rank, positive, and multiply out to the number of ranks.
  explicit mesh(const coordinates_type& sizes,
                const boost::mpi::communicator& comm = boost::mpi::communicator())
      : mesh_base(std::make_shared<state>(sizes, comm), false) {}

  // mesh_t m(extents{rows{} = 2, cols{} = 4})
  explicit mesh(const extents<MeshDims...>& sizes,
                const boost::mpi::communicator& comm = boost::mpi::communicator())
      : mesh(to_int_sizes(sizes), comm) {}

  /// A planned mesh: the sizes and one rank's place on them, without communicators. The
  /// operations of a program run on it record what they would communicate and compute in the
  /// counters, and run no MPI call and no arithmetic (plan/plan.hpp makes plans with it).
  /// No communication: any process can plan for any mesh, one rank at a time. Throws
  /// meshpp::error unless every size is at least 1 and `as_rank` is a rank of the mesh.
  static mesh planned(const coordinates_type& sizes, int as_rank = 0) {
    return mesh(planned_tag{}, std::make_shared<state>(sizes, as_rank));
  }
  static mesh planned(const extents<MeshDims...>& sizes, int as_rank = 0) {
    return planned(to_int_sizes(sizes), as_rank);
  }

  const coordinates_type& sizes() const { return typed().typed_sizes; }
  const coordinates_type& coordinates() const { return typed().typed_coordinates; }

  // size<M>(): the number of ranks along mesh dim M
  template <class M>
  int size() const {
    return typed().typed_sizes[axis_v<M>];
  }
  using mesh_base::size;
  // coordinate<M>(): this rank's coordinate along mesh dim M
  template <class M>
  int coordinate() const {
    return typed().typed_coordinates[axis_v<M>];
  }

  // coordinates_of(r): the mesh coordinates of rank r of the mesh's communicator (row-major:
  // core/row_major.hpp)
  coordinates_type coordinates_of(int r) const { return detail::coordinates_at(r, sizes()); }

  /// communicator<Ms...>(): the ranks that differ from this one only in mesh dims Ms,
  /// ranked in row-major order of their coordinates along Ms, so data gathered over it comes
  /// back in mesh-coordinate order. communicator<>() holds this rank alone.
  template <class... Ms>
  const boost::mpi::communicator& communicator() const {
    return mesh_base::communicator(mask_v<Ms...>);
  }
  using mesh_base::communicator;

  // names(): the mesh dims' printable names
  static constexpr std::array<std::string_view, ndims> names() { return {MeshDims::name()...}; }

  /// "[rows:2, cols:4]"
  using mesh_base::describe;
  // describe(sizes): the same for a mesh of these sizes
  static std::string describe(const coordinates_type& sizes) {
    std::string out = "[";
    for (std::size_t i = 0; i < ndims; ++i) {
      detail::append(out, i ? ", " : "", names()[i], ':', sizes[i]);
    }
    return out + "]";
  }

 private:
  // state: the run-time state, and its sizes and coordinates as arrays of this mesh's rank
  struct state : detail::mesh_state {
    coordinates_type typed_sizes{}, typed_coordinates{};
    template <class... Args>
    explicit state(const coordinates_type& s, Args&&... args)
        : detail::mesh_state(mesh::names(), s, std::forward<Args>(args)...) {
      std::copy_n(detail::mesh_state::sizes.begin(), mesh::ndims, typed_sizes.begin());
      std::copy_n(detail::mesh_state::coordinates.begin(), mesh::ndims, typed_coordinates.begin());
    }
  };
  const state& typed() const { return static_cast<const state&>(*state_); }

  struct planned_tag {};
  mesh(planned_tag, std::shared_ptr<const state> s) : mesh_base(std::move(s), true) {}

  static coordinates_type to_int_sizes(const extents<MeshDims...>& e) {
    return {static_cast<int>(e.template get<MeshDims>())...};
  }
};

// balanced_grid<N>(ranks): N sizes whose product is `ranks`, as equal as possible (the
// smallest difference between the largest and the smallest), in ascending order: the shape
// that fits a mesh of N dims to any number of ranks. balanced_grid<2>(8) == {2, 4},
// balanced_grid<3>(12) == {2, 2, 3}, balanced_grid<2>(7) == {1, 7}. Throws meshpp::error
// unless ranks >= 1.
template <std::size_t N>
std::array<int, N> balanced_grid(int ranks) {
  static_assert(N >= 1, "meshpp::balanced_grid<N>: a mesh has at least one dim");
  if (ranks < 1)
    throw error("meshpp::balanced_grid: the number of ranks must be at least 1, not " +
                std::to_string(ranks));
  std::array<int, N> best{}, now{};
  best.fill(1);
  best[N - 1] = ranks;
  // now[0..k) chosen, ascending; `left` is what now[k..N) must multiply to
  auto search = [&](auto& self, std::size_t k, int least, int left) -> void {
    if (k == N - 1) {
      if (left < least) return;
      now[k] = left;
      if (now[N - 1] - now[0] < best[N - 1] - best[0]) best = now;
      return;
    }
    for (int f = least; f <= left; ++f) {
      if (left % f) continue;
      int rest = left / f, power = 1;  // f^(N - k - 1) must not exceed what is left
      bool fits = true;
      for (std::size_t j = k + 1; j < N && fits; ++j) fits = (power *= f) <= rest;
      if (!fits) break;
      now[k] = f;
      self(self, k + 1, f, rest);
    }
  };
  search(search, 0, 1, ranks);
  return best;
}

// is_mesh_v<M>
template <class M>
inline constexpr bool is_mesh_v = false;
template <class A, class R>
inline constexpr bool is_mesh_v<mesh<A, R>> = true;

}  // namespace meshpp

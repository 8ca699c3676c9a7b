// meshpp/core/create.hpp — making tensors: zeros, ones, full, generate, iota, random_*.
//
// Every value is a function of the element's *global* index, never of the rank or the
// slice, so a program makes the same tensor (bit for bit) under every layout and rank count.
//
// The makers are collective: before any rank makes its slice, the ranks agree on the sizes of
// the tensor's dims and on the other arguments that are numbers (value, seed, range), with one
// allreduce of a few numbers over the mesh's ranks. A size or seed that differs between ranks
// (computed from the rank, read from a per-node file) then throws meshpp::error on every rank,
// naming it, rather than making a tensor no single program describes: replicas that differ,
// or slices whose sizes make a later collective disagree on its counts and hang. The function
// given to generate cannot be compared; nor are sizes passed straight to a tensor's
// constructor, which every operation uses for its results (a check there would cost an
// allreduce per operation): sizes that differ between ranks there are undefined behaviour.
//
//   auto w = random_normal<float, io, hidden>(mesh, sizes, /*seed*/ 2);   // mesh's rules
//   auto z = zeros<my_tensor_type>(mesh, sizes);                          // explicit type
//   auto r = generate<double, i, j>(mesh, sizes, [](auto& g) { return g[0] * 10.0 + g[1]; });
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/config.hpp"
#include "meshpp/core/error.hpp"
#include "meshpp/core/extents.hpp"
#include "meshpp/core/random.hpp"
#include "meshpp/core/row_major.hpp"
#include "meshpp/core/shape.hpp"
#include "meshpp/core/tensor.hpp"
#include "meshpp/core/traverse.hpp"

namespace meshpp {

namespace detail {
// maker_argument{name, bits, kind}: an argument of a maker that every rank must pass alike:
// its bits, and how to print them
struct maker_argument {
  enum class kind { unsigned_integer, signed_integer, floating_point };
  std::string_view name;
  std::uint64_t bits;
  kind as = kind::unsigned_integer;
};
// argument_bits(name, value): a value's bits (a value of more than 64 bits is not compared)
template <class T>
maker_argument argument_bits(std::string_view name, const T& value) {
  using kind = maker_argument::kind;
  if constexpr (std::is_floating_point_v<T>) {
    return {name, std::bit_cast<std::uint64_t>(static_cast<double>(value)), kind::floating_point};
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return {name, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)),
            kind::signed_integer};
  } else if constexpr (std::is_integral_v<T>) {
    return {name, static_cast<std::uint64_t>(value), kind::unsigned_integer};
  } else {
    return {name, 0, kind::unsigned_integer};
  }
}

inline std::string maker_argument_text(const maker_argument& a, std::uint64_t bits) {
  switch (a.as) {
    case maker_argument::kind::signed_integer:
      return std::to_string(static_cast<std::int64_t>(bits));
    case maker_argument::kind::floating_point: {
      std::ostringstream out;
      out << std::bit_cast<double>(bits);
      return out.str();
    }
    default:
      return std::to_string(bits);
  }
}

// agree_on_arguments(world, who, all, dims, sizes_text, sizes): the collective behind
// agree_on_making, out of its template: max(v) and max(~v) (= ~min(v)) of each number in one
// allreduce over world; throws naming the first that differs. all's first `dims` entries are
// sizes of dims; sizes_text(sizes) prints this rank's sizes for the message.
inline void agree_on_arguments(MPI_Comm world, const char* who,
                               const std::vector<maker_argument>& all, std::size_t dims,
                               std::string (*sizes_text)(const void*), const void* sizes) {
  std::vector<std::uint64_t> most;
  most.reserve(2 * all.size());
  for (const maker_argument& a : all) {
    most.push_back(a.bits);
    most.push_back(~a.bits);
  }
  detail::allreduce_values(world, most.data(), most.size(), MPI_MAX, who);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (most[2 * i] == ~most[2 * i + 1]) continue;
    const bool is_dim = i < dims;
    throw error(std::string("meshpp::") + who + ": the ranks disagree on " +
                (is_dim ? "the size of dim '" : "the ") + std::string(all[i].name) +
                (is_dim ? "'" : "") + " (from " + maker_argument_text(all[i], ~most[2 * i + 1]) +
                " to " + maker_argument_text(all[i], most[2 * i]) +
                "; this rank: " + sizes_text(sizes) + "): every rank must make the same tensor");
  }
}

// agree_on_making<Tensor>(m, who, sizes, arguments): collective over the mesh's ranks; throws
// meshpp::error on every rank if they passed the maker `who` different sizes for Tensor's
// dims or different arguments (agree_on_arguments)
template <class Tensor, class... E>
void agree_on_making(const typename Tensor::mesh_type& m, const char* who,
                     const extents<E...>& sizes, std::initializer_list<maker_argument> arguments) {
  std::vector<maker_argument> all;
  auto add_size = [&]<class D>(D*) {
    // a dim the extents lack is the tensor constructor's compile error, not a second one here
    if constexpr (extents<E...>::template has<D>)
      all.push_back({D::name(), sizes.template get<D>()});
  };
  [&]<class... Dims>(shape<Dims...>*) {
    (add_size(static_cast<Dims*>(nullptr)), ...);
  }(static_cast<typename Tensor::shape_type*>(nullptr));
  const std::size_t dims = all.size();
  all.insert(all.end(), arguments.begin(), arguments.end());
  if (m.planning()) return;  // one rank, no one to disagree with
  agree_on_arguments(
      MPI_Comm(m.world()), who, all, dims,
      [](const void* s) { return to_string(*static_cast<const extents<E...>*>(s)); }, &sizes);
}

// for_each_element(t, f): f(element&, global index, global row-major linear index) for
// every element of this rank's slice, in local row-major order.
template <class Tensor, class F>
void for_each_element(Tensor& t, F&& f) {
  constexpr std::size_t n = Tensor::rank;
  const auto& offsets = t.local_offsets();
  // the global linear index, stepped along the local slice by the global strides
  strided_cursor<std::uint64_t, n> linear{linear_index(offsets, t.global_shape()),
                                          row_major_strides<n>(t.global_shape())};
  auto* element = t.local().data();
  typename Tensor::index_type global{};
  for_each_position(t.local_shape(), linear, [&](const auto& position) {
    for (std::size_t i = 0; i < n; ++i) global[i] = offsets[i] + position[i];
    f(*element++, std::as_const(global), linear.ptr);
  });
}
}  // namespace detail

namespace detail {
// full_agreed<Tensor>(mesh, sizes, value), iota_agreed<Tensor>(mesh, sizes): full and iota
// without the agreement, so without communication, for sizes that every rank is known to
// share (those of an existing tensor): what meshpp's own hot paths use (the seed of backward,
// the causal mask of softmax over a split dim)
template <class Tensor, class... E>
Tensor full_agreed(const typename Tensor::mesh_type& m, const extents<E...>& sizes,
                   typename Tensor::value_type value) {
  Tensor t(m, sizes, Tensor::uninitialized);
  t.local().fill(value);
  return t;
}
template <class Tensor, class... E>
Tensor iota_agreed(const typename Tensor::mesh_type& m, const extents<E...>& sizes) {
  static_assert(Tensor::rank == 1, "meshpp::iota<Tensor>(mesh, sizes): Tensor must have one dim");
  Tensor t(m, sizes, Tensor::uninitialized);
  for_each_element(t, [](auto& x, const auto& global, std::uint64_t) {
    x = static_cast<typename Tensor::value_type>(global[0]);
  });
  return t;
}
}  // namespace detail

// zeros<Tensor>(mesh, sizes)
template <class Tensor, class... E>
requires is_tensor_v<Tensor> Tensor zeros(const typename Tensor::mesh_type& m,
                                          const extents<E...>& sizes) {
  detail::agree_on_making<Tensor>(m, "zeros", sizes, {});
  return Tensor(m, sizes);
}
// zeros<T, Dims...>(mesh, sizes): laid out by the mesh's rules
template <class T, class... Dims, class Mesh, class... E>
requires(!is_tensor_v<T>) auto zeros(const Mesh& m, const extents<E...>& sizes) {
  return zeros<tensor_of<T, shape<Dims...>, Mesh>>(m, sizes);
}

// full<Tensor>(mesh, sizes, value)
template <class Tensor, class... E>
requires is_tensor_v<Tensor> Tensor full(const typename Tensor::mesh_type& m,
                                         const extents<E...>& sizes,
                                         typename Tensor::value_type value) {
  detail::agree_on_making<Tensor>(m, "full", sizes, {detail::argument_bits("value", value)});
  return detail::full_agreed<Tensor>(m, sizes, value);
}
// full<T, Dims...>(mesh, sizes, value)
template <class T, class... Dims, class Mesh, class... E>
requires(!is_tensor_v<T>) auto full(const Mesh& m, const extents<E...>& sizes, T value) {
  return full<tensor_of<T, shape<Dims...>, Mesh>>(m, sizes, value);
}

// ones<Tensor>(mesh, sizes), ones<T, Dims...>(mesh, sizes)
template <class Tensor, class... E>
requires is_tensor_v<Tensor> Tensor ones(const typename Tensor::mesh_type& m,
                                         const extents<E...>& sizes) {
  return full<Tensor>(m, sizes, typename Tensor::value_type(1));
}
template <class T, class... Dims, class Mesh, class... E>
requires(!is_tensor_v<T>) auto ones(const Mesh& m, const extents<E...>& sizes) {
  return full<T, Dims...>(m, sizes, T(1));
}

// generate<Tensor>(mesh, sizes, f): element = f(global index), the index an
// std::array<std::size_t, rank> in the tensor's dim order.
template <class Tensor, class F, class... E>
requires is_tensor_v<Tensor> Tensor generate(const typename Tensor::mesh_type& m,
                                             const extents<E...>& sizes, F&& f) {
  detail::agree_on_making<Tensor>(m, "generate", sizes, {});
  Tensor t(m, sizes, Tensor::uninitialized);
  detail::for_each_element(t, [&](auto& x, const auto& global, std::uint64_t) {
    x = static_cast<typename Tensor::value_type>(f(global));
  });
  return t;
}
// generate<T, Dims...>(mesh, sizes, f)
template <class T, class... Dims, class Mesh, class F, class... E>
requires(!is_tensor_v<T>) auto generate(const Mesh& m, const extents<E...>& sizes, F&& f) {
  return generate<tensor_of<T, shape<Dims...>, Mesh>>(m, sizes, std::forward<F>(f));
}

// iota<Tensor>(mesh, sizes): a tensor of one dim D holding each element's global index along
// D (0, 1, ..., size - 1), correct on every shard: a rank holding the stripe [8, 16) of D
// holds 8 ... 15. Compared with another iota it makes masks by name:
//   iota<memory_length>(mesh, sizes) <= iota<length>(mesh, sizes)   // causal, [memory_length,
//   length]
template <class Tensor, class... E>
requires is_tensor_v<Tensor> Tensor iota(const typename Tensor::mesh_type& m,
                                         const extents<E...>& sizes) {
  static_assert(Tensor::rank == 1, "meshpp::iota<Tensor>(mesh, sizes): Tensor must have one dim");
  return generate<Tensor>(m, sizes, [](const auto& global) { return global[0]; });
}
// iota<D, T = std::int32_t>(mesh, sizes): laid out by the mesh's rules
template <class D, class T = std::int32_t, class Mesh, class... E>
requires(!is_tensor_v<D>) auto iota(const Mesh& m, const extents<E...>& sizes) {
  return iota<tensor_of<T, shape<D>, Mesh>>(m, sizes);
}

namespace detail {
// fill_random(data, global, offsets, extent, seed, normal, a, b): each element of a row-major
// slice of these extents at these offsets of a tensor of these global sizes set to a + b u,
// u = uniform_at (normal: a + b n, n = normal_at) of (seed, its global linear index): the one
// loop of every random maker, compiled once per element type
template <class T>
MESHPP_KERNEL void fill_random(T* data, std::span<const std::size_t> global,
                               std::span<const std::size_t> offsets,
                               std::span<const std::size_t> extent, std::uint64_t seed, bool normal,
                               T a, T b) {
  const std::size_t n = global.size();
  std::size_t count = 1;
  for (std::size_t e : extent) count *= e;
  if (count == 0) return;
  std::vector<std::size_t> position(n, 0);
  std::vector<std::uint64_t> stride(n, 1);  // the global row-major strides
  for (std::size_t i = n; i-- > 1;) stride[i - 1] = stride[i] * global[i];
  const std::size_t row = n == 0 ? 1 : extent[n - 1];
  for (std::size_t done = 0; done < count; done += row) {
    std::uint64_t linear = 0;
    for (std::size_t i = 0; i < n; ++i) linear += (offsets[i] + position[i]) * stride[i];
    for (std::size_t j = 0; j < row; ++j) {
      *data++ = normal ? static_cast<T>(a + b * normal_at<T>(seed, linear + j))
                       : static_cast<T>(a + b * uniform_at<T>(seed, linear + j));
    }
    for (std::size_t i = n > 0 ? n - 1 : 0; i-- > 0;) {  // the next row (none at rank 0)
      if (++position[i] < extent[i]) break;
      position[i] = 0;
    }
  }
}
#ifdef MESHPP_KERNEL_INSTANCE
MESHPP_KERNEL_INSTANCE void fill_random<float>(float*, std::span<const std::size_t>,
                                               std::span<const std::size_t>,
                                               std::span<const std::size_t>, std::uint64_t, bool,
                                               float, float);
MESHPP_KERNEL_INSTANCE void fill_random<double>(double*, std::span<const std::size_t>,
                                                std::span<const std::size_t>,
                                                std::span<const std::size_t>, std::uint64_t, bool,
                                                double, double);
#endif

// random_tensor<Tensor>(mesh, sizes, what, seed, a, b, normal): the tensor fill_random makes,
// after the ranks agreed on the seed and the two arguments a and b (name and value each)
template <class Tensor, class... E, class T>
Tensor random_tensor(const typename Tensor::mesh_type& m, const extents<E...>& sizes,
                     const char* what, std::uint64_t seed, std::pair<const char*, T> a,
                     std::pair<const char*, T> b, bool normal) {
  agree_on_making<Tensor>(
      m, what, sizes,
      {{"seed", seed}, argument_bits(a.first, a.second), argument_bits(b.first, b.second)});
  Tensor t(m, sizes, Tensor::uninitialized);
  if (!m.planning()) {
    const auto extent = t.local_shape();
    fill_random<T>(t.local().data(), t.global_shape(), t.local_offsets(), extent, seed, normal,
                   a.second, normal ? b.second : T(b.second - a.second));
  }
  return t;
}
}  // namespace detail

// random_uniform<Tensor>(mesh, sizes, seed, low = 0, high = 1): uniform in [low, high),
// keyed by (seed, global index).
template <class Tensor, class... E>
requires is_tensor_v<Tensor> Tensor random_uniform(const typename Tensor::mesh_type& m,
                                                   const extents<E...>& sizes, std::uint64_t seed,
                                                   typename Tensor::value_type low = 0,
                                                   typename Tensor::value_type high = 1) {
  return detail::random_tensor<Tensor>(m, sizes, "random_uniform", seed, std::pair{"low", low},
                                       std::pair{"high", high}, false);
}
// random_uniform<T, Dims...>(mesh, sizes, seed, low = 0, high = 1)
template <class T, class... Dims, class Mesh, class... E>
requires(!is_tensor_v<T>) auto random_uniform(const Mesh& m, const extents<E...>& sizes,
                                              std::uint64_t seed, T low = 0, T high = 1) {
  return random_uniform<tensor_of<T, shape<Dims...>, Mesh>>(m, sizes, seed, low, high);
}

// random_normal<Tensor>(mesh, sizes, seed, mean = 0, stddev = 1), keyed by
// (seed, global index).
template <class Tensor, class... E>
requires is_tensor_v<Tensor> Tensor random_normal(const typename Tensor::mesh_type& m,
                                                  const extents<E...>& sizes, std::uint64_t seed,
                                                  typename Tensor::value_type mean = 0,
                                                  typename Tensor::value_type stddev = 1) {
  return detail::random_tensor<Tensor>(m, sizes, "random_normal", seed, std::pair{"mean", mean},
                                       std::pair{"stddev", stddev}, true);
}
// random_normal<T, Dims...>(mesh, sizes, seed, mean = 0, stddev = 1)
template <class T, class... Dims, class Mesh, class... E>
requires(!is_tensor_v<T>) auto random_normal(const Mesh& m, const extents<E...>& sizes,
                                             std::uint64_t seed, T mean = 0, T stddev = 1) {
  return random_normal<tensor_of<T, shape<Dims...>, Mesh>>(m, sizes, seed, mean, stddev);
}

}  // namespace meshpp

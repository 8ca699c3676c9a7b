// shape<Dims...> algebra, extents, and dim names.
#include <meshpp/core/extents.hpp>
#include <meshpp/core/shape.hpp>

#include "testing.hpp"

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(heads);

using bih = mp::shape<batch, io, hidden>;

// What must not compile, tested in the language (compile_fail/ has the diagnostics).
template <class... D>
concept shape_instantiates = requires {
  sizeof(mp::shape<D...>);
};
static_assert(shape_instantiates<batch, io>);
template <class From, class To>
concept permutable = requires {
  mp::permutation_v<From, To>;
};

TEST_CASE("dim names print as themselves") {
  CHECK(mp::dim_name_v<batch> == "batch");
  CHECK(mp::dim_names_v<bih> == std::array<std::string_view, 3>{"batch", "io", "hidden"});
  CHECK(mp::to_string(bih{}) == "[batch, io, hidden]");
  CHECK(mp::to_string(mp::shape<>{}) == "[]");
  static_assert(mp::is_dim_v<batch>);
  static_assert(!mp::is_dim_v<int>);
}

TEST_CASE("contains and index_of") {
  static_assert(mp::contains_v<bih, io>);
  static_assert(!mp::contains_v<bih, heads>);
  static_assert(mp::index_of_v<bih, batch> == 0);
  static_assert(mp::index_of_v<bih, hidden> == 2);
  static_assert(mp::rank_v<bih> == 3 && mp::rank_v<mp::shape<>> == 0);
  CHECK(mp::index_of_v<bih, io> == 1);
}

TEST_CASE("union keeps the first operand's order, then new dims in the second's order") {
  using u = mp::shape_union_t<mp::shape<hidden, batch>, mp::shape<heads, batch, io>>;
  static_assert(std::is_same_v<u, mp::shape<hidden, batch, heads, io>>);
  static_assert(std::is_same_v<mp::shape_union_t<bih, mp::shape<>>, bih>);
  static_assert(std::is_same_v<mp::shape_union_t<mp::shape<>, bih>, bih>);
  CHECK(mp::rank_v<u> == 4);
}

TEST_CASE("difference and intersection keep the first operand's order") {
  static_assert(
      std::is_same_v<mp::shape_difference_t<bih, mp::shape<io, heads>>, mp::shape<batch, hidden>>);
  static_assert(std::is_same_v<mp::shape_difference_t<bih, bih>, mp::shape<>>);
  static_assert(std::is_same_v<mp::shape_intersection_t<bih, mp::shape<hidden, heads, batch>>,
                               mp::shape<batch, hidden>>);
  static_assert(std::is_same_v<mp::shape_intersection_t<bih, mp::shape<heads>>, mp::shape<>>);
  CHECK(mp::rank_v<mp::shape_difference_t<bih, mp::shape<io>>> == 2);
}

TEST_CASE("same-set comparison ignores order") {
  static_assert(mp::same_dims_v<bih, mp::shape<hidden, batch, io>>);
  static_assert(!mp::same_dims_v<bih, mp::shape<hidden, batch>>);
  static_assert(!mp::same_dims_v<bih, mp::shape<hidden, batch, heads>>);
  static_assert(mp::contains_all_v<bih, mp::shape<hidden, batch>>);
  CHECK(mp::same_dims_v<mp::shape<>, mp::shape<>>);
}

TEST_CASE("permutation maps one order onto another") {
  constexpr auto p = mp::permutation_v<bih, mp::shape<hidden, batch, io>>;
  CHECK(p == std::array<std::size_t, 3>{2, 0, 1});
  constexpr auto id = mp::permutation_v<bih, bih>;
  CHECK(id == std::array<std::size_t, 3>{0, 1, 2});
  // Applying p then its inverse gives back the identity.
  constexpr auto back = mp::permutation_v<mp::shape<hidden, batch, io>, bih>;
  for (std::size_t i = 0; i < 3; ++i) CHECK(p[back[i]] == i);
  static_assert(!permutable<bih, mp::shape<batch, io>>);
}

TEST_CASE("extents attach run-time sizes to names") {
  const auto sizes = mp::extents{batch{} = 256, io{} = 512, hidden{} = 2048};
  CHECK(sizes.get<io>() == 512);
  CHECK(sizes[hidden{}] == 2048);
  CHECK(sizes.sizes_of<mp::shape<hidden, batch>>() == std::array<std::size_t, 2>{2048, 256});
  CHECK(mp::to_string(sizes) == "[batch:256, io:512, hidden:2048]");
  static_assert(decltype(sizes)::has<io> && !decltype(sizes)::has<heads>);
  CHECK_THROWS_WITH_AS((void)(batch{} = -3), "meshpp: dim 'batch' was given the negative size -3",
                       mp::error);
}

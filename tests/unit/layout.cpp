// layout rules: restriction to a tensor's shape, lookups, injectivity, and the
// Mesh-TensorFlow spelling "batch:rows;hidden:cols".
#include <meshpp/core/layout.hpp>
#include <meshpp/core/mesh.hpp>
#include <meshpp/core/shape.hpp>

#include <string>
#include <type_traits>

#include "testing.hpp"

namespace mp = meshpp;
using mp::layout;
using mp::shape;
using mp::split;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(all);
MESHPP_DIM(vocab);
MESHPP_DIM(d_model);
MESHPP_DIM(d_ff);
MESHPP_DIM(heads);
MESHPP_DIM(d_kv);

using rules = layout<split<batch, rows>, split<hidden, cols>>;

// What must not compile, tested in the language (compile_fail/ has the diagnostics).
//
// layout<...>'s own checks (a dim given two rules, a rule that is not split<...>) are
// static_asserts in its class body: instantiating a bad layout is a hard error, not a
// substitution failure, so `!layout_ok<split<batch, rows>, split<batch, cols>>` does not
// evaluate to false, it stops the build (on g++ 12 and clang 14 alike). Those cases live in
// compile_fail/layout/ only. What a constraint can see is tested here.
template <class... S>
concept layout_ok = requires {
  sizeof(layout<S...>);
};
static_assert(layout_ok<split<batch, rows>, split<hidden, cols>>);
static_assert(layout_ok<>);
// Rules may share a mesh dim (paper 8.5); only a tensor with two such dims is illegal.
static_assert(layout_ok<split<batch, all>, split<hidden, all>>);

// layout_for_t needs a shape, mesh_dim_of_t a layout: anything else is a substitution failure.
template <class Rules, class S>
concept restrictable = requires {
  typename mp::layout_for_t<Rules, S>;
};
static_assert(restrictable<rules, shape<batch, io>>);
static_assert(!restrictable<rules, batch>);
static_assert(!restrictable<rules, int>);
template <class L, class D>
concept has_mesh_dim_of = requires {
  typename mp::mesh_dim_of_t<L, D>;
};
static_assert(has_mesh_dim_of<rules, batch>);
static_assert(!has_mesh_dim_of<shape<batch>, batch>);

TEST_CASE("a split names a tensor dim and a mesh dim") {
  using s = split<batch, rows>;
  static_assert(std::is_same_v<s::tensor_dim, batch>);
  static_assert(std::is_same_v<s::mesh_dim, rows>);
  static_assert(mp::is_layout_v<rules> && !mp::is_layout_v<s> && !mp::is_layout_v<shape<batch>>);
  CHECK(rules::size == 2);
  CHECK(layout<>::size == 0);
}

TEST_CASE("layout_for_t keeps the rules for the shape's dims, in the shape's order") {
  // Order follows the tensor, not the rules.
  static_assert(std::is_same_v<mp::layout_for_t<rules, shape<hidden, io, batch>>,
                               layout<split<hidden, cols>, split<batch, rows>>>);
  static_assert(std::is_same_v<mp::layout_for_t<rules, shape<batch, io, hidden>>, rules>);
  // Dims without a rule are dropped (they are replicated); rules for absent dims too.
  static_assert(
      std::is_same_v<mp::layout_for_t<rules, shape<io, hidden>>, layout<split<hidden, cols>>>);
  static_assert(std::is_same_v<mp::layout_for_t<rules, shape<io>>, layout<>>);
  static_assert(std::is_same_v<mp::layout_for_t<rules, shape<>>, layout<>>);
  static_assert(std::is_same_v<mp::layout_for_t<layout<>, shape<batch, io>>, layout<>>);
  // Restricting twice changes nothing.
  using once = mp::layout_for_t<rules, shape<hidden, batch>>;
  static_assert(std::is_same_v<mp::layout_for_t<once, shape<hidden, batch>>, once>);
  // A mesh restricts its rules the same way.
  using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
  static_assert(std::is_same_v<mesh_t::layout_for<shape<hidden, io, batch>>,
                               mp::layout_for_t<rules, shape<hidden, io, batch>>>);
  CHECK(mp::to_string(mp::layout_for_t<rules, shape<hidden, io, batch>>{}) ==
        "hidden:cols;batch:rows");
}

TEST_CASE("mesh_dim_of_t and is_split_in_v look a tensor dim up") {
  static_assert(std::is_same_v<mp::mesh_dim_of_t<rules, batch>, rows>);
  static_assert(std::is_same_v<mp::mesh_dim_of_t<rules, hidden>, cols>);
  static_assert(std::is_same_v<mp::mesh_dim_of_t<rules, io>, mp::detail::no_mesh_dim>);
  static_assert(std::is_same_v<mp::mesh_dim_of_t<layout<>, batch>, mp::detail::no_mesh_dim>);
  static_assert(mp::is_split_in_v<rules, batch> && mp::is_split_in_v<rules, hidden>);
  static_assert(!mp::is_split_in_v<rules, io> && !mp::is_split_in_v<layout<>, batch>);
  // A mesh dim is not a tensor dim: rows is split over nothing.
  static_assert(!mp::is_split_in_v<rules, rows>);
  CHECK(mp::is_split_in_v<rules, batch>);
}

TEST_CASE("is_injective_v: no two rules share a mesh dim") {
  static_assert(mp::is_injective_v<rules>);
  static_assert(mp::is_injective_v<layout<>>);
  static_assert(mp::is_injective_v<layout<split<batch, rows>>>);
  static_assert(!mp::is_injective_v<layout<split<batch, all>, split<hidden, all>>>);
  static_assert(
      !mp::is_injective_v<layout<split<batch, rows>, split<io, cols>, split<hidden, rows>>>);
  // The paper's Transformer rules [vocab:all, d_ff:all, heads:all] are not injective, yet
  // every tensor's restriction of them is: that is what makes them legal (paper 8.5).
  using transformer = layout<split<vocab, all>, split<d_ff, all>, split<heads, all>>;
  static_assert(!mp::is_injective_v<transformer>);
  static_assert(mp::is_injective_v<mp::layout_for_t<transformer, shape<vocab, d_model>>>);
  static_assert(mp::is_injective_v<mp::layout_for_t<transformer, shape<batch, d_model, d_ff>>>);
  static_assert(mp::is_injective_v<mp::layout_for_t<transformer, shape<batch, heads, d_kv>>>);
  // ... and a tensor with two of those dims would not be.
  static_assert(!mp::is_injective_v<mp::layout_for_t<transformer, shape<d_ff, heads>>>);
  CHECK(!mp::is_injective_v<transformer>);
}

TEST_CASE("to_string uses the Mesh-TensorFlow spelling") {
  CHECK(mp::to_string(rules{}) == "batch:rows;hidden:cols");
  CHECK(mp::to_string(layout<split<batch, all>>{}) == "batch:all");
  CHECK(mp::to_string(layout<>{}) == "");
  CHECK(mp::to_string(layout<split<vocab, all>, split<d_ff, all>, split<heads, all>>{}) ==
        "vocab:all;d_ff:all;heads:all");
}

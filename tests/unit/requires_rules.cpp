// The rules meshpp states as constraints (requires-clauses and concepts), tested in the
// language: each illegal use is `static_assert(!...)` beside a legal twin `static_assert(...)`
// that differs in the one thing the rule is about, so a check that can never hold (a typo, a
// wrong header) fails the twin instead of passing silently.
//
// The rules that are static_asserts with an `offending::` message (a bad layout, an einsum
// output dim in no input, ...) cannot be asked about this way: instantiating them stops the
// build rather than answering false. tests/compile_fail/ has those, with their messages. A
// constraint that is not satisfied is a substitution failure, so `requires { ... }` answers it.
// Legal twins are whole calls: a function whose return type is deduced is instantiated to
// answer, so the twin also checks that its body compiles.
//
// Each check is a concept over the types involved: outside a template, a requires-expression
// with an invalid requirement is a hard error, not false. unit/layout.cpp has the same for
// layout_for_t and mesh_dim_of_t; autodiff/elementwise.hpp's componentwise(f, a) of a traced a
// and optim/'s `if constexpr (requires ...)` choose between branches and are no rules.
#include <meshpp/core/lanes.hpp>
#include <meshpp/core/state.hpp>
#include <meshpp/core/text.hpp>
#include <meshpp/meshpp.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "testing.hpp"

namespace mp = meshpp;
using mp::layout;
using mp::shape;
using mp::split;

MESHPP_DIM(batch);
MESHPP_DIM(hidden);
MESHPP_DIM(vocab);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {

using rules = layout<split<batch, rows>, split<hidden, cols>>;
using mesh_t = mp::mesh<mp::axes<rows, cols>, rules>;
using other_mesh_t = mp::mesh<mp::axes<cols, rows>, rules>;  // another mesh type

using matrix = mp::tensor_of<float, shape<batch, hidden>, mesh_t>;
using transposed = mp::tensor_of<float, shape<hidden, batch>, mesh_t>;
using matrix_on_other_mesh = mp::tensor_of<float, shape<batch, hidden>, other_mesh_t>;
using row = mp::tensor_of<float, shape<hidden>, mesh_t>;
using number = mp::tensor_of<float, shape<>, mesh_t>;  // no dims: one value
using ids = mp::tensor_of<std::int32_t, shape<batch>, mesh_t>;
using table = mp::tensor_of<float, shape<vocab, hidden>, mesh_t>;
using traced_matrix = mp::traced<matrix>;
using traced_row = mp::traced<row>;
using traced_number = mp::traced<number>;
using traced_table = mp::traced<table>;
using variable_row = mp::variable<row>;
// a lazy expression: an operand of everything that reads values, but not a tensor
using expression = decltype(std::declval<const matrix&>() * 2.0f);
using expression_on_other_mesh = decltype(std::declval<const matrix_on_other_mesh&>() * 2.0f);
using sizes_t = mp::extents<batch, hidden, vocab>;
struct not_a_dim {};

static_assert(mp::is_expression_v<expression> && !mp::is_tensor_v<expression>);

// --- core/ -----------------------------------------------------------------------------------

// dim_name<D>: declared with MESHPP_DIM
static_assert(mp::dim_name<batch>);
static_assert(!mp::dim_name<not_a_dim>);
static_assert(!mp::dim_name<int>);

// permutation_v<From, To>: From and To hold the same dims
template <class From, class To>
concept permutable = requires {
  mp::permutation_v<From, To>;
};
static_assert(permutable<shape<batch, hidden>, shape<hidden, batch>>);
static_assert(!permutable<shape<batch, hidden>, shape<hidden, vocab>>);
static_assert(!permutable<shape<batch, hidden>, shape<batch>>);

// tensor(e): from an expression on the tensor's own mesh type
static_assert(std::is_constructible_v<matrix, expression>);
static_assert(!std::is_constructible_v<matrix, expression_on_other_mesh>);
// tensor(other): from a tensor of other dims order or layout, on the same mesh type
static_assert(std::is_constructible_v<matrix, transposed>);
static_assert(!std::is_constructible_v<matrix, matrix_on_other_mesh>);
static_assert(std::is_assignable_v<matrix&, const transposed&>);
static_assert(!std::is_assignable_v<matrix&, const matrix_on_other_mesh&>);
// t = e: from an expression, not from a scalar (a tensor is not filled by `=`: use full)
static_assert(std::is_assignable_v<matrix&, expression>);
static_assert(!std::is_assignable_v<matrix&, float>);

// t.item(): a tensor of no dims
template <class T>
concept has_item = requires(const T& t) {
  t.item();
};
static_assert(has_item<number>);
static_assert(!has_item<row>);
static_assert(has_item<traced_number>);
static_assert(!has_item<traced_row>);

// zeros<Tensor>(mesh, sizes) and the other makers: the tensor type's own mesh type
template <class Tensor, class Mesh>
concept makeable = requires(const Mesh& m, const sizes_t& s) {
  mp::zeros<Tensor>(m, s);
  mp::ones<Tensor>(m, s);
  mp::full<Tensor>(m, s, 1.0f);
  mp::generate<Tensor>(m, s, [](const auto&) { return 1.0f; });
  mp::random_uniform<Tensor>(m, s, 1);
  mp::random_normal<Tensor>(m, s, 1);
};
static_assert(makeable<matrix, mesh_t>);
static_assert(!makeable<matrix, other_mesh_t>);
template <class Tensor, class Mesh>
concept iota_makeable = requires(const Mesh& m, const sizes_t& s) {
  mp::iota<Tensor>(m, s);
};
static_assert(iota_makeable<ids, mesh_t>);
static_assert(!iota_makeable<ids, other_mesh_t>);

// visit_count(v, name, n): an integer count
template <class N>
concept countable = requires(mp::state_visitor& v, N& n) {
  mp::visit_count(v, "n", n);
};
static_assert(countable<std::size_t>);
static_assert(!countable<double>);

// detail::flush_subnormal(x): a floating-point value (or an xsimd batch of them)
template <class T>
concept flushable = requires(T x) {
  mp::detail::flush_subnormal(x);
};
static_assert(flushable<float>);
static_assert(!flushable<int>);

// detail::counting_integer<I>: printed as a number, not a character or a truth value
static_assert(mp::detail::counting_integer<std::size_t>);
static_assert(!mp::detail::counting_integer<char>);
static_assert(!mp::detail::counting_integer<bool>);
static_assert(!mp::detail::counting_integer<double>);

// --- expr/ -----------------------------------------------------------------------------------

// binary_operands<A, B>: operands (expressions or arithmetic scalars), at least one an
// expression; the operators and pow, maximum, minimum, equal, not_equal take them
static_assert(mp::operand<matrix> && mp::operand<expression> && mp::operand<float>);
static_assert(!mp::operand<std::string> && !mp::operand<traced_matrix>);
static_assert(mp::either_expression<float, matrix> && !mp::either_expression<float, int>);
static_assert(mp::binary_operands<const matrix&, float>);
static_assert(!mp::binary_operands<float, double>);
static_assert(!mp::binary_operands<const matrix&, std::string>);
template <class A, class B>
concept combinable = requires(const A& a, const B& b) {
  a + b;
  a - b;
  a* b;
  a / b;
  a < b;
  a <= b;
  a > b;
  a >= b;
  mp::equal(a, b);
  mp::not_equal(a, b);
  mp::pow(a, b);
  mp::maximum(a, b);
  mp::minimum(a, b);
};
static_assert(combinable<matrix, float>);
static_assert(combinable<float, expression>);
static_assert(!combinable<matrix, std::string>);
template <class A, class B>
concept pow_of = requires(const A& a, const B& b) {
  mp::pow(a, b);
};
static_assert(pow_of<matrix, float>);
static_assert(!pow_of<float, float>);  // two scalars: std::pow's business

// -a, cast<U>(a), componentwise(f, a), exp(a), ...: a an expression
template <class A>
concept unary_operand = requires(const A& a) {
  -a;
  mp::cast<double>(a);
  mp::componentwise(mp::fn::exp{}, a);
  mp::exp(a);
  mp::relu(a);
};
static_assert(unary_operand<matrix>);
static_assert(unary_operand<expression>);
template <class A>
concept exp_of = requires(const A& a) {
  mp::exp(a);
};
template <class A>
concept cast_of = requires(const A& a) {
  mp::cast<double>(a);
};
static_assert(exp_of<matrix> && cast_of<matrix>);
static_assert(!exp_of<float> && !cast_of<float>);

// where(c, a, b): the condition an expression, the branches operands
template <class C, class A, class B>
concept selectable = requires(const C& c, const A& a, const B& b) {
  mp::where(c, a, b);
};
using condition = decltype(std::declval<const matrix&>() > 0.0f);
static_assert(selectable<condition, matrix, float>);
static_assert(!selectable<bool, matrix, float>);
static_assert(!selectable<condition, matrix, std::string>);

// make_function(f, x...): at least one operand an expression
template <class... X>
concept function_of = requires(const X&... x) {
  mp::make_function(mp::fn::plus{}, x...);
};
static_assert(function_of<matrix, float>);
static_assert(!function_of<float, float>);

// assign_expression(dest, e): dest a tensor, e an expression; eval(e): e an expression
template <class Dest, class E>
concept assignable_by_name = requires(Dest& d, const E& e) {
  mp::assign_expression(d, e);
};
static_assert(assignable_by_name<matrix, expression>);
static_assert(!assignable_by_name<expression, matrix>);
template <class E>
concept evaluable = requires(const E& e) {
  mp::eval(e);
};
static_assert(evaluable<expression> && evaluable<matrix>);
static_assert(!evaluable<float>);

// detail::tensor_leaf<Tensor, Owned>: an owning leaf is built from an rvalue only
template <class Leaf, class Arg>
concept leaf_from = std::is_constructible_v<Leaf, Arg>;
static_assert(leaf_from<mp::detail::tensor_leaf<matrix, true>, matrix&&>);
static_assert(!leaf_from<mp::detail::tensor_leaf<matrix, true>, const matrix&>);
static_assert(leaf_from<mp::detail::tensor_leaf<matrix, false>, const matrix&>);

// --- ops/ ------------------------------------------------------------------------------------

// einsum<Out>(a, b), einsum<Out, OutRules>(a, b), einsum<Out>(a): Out a shape, OutRules a
// layout, a and b expressions
template <class Out, class A, class B>
concept einsum_of = requires(const A& a, const B& b) {
  mp::einsum<Out>(a, b);
};
static_assert(einsum_of<shape<batch>, matrix, row>);
static_assert(!einsum_of<batch, matrix, row>);
static_assert(!einsum_of<shape<batch, hidden>, matrix, float>);
template <class Out, class OutRules, class A, class B>
concept einsum_laid_out = requires(const A& a, const B& b) {
  mp::einsum<Out, OutRules>(a, b);
};
static_assert(einsum_laid_out<shape<batch>, layout<>, matrix, row>);
static_assert(!einsum_laid_out<shape<batch>, split<batch, rows>, matrix, row>);
template <class Out, class A>
concept einsum_one = requires(const A& a) {
  mp::einsum<Out>(a);
};
static_assert(einsum_one<shape<hidden>, matrix>);
static_assert(!einsum_one<hidden, matrix>);

// reduce_sum<Dims...>(e), reduce_sum_to<Out>(e), and max, min, mean: e an expression
template <class E>
concept reducible = requires(const E& e) {
  mp::reduce_sum<batch>(e);
  mp::reduce_max<batch>(e);
  mp::reduce_min<batch>(e);
  mp::reduce_mean<batch>(e);
  mp::reduce_sum_to<shape<hidden>>(e);
  mp::reduce_max_to<shape<hidden>>(e);
  mp::reduce_min_to<shape<hidden>>(e);
  mp::reduce_mean_to<shape<hidden>>(e);
};
static_assert(reducible<expression>);
template <class E>
concept summable = requires(const E& e) {
  mp::reduce_sum<batch>(e);
};
template <class E>
concept summable_to = requires(const E& e) {
  mp::reduce_mean_to<shape<hidden>>(e);
};
static_assert(summable<matrix> && summable_to<matrix>);
static_assert(!summable<std::vector<float>> && !summable_to<std::vector<float>>);

// softmax<Dim>(e), log_softmax, logsumexp, argmax; softmax<Dim>(e, mask): expressions
template <class E>
concept normalizable = requires(const E& e) {
  mp::softmax<hidden>(e);
  mp::log_softmax<hidden>(e);
  mp::logsumexp<hidden>(e);
  mp::argmax<hidden>(e);
};
static_assert(normalizable<expression>);
template <class E>
concept softmax_of = requires(const E& e) {
  mp::softmax<hidden>(e);
};
static_assert(softmax_of<matrix>);
static_assert(!softmax_of<float>);
template <class E, class M>
concept masked_softmax_of = requires(const E& e, const M& mask) {
  mp::softmax<hidden>(e, mask);
};
static_assert(masked_softmax_of<matrix, condition>);
static_assert(!masked_softmax_of<matrix, bool>);

// take<Dim>(table, ids), one_hot<Dim>(ids, sizes): expressions
template <class Table, class Ids>
concept takeable = requires(const Table& t, const Ids& i) {
  mp::take<vocab>(t, i);
};
static_assert(takeable<table, ids>);
static_assert(!takeable<table, std::vector<int>>);
template <class Ids>
concept one_hot_of = requires(const Ids& i, const sizes_t& s) {
  mp::one_hot<vocab>(i, s);
};
static_assert(one_hot_of<ids>);
static_assert(!one_hot_of<std::vector<int>>);

// relayout<NewRules>(t): t a tensor, NewRules a layout
template <class NewRules, class T>
concept relayoutable = requires(const T& t) {
  mp::relayout<NewRules>(t);
};
static_assert(relayoutable<layout<split<hidden, rows>>, matrix>);
static_assert(!relayoutable<split<hidden, rows>, matrix>);
static_assert(!relayoutable<layout<split<hidden, rows>>, expression>);

// reshape<NewShape>(t[, sizes]), rename<Old, New>(t): t a tensor, NewShape a shape
template <class NewShape, class T>
concept reshapeable = requires(const T& t) {
  mp::reshape<NewShape>(t);
};
static_assert(reshapeable<shape<batch, vocab>, matrix>);
static_assert(!reshapeable<vocab, matrix>);
static_assert(!reshapeable<shape<batch, vocab>, expression>);
template <class T>
concept renameable = requires(const T& t) {
  mp::rename<hidden, vocab>(t);
};
static_assert(renameable<matrix>);
static_assert(!renameable<expression>);

// slice, pad, concat, split_along, shift, halo_exchange <Dim>(t, ...): t a tensor (they copy
// boxes of its slice; an expression is evaluated first, by the caller)
template <class T>
concept movable_along = requires(const T& t, const std::vector<std::size_t>& sizes) {
  mp::slice<batch>(t, 0, 1);
  mp::pad<batch>(t, 1, 1);
  mp::concat<batch>(t, t);
  mp::split_along<batch>(t, sizes);
  mp::shift<batch>(t, 1);
  mp::halo_exchange<batch>(t, 1);
};
static_assert(movable_along<matrix>);
template <class T>
concept sliceable = requires(const T& t) {
  mp::slice<batch>(t, 0, 1);
};
template <class T>
concept shiftable = requires(const T& t) {
  mp::shift<batch>(t, 1);
};
template <class T>
concept halo_exchangeable = requires(const T& t) {
  mp::halo_exchange<batch>(t, 1);
};
static_assert(sliceable<matrix> && shiftable<matrix> && halo_exchangeable<matrix>);
static_assert(!sliceable<expression> && !shiftable<expression> && !halo_exchangeable<expression>);

// scatter<Tensor>(mesh, sizes, global): the tensor type's mesh; scatter<Dims...>(mesh, ...): a
// mesh; gather(t): a tensor
template <class Tensor, class Mesh>
concept scatterable = requires(const Mesh& m, const sizes_t& s, const xt::xtensor<float, 2>& g) {
  mp::scatter<Tensor>(m, s, g);
};
static_assert(scatterable<matrix, mesh_t>);
static_assert(!scatterable<matrix, other_mesh_t>);
template <class Mesh>
concept scatterable_by_dims = requires(const Mesh& m, const sizes_t& s,
                                       const xt::xtensor<float, 2>& g) {
  mp::scatter<batch, hidden>(m, s, g);
};
static_assert(scatterable_by_dims<mesh_t>);
static_assert(!scatterable_by_dims<int>);
template <class T>
concept gatherable = requires(const T& t) {
  mp::gather(t);
  mp::gather(t, 0);
};
static_assert(gatherable<matrix>);
static_assert(!gatherable<expression>);

// --- autodiff/ -------------------------------------------------------------------------------

// detail::traced_pair<A, B>: operands of a traced binary function (traced, plain tensors or
// expressions, scalars), at least one traced; the plain ones are expr/'s
static_assert(mp::detail::traced_pair<traced_matrix, matrix>);
static_assert(mp::detail::traced_pair<float, traced_matrix>);
static_assert(!mp::detail::traced_pair<matrix, matrix>);
static_assert(!mp::detail::traced_pair<traced_matrix, std::string>);
static_assert(combinable<traced_matrix, matrix>);
static_assert(combinable<float, traced_matrix>);
static_assert(!combinable<traced_matrix, std::string>);
// where(c, a, b) of traced branches: c a plain expression (a condition has no gradient)
static_assert(selectable<condition, traced_matrix, float>);
static_assert(!selectable<mp::traced<mp::tensor_of<bool, shape<batch, hidden>, mesh_t>>,
                          traced_matrix, float>);

// detail::traced_einsum<Out, A, B>: Out a shape, tensors or expressions, one of them traced
static_assert(mp::detail::traced_einsum<shape<batch>, traced_matrix, row>);
static_assert(!mp::detail::traced_einsum<shape<batch>, traced_matrix, float>);
static_assert(!mp::detail::traced_einsum<batch, traced_matrix, row>);
static_assert(einsum_of<shape<batch>, traced_matrix, row>);
static_assert(!einsum_of<shape<batch>, traced_matrix, float>);
static_assert(einsum_one<shape<hidden>, traced_matrix>);
static_assert(!einsum_one<hidden, traced_matrix>);

// relayout, reshape of a traced tensor: NewRules a layout, NewShape a shape
static_assert(relayoutable<layout<split<hidden, rows>>, traced_matrix>);
static_assert(!relayoutable<split<hidden, rows>, traced_matrix>);
static_assert(reshapeable<shape<batch, vocab>, traced_matrix>);
static_assert(!reshapeable<vocab, traced_matrix>);

// detail::concat_operands<A, B>: traced or plain tensors, at least one traced (not expressions)
static_assert(mp::detail::concat_operands<traced_matrix, matrix>);
static_assert(!mp::detail::concat_operands<traced_matrix, expression>);
static_assert(!mp::detail::concat_operands<matrix, matrix>);  // ops/slice.hpp's concat
template <class A, class B>
concept concatenable = requires(const A& a, const B& b) {
  mp::concat<batch>(a, b);
};
static_assert(concatenable<matrix, traced_matrix>);
static_assert(!concatenable<expression, traced_matrix>);

// softmax<Dim>(x, mask) of a traced x: the mask a plain expression
static_assert(masked_softmax_of<traced_matrix, condition>);
static_assert(!masked_softmax_of<traced_matrix, bool>);

// take<Dim>(table, ids) of a traced table: ids plain (integers have no gradient)
static_assert(takeable<traced_table, ids>);
static_assert(!takeable<traced_table, mp::traced<ids>>);

// vjp(y, dy, xs...): dy a plain tensor
template <class Y, class DY, class X>
concept vjp_of = requires(const Y& y, const DY& dy, const X& x) {
  mp::vjp(y, dy, x);
};
static_assert(vjp_of<traced_matrix, matrix, traced_matrix>);
static_assert(!vjp_of<traced_matrix, traced_matrix, traced_matrix>);

// record(forward, backward, inputs...): inputs traced, plain or scalar (detail::record_operand)
template <class X>
concept recordable = requires(const X& x) {
  mp::record([](const auto& v) { return v; }, [](const auto&...) {}, x);
};
static_assert(mp::detail::record_operand<traced_matrix> && mp::detail::record_operand<float>);
static_assert(!mp::detail::record_operand<std::string>);
static_assert(recordable<traced_matrix>);
static_assert(!recordable<std::string>);

// trace(t): a plain tensor
template <class T>
concept traceable = requires(const T& t) {
  mp::trace(t);
};
static_assert(traceable<matrix>);
static_assert(!traceable<traced_matrix>);
static_assert(!traceable<expression>);

// stop_gradient(x): a traced or plain tensor; a temporary by value (detail::temporary_value)
template <class X>
concept stoppable = requires(X&& x) {
  mp::stop_gradient(std::forward<X>(x));
};
static_assert(stoppable<const traced_matrix&> && stoppable<traced_matrix>);
static_assert(!stoppable<const expression&> && !stoppable<expression>);
static_assert(mp::detail::temporary_value<traced_matrix>);
static_assert(!mp::detail::temporary_value<traced_matrix&>);
static_assert(!mp::detail::temporary_value<expression>);
static_assert(std::is_same_v<decltype(mp::stop_gradient(std::declval<traced_matrix>())), matrix>);
static_assert(std::is_same_v<decltype(mp::stop_gradient(std::declval<const traced_matrix&>())),
                             const matrix&>);

// --- nn/ -------------------------------------------------------------------------------------

// detail::traced_or_tensor<X>: dropout(x, ...), layer_norm<Dim>(x, gamma, beta)
static_assert(mp::detail::traced_or_tensor<variable_row> && mp::detail::traced_or_tensor<row>);
static_assert(!mp::detail::traced_or_tensor<expression>);
template <class X>
concept droppable = requires(const X& x) {
  mp::dropout(x, 0.5, 1);
};
static_assert(droppable<traced_matrix> && droppable<matrix>);
static_assert(!droppable<expression>);
template <class X, class G>
concept normalizable_by = requires(const X& x, const G& g) {
  mp::layer_norm<hidden>(x, g, g);
};
static_assert(normalizable_by<traced_matrix, variable_row>);
static_assert(!normalizable_by<traced_matrix, decltype(std::declval<const row&>() * 2.0f)>);

// bias_activation<Act>(z, b), activate<Act>(z): z traced
template <class Z, class B>
concept biasable = requires(const Z& z, const B& b) {
  mp::bias_activation<mp::activation::relu>(z, b);
};
static_assert(biasable<traced_matrix, variable_row>);
static_assert(!biasable<matrix, variable_row>);
template <class Z>
concept activatable = requires(const Z& z) {
  mp::activate<mp::activation::relu>(z);
};
static_assert(activatable<traced_matrix>);
static_assert(!activatable<matrix>);

// softmax_cross_entropy<Classes>(logits, labels): the labels a plain tensor
template <class L, class Labels>
concept cross_entropy_of = requires(const L& logits, const Labels& labels) {
  mp::softmax_cross_entropy<hidden>(logits, labels);
};
static_assert(cross_entropy_of<matrix, ids> && cross_entropy_of<traced_matrix, ids>);
static_assert(!cross_entropy_of<matrix, decltype(std::declval<const ids&>() + 0)>);
static_assert(!cross_entropy_of<traced_matrix, mp::traced<ids>>);

// dense<...>::bias(): only with a bias
template <class Layer>
concept has_bias = requires(const Layer& l) {
  l.bias();
};
using with_bias = mp::dense<float, shape<hidden>, shape<vocab>, mesh_t>;
using without_bias =
    mp::dense<float, shape<hidden>, shape<vocab>, mesh_t, mp::activation::identity, false>;
static_assert(has_bias<with_bias>);
static_assert(!has_bias<without_bias>);

}  // namespace

// The checks above are compile-time; this runs the legal twins of a few of them on one rank,
// so that what the concepts accept also computes.
TEST_CASE("the legal twins of the constraint tests run") {
  const mesh_t m({1, 1});
  const auto sizes = mp::extents{batch{} = 4, hidden{} = 3, vocab{} = 5};
  const auto x = mp::iota<batch, float>(m, sizes);
  const auto three = mp::full<float, hidden>(m, sizes, 3.0f);
  const matrix outer = mp::einsum<shape<batch, hidden>>(x, three);
  const number total = mp::reduce_sum(outer);
  CHECK(total.item() == doctest::Approx(3.0 * 3.0 * (0 + 1 + 2 + 3)));
  const auto traced_total = mp::reduce_sum(mp::trace(outer) * 2.0f);
  CHECK(traced_total.item() == doctest::Approx(2.0 * 54.0));
  // pow(scalar, traced): the exponent's gradient, b^a ln b, takes the log of a plain number
  const auto a = mp::trace(mp::full<float, hidden>(m, sizes, 1.0f));
  const auto [da] = mp::gradients(mp::reduce_sum(mp::pow(2.0f, a)), a);
  for (const float g : mp::gather(da)) CHECK(g == doctest::Approx(2.0 * std::log(2.0)));
  CHECK(mp::detail::flush_subnormal(1e-40f) == 0.0f);
  CHECK(mp::detail::flush_subnormal(1.0f) == 1.0f);
}

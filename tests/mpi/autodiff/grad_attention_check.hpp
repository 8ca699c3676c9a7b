// Shared by grad_attention.cpp and grad_attention_replicated.cpp (one mesh type each, to keep
// each quick to compile): check_mesh(mesh) checks nn::multihead_attention (nn/attention.hpp)
// there, in double with dropout off, with the causal mask and without: its output against
// plain loops (the single-process Transformer reference's projections and attention,
// tests/support/transformer_reference.hpp) over the gathered input and weights, then the
// gradients of a weighted sum of the output with respect to the input and to each weight (wq,
// wk, wv, wo) against central differences. The sizes are tiny (the check perturbs one element
// at a time) and differ from each other, so a transposed index shows; batch and heads are 4 so
// that both split over 1, 2 and 4 ranks.
#pragma once

#include <meshpp/nn/attention.hpp>

#include <cstddef>
#include <cstdint>

#include "../nn/nn_variable_gradcheck.hpp"
#include "grad_fixture.hpp"
#include "reference.hpp"
#include "transformer_reference.hpp"

MESHPP_DIM(length);
MESHPP_DIM(memory_length);
MESHPP_DIM(d_model);
MESHPP_DIM(heads);
MESHPP_DIM(d_k);
MESHPP_DIM(d_v);

namespace grad_attention_test {

namespace rt = meshpp_test::reference_transformer;

constexpr std::size_t nb = 4, nl = 3, nd = 5, nh = 4, nk = 2, nv = 3;
inline const auto sizes =
    mp::extents{batch{} = nb, length{} = nl, memory_length{} = nl, d_model{} = nd, heads{} = nh,
                d_k{} = nk,   d_v{} = nv};
using dims = mp::nn::attention_dims<length, memory_length, d_model, heads, d_k, d_v>;

// whole(t): t gathered, as the reference's flat row-major array
template <class Tensor>
rt::array whole(const Tensor& t) {
  const auto a = mp::gather(t);
  return rt::array(a.begin(), a.end());
}

// reference_output(x, attend): attend(x) by the reference's loops: the projections as matmuls
// of x [B*L, D] by wq, wk [D, H*K] and wv [D, H*V], attention per head, then wo [H*V, D]
template <class X, class Layer>
xt::xtensor<double, 3> reference_output(const X& x, const Layer& attend) {
  const rt::array xs = whole(x);
  const std::size_t positions = nb * nl;
  const rt::array q = rt::matmul(xs, whole(attend.wq().value()), positions, nd, nh * nk);
  const rt::array k = rt::matmul(xs, whole(attend.wk().value()), positions, nd, nh * nk);
  const rt::array v = rt::matmul(xs, whole(attend.wv().value()), positions, nd, nh * nv);
  const rt::array o = rt::attention(q, k, v, nb, nl, nh, nk, nv, attend.options().causal);
  const rt::array y = rt::matmul(o, whole(attend.wo().value()), positions, nh * nv, nd);
  return meshpp_test::filled<double, 3>({nb, nl, nd}, [&](std::uint64_t i) { return y[i]; });
}

// check_attention(mesh, causal): the forward pass against the reference, then the gradients
// of the input and of every weight against central differences
template <class Mesh>
void check_attention(const Mesh& m, bool causal) {
  CAPTURE(causal);
  CAPTURE(m.describe());
  mp::nn::multihead_attention<double, Mesh, dims> attend(m, sizes, /*seed*/ 5,
                                                         {.causal = causal, .dropout = 0.0});
  const auto x = mp::random_normal<double, batch, length, d_model>(m, sizes, 1);
  CHECK_ALL_RANKS(
      meshpp_test::matches(mp::gather(attend(x).value()), reference_output(x, attend), 1e-12));

  check_gradient("x", x, [&](const auto& t) { return weighted_sum(attend(t)); });
  const auto loss = [&] { return weighted_sum(attend(x)); };
  const auto check_variable = [&](const char* name, auto& v) {
    meshpp_test::check_gradient_error(name, m.describe(),
                                      meshpp_test::variable_gradient_error(v, loss),
                                      meshpp_test::gradient_tolerance);
  };
  check_variable("wq", attend.wq());
  check_variable("wk", attend.wk());
  check_variable("wv", attend.wv());
  check_variable("wo", attend.wo());
}

// check_mesh(mesh): with the causal mask and without
template <class Mesh>
void check_mesh(const Mesh& m) {
  for (const bool causal : {true, false}) check_attention(m, causal);
}

}  // namespace grad_attention_test

// The shared fixture of reductions_layouts.cpp and reductions_meshes.cpp: the dims, the
// input [batch, seq, hidden] under a mesh's rules, and the tolerance of a float sum.
#pragma once

#include <meshpp/core/create.hpp>

#include <cstddef>
#include <cstdint>

#include "reduction_reference.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using namespace meshpp_test;

MESHPP_DIM(batch);
MESHPP_DIM(seq);
MESHPP_DIM(hidden);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(x);
MESHPP_DIM(y);
MESHPP_DIM(z);
MESHPP_DIM(rest);

namespace {
constexpr std::size_t nb = 8, ns = 4, nh = 12;
const auto sizes = mp::extents{batch{} = nb, seq{} = ns, hidden{} = nh};
constexpr double tol = tolerance<float>(kind::sum);

template <class R>
using layout_of = typename R::layout_type;
template <class R>
using shape_of = typename R::shape_type;

// the input [batch, seq, hidden] under Mesh's rules, and its gathered reference
template <class Mesh>
auto input(const Mesh& m, std::uint64_t seed) {
  return mp::random_normal<float, batch, seq, hidden>(m, sizes, seed);
}
}  // namespace

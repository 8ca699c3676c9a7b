// Shared by grad_einsum.cpp, grad_einsum_forms.cpp and grad_einsum_self.cpp: the tensors, the mesh
// and the check of einsum gradients by central differences (double) at every element.
//
// One mesh type (axes<rows, cols, planes>, rules batch:rows, io:cols, extra:planes; hidden
// whole) keeps the compile time to one instantiation per case; the layouts vary at run time
// instead: every mesh shape the rank count allows is tried, so each split dim is split on some
// shapes and whole (a mesh dim of size 1) on others, alone or together with the others.
#pragma once

#include <meshpp/autodiff/einsum.hpp>

#include <array>
#include <vector>

#include "grad_fixture.hpp"

MESHPP_DIM(io);
MESHPP_DIM(extra);
MESHPP_DIM(planes);

namespace grad_einsum {

const auto sizes = mp::extents{batch{} = 4, io{} = 4, hidden{} = 3, extra{} = 2};
using rules = mp::layout<mp::split<batch, rows>, mp::split<io, cols>, mp::split<extra, planes>>;
using mesh_t = mp::mesh<mp::axes<rows, cols, planes>, rules>;

// Every mesh shape [rows, cols, planes] of n ranks whose sizes divide the dims they split
// (batch 4, io 4, extra 2).
inline std::vector<std::array<int, 3>> mesh_shapes(int n) {
  return meshpp_test::mesh_shapes<3>(n, {4, 4, 2});
}

/// The operands of the cases, all of double, from the global index.
struct operands {
  explicit operands(const mesh_t& m)
      : x(mp::random_normal<double, batch, io>(m, sizes, 1)),
        w(mp::random_normal<double, io, hidden>(m, sizes, 2)),
        p(mp::random_normal<double, batch, io, extra>(m, sizes, 3)),
        q(mp::random_normal<double, batch, extra, hidden>(m, sizes, 4)),
        u(mp::random_normal<double, io>(m, sizes, 5)),
        v(mp::random_normal<double, hidden>(m, sizes, 6)) {}
  mp::tensor_of<double, mp::shape<batch, io>, mesh_t> x;
  mp::tensor_of<double, mp::shape<io, hidden>, mesh_t> w;
  mp::tensor_of<double, mp::shape<batch, io, extra>, mesh_t> p;
  mp::tensor_of<double, mp::shape<batch, extra, hidden>, mesh_t> q;
  mp::tensor_of<double, mp::shape<io>, mesh_t> u;
  mp::tensor_of<double, mp::shape<hidden>, mesh_t> v;
};

// check(what, x, f): f's gradient with respect to x matches central differences
template <class X, class F>
void check(const char* what, const X& x, F f) {
  check_gradient(what, x, f);
}

// for_each_mesh(f): f(mesh) on every mesh shape of the world
template <class F>
void for_each_mesh(F f) {
  for (const auto& shape : mesh_shapes(world().size())) f(mesh_t(shape));
}

}  // namespace grad_einsum

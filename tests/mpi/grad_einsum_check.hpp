// Shared by grad_einsum.cpp, grad_einsum_forms.cpp and grad_einsum_self.cpp: the tensors, the mesh
// and the check of einsum gradients by central differences (double) at every element.
//
// One mesh type (axes<rows, cols, planes>, rules batch:rows, io:cols, extra:planes; hidden
// whole) keeps the compile time to one instantiation per case; the layouts vary at run time
// instead: every mesh shape the rank count allows is tried, so each split dim is split on some
// shapes and whole (a mesh dim of size 1) on others, alone or together with the others.
#pragma once

#include <meshpp/autodiff/einsum.hpp>
#include <meshpp/autodiff/elementwise.hpp>
#include <meshpp/autodiff/gradients.hpp>
#include <meshpp/autodiff/reduce.hpp>
#include <meshpp/core/create.hpp>

#include <array>
#include <cstddef>
#include <vector>

#include "gradcheck.hpp"
#include "testing.hpp"

namespace mp = meshpp;
using meshpp_test::gradient_error;
using meshpp_test::weighted_sum;
using meshpp_test::world;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(extra);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(planes);

namespace grad_einsum {

const auto sizes = mp::extents{batch{} = 4, io{} = 4, hidden{} = 3, extra{} = 2};
using rules = mp::layout<mp::split<batch, rows>, mp::split<io, cols>, mp::split<extra, planes>>;
using mesh_t = mp::mesh<mp::axes<rows, cols, planes>, rules>;
constexpr double tol = 1e-7;

// Every mesh shape [rows, cols, planes] of n ranks whose sizes divide the dims they split
// (batch 4, io 4, extra 2).
inline std::vector<std::array<int, 3>> mesh_shapes(int n) {
  std::vector<std::array<int, 3>> out;
  for (int a = 1; a <= n; ++a) {
    for (int b = 1; a * b <= n; ++b) {
      if (n % (a * b) != 0) continue;
      const int c = n / (a * b);
      if (4 % a == 0 && 4 % b == 0 && 2 % c == 0) out.push_back({a, b, c});
    }
  }
  return out;
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
  CAPTURE(what);
  CAPTURE(x.mesh().describe());
  CHECK(gradient_error(x, f) < tol);
}

// for_each_mesh(f): f(mesh) on every mesh shape of the world
template <class F>
void for_each_mesh(F f) {
  for (const auto& shape : mesh_shapes(world().size())) f(mesh_t(shape));
}

}  // namespace grad_einsum

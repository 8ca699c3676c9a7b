// einsum_local: meshpp's local einsum (replicated layout, so no communication) against a raw
// cblas_sgemm on the same data into a preallocated output: the four operand storage orders of
// a matrix product, and a batched product (one gemm per batch index on both sides).
#include <meshpp/meshpp.hpp>

#include <cblas.h>

#include <cmath>
#include <string>

#include "bench.hpp"

namespace mp = meshpp;
MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(batch);
MESHPP_DIM(all);

using mesh_t = mp::mesh<mp::axes<all>>;

template <class T>
void check_close(const T& got, const T& want, const char* what) {
  float worst = 0;
  for (std::size_t e = 0; e < got.size(); ++e) {
    worst = std::max(worst, std::abs(got.data()[e] - want.data()[e]));
  }
  if (worst > 1e-3f)
    throw mp::error(std::string("einsum_local: ") + what + " differs from cblas_sgemm");
}

// a in order SA ([i,k] or [k,i]), b in order SB ([k,j] or [j,k]); out [i, j]
template <class SA, class SB>
void matmul(const mesh_t& mesh, std::size_t m, std::size_t n, std::size_t kk, const char* name) {
  const auto sizes = mp::extents{i{} = m, j{} = n, k{} = kk};
  const auto a = mp::random_normal<mp::tensor_of<float, SA, mesh_t>>(mesh, sizes, 1);
  const auto b = mp::random_normal<mp::tensor_of<float, SB, mesh_t>>(mesh, sizes, 2);
  constexpr bool ta = std::is_same_v<SA, mp::shape<k, i>>;
  constexpr bool tb = std::is_same_v<SB, mp::shape<j, k>>;
  xt::xtensor<float, 2> c({m, n});
  mp::tensor_of<float, mp::shape<i, j>, mesh_t> out(mesh, sizes);

  const auto t = bench::compare(
      mesh.world(), [&] { out = mp::einsum<mp::shape<i, j>>(a, b); },
      [&] {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<int>(m), static_cast<int>(n), static_cast<int>(kk), 1.0f,
                    a.local().data(), static_cast<int>(ta ? m : kk), b.local().data(),
                    static_cast<int>(tb ? kk : n), 0.0f, c.data(), static_cast<int>(n));
      });
  check_close(out.local(), c, name);
  bench::print(mesh.world(), "einsum_local",
               std::string(name) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                   std::to_string(kk),
               "cblas_sgemm", t);
}

void batched(const mesh_t& mesh, std::size_t nb, std::size_t m, std::size_t n, std::size_t kk) {
  const auto sizes = mp::extents{batch{} = nb, i{} = m, j{} = n, k{} = kk};
  const auto a = mp::random_normal<float, batch, i, k>(mesh, sizes, 1);
  const auto b = mp::random_normal<float, batch, k, j>(mesh, sizes, 2);
  xt::xtensor<float, 3> c({nb, m, n});
  mp::tensor_of<float, mp::shape<batch, i, j>, mesh_t> out(mesh, sizes);
  const auto t = bench::compare(
      mesh.world(), [&] { out = mp::einsum<mp::shape<batch, i, j>>(a, b); },
      [&] {
        for (std::size_t q = 0; q < nb; ++q) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
                      static_cast<int>(n), static_cast<int>(kk), 1.0f,
                      a.local().data() + q * m * kk, static_cast<int>(kk),
                      b.local().data() + q * kk * n, static_cast<int>(n), 0.0f,
                      c.data() + q * m * n, static_cast<int>(n));
        }
      });
  check_close(out.local(), c, "batched");
  bench::print(mesh.world(), "einsum_local",
               "bik,bkj->bij " + std::to_string(nb) + "x" + std::to_string(m) + "x" +
                   std::to_string(n) + "x" + std::to_string(kk),
               "cblas_sgemm per batch", t);
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  mesh_t mesh({boost::mpi::communicator().size()});
  for (std::size_t s : {256, 1024}) {
    matmul<mp::shape<i, k>, mp::shape<k, j>>(mesh, s, s, s, "ik,kj->ij");
    matmul<mp::shape<k, i>, mp::shape<k, j>>(mesh, s, s, s, "ki,kj->ij");
    matmul<mp::shape<i, k>, mp::shape<j, k>>(mesh, s, s, s, "ik,jk->ij");
    matmul<mp::shape<k, i>, mp::shape<j, k>>(mesh, s, s, s, "ki,jk->ij");
  }
  batched(mesh, 32, 128, 128, 128);
  return 0;
}

// einsum_distributed: distributed matrix products C[i, j] = sum_k A[i, k] B[k, j] of n x n
// floats under the layouts a user picks, against ScaLAPACK's psgemm on the same global
// matrices (when built with it: Debian's libscalapack-openmpi-dev) and against the physical
// limit here, the single-core cblas_sgemm rate times the ranks (every rank runs the whole
// product's sgemm at once; the limit is that time over the ranks).
//
// Cases, on a 1-D mesh `all` of every rank (p ranks):
//   replicated B         A[i/all, k]  x B[k, j]      -> C[i/all, j]   no communication
//   reduce-scattered C   A[i, k/all]  x B[k/all, j]  -> C[i/all, j]   einsum<.., split<i, all>>
//   allreduced C         A[i, k/all]  x B[k/all, j]  -> C[i, j]
//   allgathered A        A[i, k/all]  x B[k, j/all]  -> C[i, j/all]   relayout A to [i, k] first
//   operands moved       A[i, k/all]  x B[k/all, j]  -> C[i/all, j]   k = n/8: einsum moves A and
//                                                                     B instead of partial sums
// and on a 2-D mesh rows x cols (4 ranks: 2 x 2):
//   2-D, k split         A[i/rows, k/cols] x B[k/cols, j] -> C[i/rows, j/cols]
//
// psgemm runs on a 1 x p and a p x 1 process grid (2-D: the mesh's grid), with square blocks
// of n/p (one block per rank along the split dim) and of 256 and 64; the fastest of these
// configurations in a first timing is the baseline, and the line names it. Its result is
// compared once with meshpp's (max_abs_diff). meshpp, psgemm and the limit's sgemm alternate,
// repetitions >= 5, medians (as bench.hpp's compare). One JSON line per case.
//   mpiexec -n 2 build/bench/einsum_distributed [--n 2048[,4096...]] [--two-dim-only]
// (--n given again adds sizes too: --n 2048 --n 4096)
#include <meshpp/meshpp.hpp>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench.hpp"
#include "cli.hpp"

#ifdef MESHPP_BENCH_HAVE_SCALAPACK
extern "C" {
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int rows, int cols);
void Cblacs_gridinfo(int context, int* rows, int* cols, int* row, int* col);
void Cblacs_gridexit(int context);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb,
               const int* irsrc, const int* icsrc, const int* ictxt, const int* lld, int* info);
void psgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const float* alpha, const float* a, const int* ia, const int* ja, const int* desca,
             const float* b, const int* ib, const int* jb, const int* descb, const float* beta,
             float* c, const int* ic, const int* jc, const int* descc);
}
#endif

namespace mp = meshpp;
MESHPP_DIM(i);
MESHPP_DIM(j);
MESHPP_DIM(k);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);

namespace {

using mesh1 = mp::mesh<mp::axes<all>>;
using mesh2 = mp::mesh<mp::axes<rows, cols>>;
template <class Mesh, class Rules, class... Dims>
using tensor_t =
    mp::tensor<float, mp::shape<Dims...>, mp::layout_for_t<Rules, mp::shape<Dims...>>, Mesh>;

using global_t = xt::xtensor<float, 2>;

double max_over_ranks(const boost::mpi::communicator& comm, double mine) {
  double worst = 0;
  boost::mpi::all_reduce(comm, mine, worst, boost::mpi::maximum<double>());
  return worst;
}

// The physical limit: every rank multiplies the whole m x k by k x n at once on its own core
// (sgemm_everywhere); the slowest rank's time over the ranks is the time p cores need for the
// product. It is timed interleaved with meshpp and psgemm (interleaved below), so that load
// from elsewhere falls on all three alike.
struct sgemm_everywhere {
  const global_t& a;
  const global_t& b;
  global_t c;
  sgemm_everywhere(const global_t& a_, const global_t& b_)
      : a(a_), b(b_), c(std::array<std::size_t, 2>{a_.shape()[0], b_.shape()[1]}) {}
  void operator()() {
    const int m = static_cast<int>(a.shape()[0]), k = static_cast<int>(a.shape()[1]),
              n = static_cast<int>(b.shape()[1]);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                0.0f, c.data(), n);
  }
};

// interleaved(comm, fs...): each of fs timed in turn (as bench::compare times two), warmed up,
// repeated for about a second of the slowest, at least 5 times: the medians
template <class... F>
std::array<double, sizeof...(F)> interleaved(const boost::mpi::communicator& comm, F&... fs) {
  double once = 0;
  ((once = std::max(once, bench::timed(comm, fs))), ...);
  const int reps = bench::reps_for(once, 1.0);
  std::array<std::vector<double>, sizeof...(F)> t;
  for (int r = 0; r < reps; ++r) {
    std::size_t i = 0;
    ((t[i++].push_back(bench::timed(comm, fs))), ...);
  }
  std::array<double, sizeof...(F)> medians{};
  for (std::size_t i = 0; i < sizeof...(F); ++i) medians[i] = bench::median(t[i]);
  return medians;
}

#ifdef MESHPP_BENCH_HAVE_SCALAPACK
/// One matrix block-cyclically distributed on a BLACS grid, mb x mb blocks, column-major.
struct distributed_matrix {
  int rows = 0, cols = 0, local_rows = 0, local_cols = 0;
  int desc[9] = {};
  std::vector<float> values;

  distributed_matrix(int r, int c, int mb, int context, int prow, int pcol, int myrow, int mycol)
      : rows(r), cols(c) {
    const int zero = 0;
    local_rows = numroc_(&rows, &mb, &myrow, &zero, &prow);
    local_cols = numroc_(&cols, &mb, &mycol, &zero, &pcol);
    const int lld = std::max(1, local_rows);
    int info = 0;
    descinit_(desc, &rows, &cols, &mb, &mb, &zero, &zero, &context, &lld, &info);
    if (info != 0) throw mp::error("einsum_distributed: descinit_ failed");
    values.assign(static_cast<std::size_t>(lld) * static_cast<std::size_t>(local_cols), 0.0f);
  }
  std::size_t at(int li, int lj) const {
    return static_cast<std::size_t>(lj) * static_cast<std::size_t>(std::max(1, local_rows)) +
           static_cast<std::size_t>(li);
  }
};

/// psgemm on a prow x pcol grid with square mb x mb blocks, of the global row-major a and b.
class scalapack_product {
 public:
  scalapack_product(const global_t& a, const global_t& b, int prow, int pcol, int mb)
      : m_(static_cast<int>(a.shape()[0])),
        n_(static_cast<int>(b.shape()[1])),
        k_(static_cast<int>(a.shape()[1])),
        mb_(mb),
        context_(grid(prow, pcol)),
        a_(m_, k_, mb, context_, prow_, pcol_, myrow_, mycol_),
        b_(k_, n_, mb, context_, prow_, pcol_, myrow_, mycol_),
        c_(m_, n_, mb, context_, prow_, pcol_, myrow_, mycol_) {
    fill(a_, a);
    fill(b_, b);
  }
  ~scalapack_product() { Cblacs_gridexit(context_); }
  scalapack_product(const scalapack_product&) = delete;
  scalapack_product& operator=(const scalapack_product&) = delete;

  void run() {
    const int one = 1;
    const float alpha = 1, beta = 0;
    psgemm_("N", "N", &m_, &n_, &k_, &alpha, a_.values.data(), &one, &one, a_.desc,
            b_.values.data(), &one, &one, b_.desc, &beta, c_.values.data(), &one, &one, c_.desc);
  }
  // max_abs_diff(want): the largest difference of this rank's part of C from the global want
  double max_abs_diff(const global_t& want) const {
    double d = 0;
    for (int lj = 0; lj < c_.local_cols; ++lj)
      for (int li = 0; li < c_.local_rows; ++li)
        d = std::max(d, std::abs(static_cast<double>(c_.values[c_.at(li, lj)]) -
                                 want(global(li, myrow_, prow_), global(lj, mycol_, pcol_))));
    return d;
  }
  std::string name() const {
    return "psgemm grid " + std::to_string(prow_) + "x" + std::to_string(pcol_) + " NB " +
           std::to_string(mb_);
  }

 private:
  int grid(int prow, int pcol) {
    int context = 0;
    Cblacs_get(0, 0, &context);
    Cblacs_gridinit(&context, "Row", prow, pcol);
    Cblacs_gridinfo(context, &prow_, &pcol_, &myrow_, &mycol_);
    return context;
  }
  std::size_t global(int l, int me, int procs) const {
    return static_cast<std::size_t>(((l / mb_) * procs + me) * mb_ + l % mb_);
  }
  void fill(distributed_matrix& x, const global_t& whole) const {
    for (int lj = 0; lj < x.local_cols; ++lj)
      for (int li = 0; li < x.local_rows; ++li)
        x.values[x.at(li, lj)] = whole(global(li, myrow_, prow_), global(lj, mycol_, pcol_));
  }

  int m_, n_, k_, mb_;
  int prow_ = 0, pcol_ = 0, myrow_ = 0, mycol_ = 0;
  int context_;
  distributed_matrix a_, b_, c_;
};

// The fastest psgemm configuration of the grids and block sizes given, timed once each.
struct psgemm_choice {
  int prow, pcol, mb;
};
psgemm_choice fastest_psgemm(const boost::mpi::communicator& comm, const global_t& a,
                             const global_t& b, std::vector<psgemm_choice> tries) {
  psgemm_choice best = tries.front();
  double best_t = 1e300;
  for (const auto& c : tries) {
    scalapack_product s(a, b, c.prow, c.pcol, c.mb);
    s.run();  // warm up
    const double t = bench::timed(comm, [&] { s.run(); });
    if (t < best_t) best_t = t, best = c;
  }
  return best;
}
#endif

void print(const boost::mpi::communicator& comm, const std::string& name,
           const std::string& baseline, const bench::times& t, double limit_s,
           double max_abs_diff) {
  if (comm.rank() != 0) return;
  std::printf(
      "{\"bench\": \"einsum_distributed\", \"case\": \"%s\", \"ranks\": %d, \"meshpp_s\": %.6e, "
      "\"baseline\": \"%s\", \"baseline_s\": %.6e, \"time_ratio\": %.4f, "
      "\"sgemm_x_ranks_s\": %.6e, \"fraction_of_sgemm_x_ranks\": %.4f, \"max_abs_diff\": %.3e}\n",
      name.c_str(), comm.size(), t.meshpp_s, baseline.c_str(), t.baseline_s,
      t.meshpp_s / t.baseline_s, limit_s, limit_s / t.meshpp_s, max_abs_diff);
  std::fflush(stdout);
}

// run_case(mesh, name, a, b, grids, product): times product() (meshpp, returning C as a
// tensor) against the fastest psgemm of `grids` on the same global A and B, and the limit.
template <class Mesh, class A, class B, class Product>
void run_case(const Mesh& mesh, const std::string& name, const A& a, const B& b,
              [[maybe_unused]] const std::vector<std::array<int, 2>>& grids, Product&& product) {
  const auto& comm = mesh.world();
  const global_t ga = mp::gather(a), gb = mp::gather(b);
  const global_t want = mp::gather(product());
  const std::size_t m = ga.shape()[0], n = gb.shape()[1], k = ga.shape()[1];
  // meshpp's own check against a plain sgemm of the global matrices on every rank
  {
    global_t c({m, n});
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, ga.data(), static_cast<int>(k), gb.data(),
                static_cast<int>(n), 0.0f, c.data(), static_cast<int>(n));
    double d = 0;
    for (std::size_t e = 0; e < c.size(); ++e)
      d = std::max(d, static_cast<double>(std::abs(c.data()[e] - want.data()[e])));
    if (max_over_ranks(comm, d) > 1e-2)
      throw mp::error("einsum_distributed: " + name + " differs from cblas_sgemm by " +
                      std::to_string(d));
  }
  const std::string label =
      name + (m == n && n == k ? " n " + std::to_string(n)
                               : " m n k " + std::to_string(m) + " " + std::to_string(n) + " " +
                                     std::to_string(k));
#ifdef MESHPP_BENCH_HAVE_SCALAPACK
  std::vector<psgemm_choice> tries;
  for (const auto& g : grids) {
    const int blocks = std::max(g[0], g[1]);
    for (int mb : {static_cast<int>(std::max(m, n)) / blocks, 256, 64}) {
      if (mb > 0 && (tries.empty() || mb != tries.back().mb)) tries.push_back({g[0], g[1], mb});
    }
  }
  const psgemm_choice best = fastest_psgemm(comm, ga, gb, tries);
  scalapack_product s(ga, gb, best.prow, best.pcol, best.mb);
  s.run();
  const double diff = max_over_ranks(comm, s.max_abs_diff(want));
  auto meshpp = [&] { (void)product(); };
  auto psgemm = [&] { s.run(); };
  sgemm_everywhere limit(ga, gb);
  const auto t = interleaved(comm, meshpp, psgemm, limit);
  print(comm, label, s.name(), {t[0], t[1]}, t[2] / comm.size(), diff);
#else
  // No ScaLAPACK: the limit is the only baseline.
  auto meshpp = [&] { (void)product(); };
  sgemm_everywhere limit(ga, gb);
  const auto t = interleaved(comm, meshpp, limit);
  const double limit_s = t[1] / comm.size();
  print(comm, label, "sgemm x ranks (no ScaLAPACK)", {t[0], limit_s}, limit_s, 0.0);
#endif
}

void one_dim_cases(std::size_t n) {
  const auto& world = boost::mpi::communicator();
  const int p = world.size();
  const mesh1 mesh({p});
  const auto sizes = mp::extents{i{} = n, j{} = n, k{} = n};
  const std::vector<std::array<int, 2>> grids{{1, p}, {p, 1}};
  using i_all = mp::layout<mp::split<i, all>>;
  using k_all = mp::layout<mp::split<k, all>>;
  using j_all = mp::layout<mp::split<j, all>>;
  {
    const auto a = mp::random_normal<tensor_t<mesh1, i_all, i, k>>(mesh, sizes, 1);
    const auto b = mp::random_normal<tensor_t<mesh1, mp::layout<>, k, j>>(mesh, sizes, 2);
    run_case(mesh, "A[i/all, k] B[k, j] -> C[i/all, j] (B replicated)", a, b, grids,
             [&] { return mp::einsum<mp::shape<i, j>>(a, b); });
  }
  {
    const auto a = mp::random_normal<tensor_t<mesh1, k_all, i, k>>(mesh, sizes, 1);
    const auto b = mp::random_normal<tensor_t<mesh1, k_all, k, j>>(mesh, sizes, 2);
    run_case(mesh, "A[i, k/all] B[k/all, j] -> C[i/all, j] (reduce-scattered)", a, b, grids,
             [&] { return mp::einsum<mp::shape<i, j>, i_all>(a, b); });
    run_case(mesh, "A[i, k/all] B[k/all, j] -> C[i, j/all] (reduce-scattered)", a, b, grids,
             [&] { return mp::einsum<mp::shape<i, j>, j_all>(a, b); });
    run_case(mesh, "A[i, k/all] B[k/all, j] -> C[i, j] (allreduced)", a, b, grids,
             [&] { return mp::einsum<mp::shape<i, j>>(a, b); });
  }
  {
    const auto a = mp::random_normal<tensor_t<mesh1, k_all, i, k>>(mesh, sizes, 1);
    const auto b = mp::random_normal<tensor_t<mesh1, j_all, k, j>>(mesh, sizes, 2);
    run_case(mesh, "A[i, k/all] B[k, j/all] -> C[i, j/all] (A allgathered)", a, b, grids,
             [&] { return mp::einsum<mp::shape<i, j>>(mp::relayout<mp::layout<>>(a), b); });
  }
  {  // a rank-k update (k = n/8): moving the operands sends fewer values than the partial sums
    const auto thin = mp::extents{i{} = n, j{} = n, k{} = n / 8};
    const auto a = mp::random_normal<tensor_t<mesh1, k_all, i, k>>(mesh, thin, 1);
    const auto b = mp::random_normal<tensor_t<mesh1, k_all, k, j>>(mesh, thin, 2);
    run_case(mesh, "A[i, k/all] B[k/all, j] -> C[i/all, j] (operands moved)", a, b, grids,
             [&] { return mp::einsum<mp::shape<i, j>, i_all>(a, b); });
  }
}

void two_dim_cases(std::size_t n) {
  const auto& world = boost::mpi::communicator();
  const auto g = mp::balanced_grid<2>(world.size());
  if (g[0] == 1 || g[1] == 1) return;  // not a 2-D mesh at this rank count
  const mesh2 mesh(g);
  const auto sizes = mp::extents{i{} = n, j{} = n, k{} = n};
  using rules = mp::layout<mp::split<i, rows>, mp::split<k, cols>>;
  const auto a = mp::random_normal<tensor_t<mesh2, rules, i, k>>(mesh, sizes, 1);
  const auto b = mp::random_normal<tensor_t<mesh2, rules, k, j>>(mesh, sizes, 2);
  using out_rules = mp::layout<mp::split<i, rows>, mp::split<j, cols>>;
  run_case(mesh, "A[i/rows, k/cols] B[k/cols, j] -> C[i/rows, j/cols] (2-D, k split)", a, b,
           {{g[0], g[1]}}, [&] { return mp::einsum<mp::shape<i, j>, out_rules>(a, b); });
}

}  // namespace

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  std::vector<std::size_t> sizes{2048};
  bool two_dim_only = false;
  examples::cli cli("bench/einsum_distributed",
                    "distributed n x n matrix products under several layouts against ScaLAPACK's "
                    "psgemm and the sgemm rate x ranks; one JSON line per case");
  cli.add("--n", sizes, "the matrices' size, at least 1");
  cli.add("--two-dim-only", two_dim_only, "only the 2-D mesh case");
  cli.parse(argc, argv);
  for (const std::size_t n : sizes)
    if (n == 0) cli.fail("--n must be at least 1");
#ifndef MESHPP_BENCH_HAVE_SCALAPACK
  if (boost::mpi::communicator().rank() == 0)
    std::fprintf(stderr,
                 "note: built without ScaLAPACK (Debian's libscalapack-openmpi-dev): no psgemm "
                 "baseline, only the sgemm x ranks limit\n");
#endif
  for (std::size_t n : sizes) {
    if (!two_dim_only) one_dim_cases(n);
    two_dim_cases(n);
  }
  return 0;
}

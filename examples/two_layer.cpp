// two_layer: the Mesh-TensorFlow paper's two fully-connected layers (section 8), forward and
// backward, under each of the five layouts of its Table 1 that fit the number of ranks n:
//
//   []                                   mesh all:n
//   [batch:all]                          mesh all:n          data-parallel
//   [hidden:all]                         mesh all:n          model-parallel
//   [batch:rows, hidden:cols]            squarest rows x cols = n
//   [batch:rows, hidden:cols, io:planes] most cubic rows x cols x planes = n
//
// For each it counts the values allreduced per processor (the paper's measure; exact
// formulas in shared/reference/table1.md), checks every output and gradient against a
// single-rank computation without the mesh (on rank 0), and times the step.
//
//   mpiexec -n 4 --oversubscribe build/examples/two_layer [--batch 128 --io 256 --hidden 1024]
//   [--reps 3] [--json] [--autodiff]
//
// --autodiff takes the backward pass from the gradient machinery (vjp, autodiff/) instead of
// the hand-written one: the counted values must be the same, exactly.
//
// The program is the same for every layout: only the mesh type changes.
#include <meshpp/meshpp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace mp = meshpp;

MESHPP_DIM(batch);
MESHPP_DIM(io);
MESHPP_DIM(hidden);
MESHPP_DIM(all);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(planes);

struct options {
  std::size_t b = 128, d_io = 256, d_h = 1024;
  int reps = 3;
  bool json = false;
  bool autodiff = false;  // the backward pass from vjp() instead of written by hand
};

struct result {
  std::uint64_t values_allreduced = 0, values_allreduced_forward = 0;
  double max_abs_diff = 0, seconds = 0;
};

// The single-rank reference, without the mesh: plain loops in double over whole arrays
// generated from the same (seed, global index) as the distributed tensors.
struct reference {
  std::size_t b, d_io, d_h;
  std::vector<double> y, dv, dbias, dw, dx;

  static double at(std::uint64_t seed, std::size_t i, double scale) {
    return static_cast<double>(mp::normal_at<float>(seed, i) * static_cast<float>(scale));
  }

  reference(const options& o) : b(o.b), d_io(o.d_io), d_h(o.d_h) {
    const double sw = 1 / std::sqrt(double(d_io)), sv = 1 / std::sqrt(double(d_h));
    std::vector<double> x(b * d_io), w(d_io * d_h), v(d_h * d_io), bias(d_h), dy(b * d_io);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = at(1, i, 1);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = at(2, i, sw);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = at(3, i, sv);
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = at(4, i, 0.1);
    for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = at(5, i, 1);
    std::vector<double> z(b * d_h), h(b * d_h), dz(b * d_h);
    for (std::size_t n = 0; n < b; ++n) {
      for (std::size_t k = 0; k < d_h; ++k) {
        double s = 0;
        for (std::size_t i = 0; i < d_io; ++i) s += x[n * d_io + i] * w[i * d_h + k];
        z[n * d_h + k] = s + bias[k];
        h[n * d_h + k] = std::max(0.0, z[n * d_h + k]);
      }
    }
    y.assign(b * d_io, 0);
    dx.assign(b * d_io, 0);
    dv.assign(d_h * d_io, 0);
    dw.assign(d_io * d_h, 0);
    dbias.assign(d_h, 0);
    for (std::size_t n = 0; n < b; ++n) {
      for (std::size_t k = 0; k < d_h; ++k) {
        double dh = 0;
        for (std::size_t i = 0; i < d_io; ++i) {
          y[n * d_io + i] += h[n * d_h + k] * v[k * d_io + i];
          dv[k * d_io + i] += h[n * d_h + k] * dy[n * d_io + i];
          dh += dy[n * d_io + i] * v[k * d_io + i];
        }
        dz[n * d_h + k] = z[n * d_h + k] > 0 ? dh : 0;
        dbias[k] += dz[n * d_h + k];
        for (std::size_t i = 0; i < d_io; ++i) {
          dw[i * d_h + k] += x[n * d_io + i] * dz[n * d_h + k];
          dx[n * d_io + i] += dz[n * d_h + k] * w[i * d_h + k];
        }
      }
    }
  }
};

template <class Array>
double max_diff(const Array& got, const std::vector<double>& want) {
  double d = 0;
  const float* p = got.data();
  for (std::size_t i = 0; i < want.size(); ++i) d = std::max(d, std::abs(double(p[i]) - want[i]));
  return d;
}

// One training step's worth of math under the mesh type Mesh.
template <class Mesh>
result run(const Mesh& mesh, const options& o, const reference* ref) {
  const auto sizes = mp::extents{batch{} = o.b, io{} = o.d_io, hidden{} = o.d_h};
  const float sw = 1 / std::sqrt(float(o.d_io)), sv = 1 / std::sqrt(float(o.d_h));
  const auto x = mp::random_normal<float, batch, io>(mesh, sizes, 1);
  const auto w = mp::random_normal<float, io, hidden>(mesh, sizes, 2, 0.0f, sw);
  const auto v = mp::random_normal<float, hidden, io>(mesh, sizes, 3, 0.0f, sv);
  const auto bias = mp::random_normal<float, hidden>(mesh, sizes, 4, 0.0f, 0.1f);
  const auto dy = mp::random_normal<float, batch, io>(mesh, sizes, 5);

  using bh = mp::shape<batch, hidden>;
  using bi = mp::shape<batch, io>;
  auto step = [&](std::uint64_t* forward_values) {
    // forward
    auto pre = mp::einsum<bh>(x, w);  // contracts io
    auto z = mp::eval(pre + bias);    // fused, no communication
    auto h = mp::eval(mp::relu(z));
    auto y = mp::einsum<bi>(h, v);  // contracts hidden
    if (forward_values) *forward_values = mesh.counters().values(mp::collective::allreduce);
    // backward (by hand)
    auto dv = mp::einsum<mp::shape<hidden, io>>(h, dy);  // contracts batch
    auto dh = mp::einsum<bh>(dy, v);                     // contracts io
    auto dz = mp::eval(mp::where(z > 0.0f, dh, 0.0f));   // relu'
    auto dbias = mp::reduce_sum<batch>(dz);              // reduces batch
    auto dw = mp::einsum<mp::shape<io, hidden>>(x, dz);  // contracts batch
    auto dx = mp::einsum<bi>(dz, w);                     // contracts hidden
    return std::tuple{y, dv, dbias, dw, dx};
  };
  // The same step with the backward pass from the gradient machinery: the forward ops are
  // recorded, and vjp(y, dy, ...) runs their gradients (the paper's backward pass is seeded
  // with dy, so no loss is reduced).
  const auto tx = mp::trace(x), tw = mp::trace(w), tv = mp::trace(v), tbias = mp::trace(bias);
  auto autodiff_step = [&](std::uint64_t* forward_values) {
    auto h = mp::relu(mp::einsum<bh>(tx, tw) + tbias);
    auto y = mp::einsum<bi>(h, tv);
    if (forward_values) *forward_values = mesh.counters().values(mp::collective::allreduce);
    auto [dx, dw, dv, dbias] = mp::vjp(y, dy, tx, tw, tv, tbias);
    return std::tuple{y.value(), dv, dbias, dw, dx};
  };
  result r;
  // one step, counted, and its results checked against the reference on rank 0
  auto check = [&](auto&& one_step) {
    mesh.counters().reset();
    auto [y, dv, dbias, dw, dx] = one_step(&r.values_allreduced_forward);
    r.values_allreduced = mesh.counters().values(mp::collective::allreduce);
    // gathered to rank 0, the only rank that holds the reference
    const auto gy = mp::gather(y, 0);
    const auto gdv = mp::gather(dv, 0);
    const auto gdbias = mp::gather(dbias, 0);
    const auto gdw = mp::gather(dw, 0);
    const auto gdx = mp::gather(dx, 0);
    if (ref) {
      r.max_abs_diff =
          std::max({max_diff(gy, ref->y), max_diff(gdv, ref->dv), max_diff(gdbias, ref->dbias),
                    max_diff(gdw, ref->dw), max_diff(gdx, ref->dx)});
    }
  };
  if (o.autodiff)
    check(autodiff_step);
  else
    check(step);
  mesh.world().barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.reps; ++i) {
    if (o.autodiff)
      autodiff_step(nullptr);
    else
      step(nullptr);
  }
  mesh.world().barrier();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
              std::max(1, o.reps);
  return r;
}

// rows x cols = n, as square as possible; rows x cols x planes = n, as cubic as possible
std::array<int, 2> squarest(int n) {
  int r = 1;
  for (int f = 1; f * f <= n; ++f)
    if (n % f == 0) r = f;
  return {r, n / r};
}
std::array<int, 3> most_cubic(int n) {
  std::array<int, 3> best{1, 1, n};
  for (int a = 1; a * a * a <= n; ++a) {
    if (n % a) continue;
    for (int b = a; a * b * b <= n; ++b) {
      if ((n / a) % b) continue;
      const int c = n / (a * b);
      if (c - a < best[2] - best[0]) best = {a, b, c};
    }
  }
  return best;
}

template <class Mesh>
std::string mesh_text(const Mesh& m) {
  std::string out;
  for (std::size_t i = 0; i < Mesh::ndims; ++i) {
    out += i ? ";" : "";
    out += Mesh::names()[i];
    out += ':';
    out += std::to_string(m.sizes()[i]);
  }
  return out;
}

template <class Mesh>
void report(const Mesh& mesh, const options& o, const reference* ref) {
  const result r = run(mesh, o, ref);
  if (mesh.rank() != 0) return;
  const std::string layout = mp::to_string(typename Mesh::rules{});
  if (o.json) {
    std::printf(
        "{\"layout\": \"%s\", \"mesh\": \"%s\", \"b\": %zu, \"d_io\": %zu, \"d_h\": %zu, "
        "\"values_allreduced\": %llu, \"values_allreduced_forward\": %llu, "
        "\"max_abs_diff\": %.3g, \"seconds\": %.6f}\n",
        layout.c_str(), mesh_text(mesh).c_str(), o.b, o.d_io, o.d_h,
        static_cast<unsigned long long>(r.values_allreduced),
        static_cast<unsigned long long>(r.values_allreduced_forward), r.max_abs_diff, r.seconds);
  } else {
    std::printf("%-34s %-22s %14llu %14llu %12.3g %10.4f\n", layout.empty() ? "[]" : layout.c_str(),
                mesh_text(mesh).c_str(), static_cast<unsigned long long>(r.values_allreduced),
                static_cast<unsigned long long>(r.values_allreduced_forward), r.max_abs_diff,
                r.seconds);
  }
}

int main(int argc, char** argv) {
  mp::environment env(argc, argv);
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::size_t {
      if (i + 1 >= argc) throw mp::error("two_layer: " + a + " needs a value");
      return std::stoul(argv[++i]);
    };
    if (a == "--batch")
      o.b = next();
    else if (a == "--io")
      o.d_io = next();
    else if (a == "--hidden")
      o.d_h = next();
    else if (a == "--reps")
      o.reps = static_cast<int>(next());
    else if (a == "--json")
      o.json = true;
    else if (a == "--autodiff")
      o.autodiff = true;
    else if (a == "--help") {
      std::printf(
          "usage: two_layer [--batch B] [--io D_IO] [--hidden D_H] [--reps R] [--json] "
          "[--autodiff]\n");
      return 0;
    } else {
      throw mp::error("two_layer: unknown argument '" + a + "' (try --help)");
    }
  }
  const int n = boost::mpi::communicator().size();
  // The reference is computed once, on rank 0 only.
  std::optional<reference> ref;
  if (boost::mpi::communicator().rank() == 0) ref.emplace(o);
  if (!o.json && boost::mpi::communicator().rank() == 0) {
    std::printf(
        "two fully-connected layers, b=%zu d_io=%zu d_h=%zu, %d ranks: values allreduced "
        "per processor, forward+backward and forward alone\n",
        o.b, o.d_io, o.d_h, n);
    std::printf("%-34s %-22s %14s %14s %12s %10s\n", "layout", "mesh", "fwd+bwd", "forward",
                "max|diff|", "seconds");
  }
  using namespace mp;
  report(mesh<axes<all>, layout<>>({n}), o, ref ? &*ref : nullptr);
  report(mesh<axes<all>, layout<split<batch, all>>>({n}), o, ref ? &*ref : nullptr);
  report(mesh<axes<all>, layout<split<hidden, all>>>({n}), o, ref ? &*ref : nullptr);
  report(mesh<axes<rows, cols>, layout<split<batch, rows>, split<hidden, cols>>>(squarest(n)), o,
         ref ? &*ref : nullptr);
  report(mesh<axes<rows, cols, planes>,
              layout<split<batch, rows>, split<hidden, cols>, split<io, planes>>>(most_cubic(n)),
         o, ref ? &*ref : nullptr);
  return 0;
}

// two_layer.hpp: what the parts of examples/two_layer share (see two_layer.cpp).
#pragma once

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

// The five layouts of Table 1 (the mesh fitted to the number of ranks in main)
using mesh_replicated = mp::mesh<mp::axes<all>, mp::layout<>>;
using mesh_data = mp::mesh<mp::axes<all>, mp::layout<mp::split<batch, all>>>;
using mesh_model = mp::mesh<mp::axes<all>, mp::layout<mp::split<hidden, all>>>;
using mesh_2d =
    mp::mesh<mp::axes<rows, cols>, mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>>>;
using mesh_3d =
    mp::mesh<mp::axes<rows, cols, planes>,
             mp::layout<mp::split<batch, rows>, mp::split<hidden, cols>, mp::split<io, planes>>>;

// run(mesh, o, ref): one step forward and backward under Mesh, counted, checked against ref
// (on rank 0) and timed. Defined in two_layer_run.hpp and compiled apart for each layout
// (two_layer_1d.cpp, two_layer_nd.cpp), so no translation unit holds all five.
template <class Mesh>
result run(const Mesh& mesh, const options& o, const reference* ref);
extern template result run(const mesh_replicated&, const options&, const reference*);
extern template result run(const mesh_data&, const options&, const reference*);
extern template result run(const mesh_model&, const options&, const reference*);
extern template result run(const mesh_2d&, const options&, const reference*);
extern template result run(const mesh_3d&, const options&, const reference*);

// two_layer_run.hpp: the definition of run<Mesh> (two_layer.hpp), included by the files that
// instantiate it.
#pragma once

#include "two_layer.hpp"

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
  const auto tx = mp::trace(x);  // one declarator each: `auto` deduces one type per declaration
  const auto tw = mp::trace(w);
  const auto tv = mp::trace(v);
  const auto tbias = mp::trace(bias);
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

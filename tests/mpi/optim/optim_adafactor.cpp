// Adafactor on a split layout: five steps on a vector [cols/b] (never factored), a matrix
// [rows/a, cols/b] and a rank-3 [layer, rows/a, cols/b] (factored over rows, cols) in one
// optimizer, with fixed synthetic gradients, against a single-rank reference of
// Mesh-TensorFlow's rule in plain double loops, under option sets covering: factored or not
// (sizes under min_dim_size_to_factor, factored = false), beta1 or none, clipping reached or
// not or off, parameter scale, relative step, fixed decay. Also: the communication its header
// documents, its learning rate, float variables.
#include <meshpp/optim/adafactor.hpp>

#include <cstdint>
#include <optional>
#include <utility>

#include "optim_check.hpp"

namespace mp = meshpp;
using namespace optim_check;
using meshpp_test::world;

TEST_CASE("adafactor matches a plain-loop reference, split layout") {
  split_mesh m(meshpp_test::grid2(world().size()));
  check_adafactor<mp::tensor_of<double, mp::shape<cols>, split_mesh>,
                  mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>,
                  mp::tensor_of<double, mp::shape<layer, rows, cols>, split_mesh>>(m);
}

TEST_CASE("adafactor communicates what its header says") {
  split_mesh m(meshpp_test::grid2(world().size()));
  const auto [pa, pb] = meshpp_test::grid2(world().size());
  const auto na = static_cast<std::uint64_t>(pa), nb = static_cast<std::uint64_t>(pb);
  constexpr unsigned over_a = split_mesh::mask_v<a>, over_b = split_mesh::mask_v<b>,
                     over_ab = split_mesh::mask_v<a, b>;
  using P = std::pair<std::uint64_t, std::uint64_t>;  // calls, values
  // a group of one rank counts nothing
  const std::uint64_t on_a = na > 1 ? 1 : 0, on_b = nb > 1 ? 1 : 0, on_ab = na * nb > 1 ? 1 : 0;
  auto count = [&](unsigned mask) {
    const auto& c = m.counters().at(mp::collective::allreduce, mask);
    return P{c.calls, c.values};
  };
  const mp::adafactor_options o{.min_dim_size_to_factor = 2};
  auto one_step = [&](auto& v, const mp::adafactor_options& options) {
    mp::adafactor opt(options, v.var);
    v.set_gradient(0);
    m.counters().reset();
    opt.step();
    CHECK(m.counters().total(mp::collective::allgather).calls == 0);
  };
  {
    // [rows/a, cols/b] factored: mean over cols (allreduce over b of the rows/a row stats),
    // over rows (over a, cols/b), mean_R(v_r) (over a, 1 value), two RMS (over a, b, 1 each)
    using t = mp::tensor_of<double, mp::shape<rows, cols>, split_mesh>;
    tracked<t, adafactor_reference> matrix(m, 1, adafactor_reference_for<t>(o));
    one_step(matrix, o);
    CHECK(count(over_b) == P{on_b * 1, on_b * 4 / na});
    CHECK(count(over_a) == P{on_a * 2, on_a * (6 / nb + 1)});
    CHECK(count(over_ab) == P{on_ab * 2, on_ab * 2});
    CHECK(m.counters().total(mp::collective::allreduce).calls == on_b * 1 + on_a * 2 + on_ab * 2);
  }
  {
    // [layer, rows/a, cols/b]: the same, per layer
    using t = mp::tensor_of<double, mp::shape<layer, rows, cols>, split_mesh>;
    tracked<t, adafactor_reference> cube(m, 2, adafactor_reference_for<t>(o));
    one_step(cube, o);
    CHECK(count(over_b) == P{on_b * 1, on_b * 2 * 4 / na});
    CHECK(count(over_a) == P{on_a * 2, on_a * (2 * 6 / nb + 2)});
    CHECK(count(over_ab) == P{on_ab * 2, on_ab * 2});
  }
  {
    // [cols/b] not factored: the two RMS only; without clipping and parameter scale, nothing
    using t = mp::tensor_of<double, mp::shape<cols>, split_mesh>;
    tracked<t, adafactor_reference> vector(m, 0, adafactor_reference_for<t>(o));
    one_step(vector, o);
    CHECK(count(over_b) == P{on_b * 2, on_b * 2});
    CHECK(m.counters().total(mp::collective::allreduce).calls == on_b * 2);
    one_step(vector, {.learning_rate = 0.1,
                      .clipping_threshold = std::nullopt,
                      .multiply_by_parameter_scale = false});
    CHECK(m.counters().total(mp::collective::allreduce).calls == 0);
  }
}

TEST_CASE("adafactor learning rate: relative step, or fixed") {
  mp::adafactor opt;
  CHECK(opt.learning_rate() == 1e-2);
  CHECK(mp::adafactor({.multiply_by_parameter_scale = false}).learning_rate() == 1e-2 * 0.05);
  opt.set_learning_rate(0.25);
  CHECK(opt.learning_rate() == 0.25);
  CHECK(opt.options().learning_rate == 0.25);
}

TEST_CASE("adafactor on float variables") {
  split_mesh m(meshpp_test::grid2(world().size()));
  using t = mp::tensor_of<float, mp::shape<rows, cols>, split_mesh>;
  const mp::adafactor_options o{.beta1 = 0.9, .min_dim_size_to_factor = 2};
  tracked<t, adafactor_reference> matrix(m, 1, adafactor_reference_for<t>(o));
  for (auto& x : matrix.p) x = static_cast<float>(x);
  mp::adafactor opt(o);
  run(opt, schedule{.halve_rate = false, .local_only = false, .tolerance = 1e-5}, matrix);
}

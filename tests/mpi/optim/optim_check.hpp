// Shared by the optimizer tests: synthetic parameters and gradients (functions of the global
// index, different at every step), single-rank references of every update rule in plain
// double loops over std::vector (independent of meshpp), and a tracked variable that runs
// beside its reference.
#pragma once

#include <meshpp/autodiff/traced.hpp>
#include <meshpp/core/create.hpp>
#include <meshpp/ops/scatter_gather.hpp>
#include <meshpp/optim/adafactor.hpp>
#include <meshpp/optim/adam.hpp>
#include <meshpp/optim/sgd.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "testing.hpp"

MESHPP_DIM(layer);
MESHPP_DIM(rows);
MESHPP_DIM(cols);
MESHPP_DIM(a);  // mesh dims
MESHPP_DIM(b);

namespace optim_check {

namespace mp = meshpp;

inline const auto sizes = mp::extents{layer{} = 2, rows{} = 4, cols{} = 6};
using split_mesh = mp::mesh<mp::axes<a, b>, mp::layout<mp::split<rows, a>, mp::split<cols, b>>>;
using replicated_mesh = mp::mesh<mp::axes<a, b>, mp::layout<>>;
using leading_split_mesh =
    mp::mesh<mp::axes<a, b>, mp::layout<mp::split<layer, a>, mp::split<cols, b>>>;
inline constexpr double tol = 1e-12;

// initial(i, which): variable `which`'s initial value at global row-major index i
inline double initial(std::uint64_t i, int which) {
  return std::sin(0.37 * static_cast<double>(i) + which) * (1.0 + static_cast<double>(i % 3));
}
// gradient(i, which, k): its gradient at step k (scales varying along the last dim, so
// Adafactor's factors matter)
inline double gradient(std::uint64_t i, int which, int k) {
  return std::cos(0.53 * static_cast<double>(i) + 1.7 * k + which) *
         (0.5 + 0.3 * k + 0.2 * static_cast<double>(i % 6));
}

// filled<Tensor>(mesh, f): f(global row-major index) at every element
template <class Tensor, class F>
Tensor filled(const typename Tensor::mesh_type& m, F f) {
  Tensor t(m, sizes);
  mp::detail::for_each_element(t, [&](auto& x, const auto&, std::uint64_t i) {
    x = static_cast<typename Tensor::value_type>(f(i));
  });
  return t;
}

// max_error(t, ref): the largest |t - ref| over the whole (gathered) tensor, on every rank
template <class Tensor>
double max_error(const Tensor& t, const std::vector<double>& ref) {
  const auto whole = mp::gather(t);
  if (whole.size() != ref.size()) return 1e300;
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double err = std::abs(static_cast<double>(whole.data()[i]) - ref[i]);
    if (!(err <= worst)) worst = err;  // a NaN is the worst error, never skipped
  }
  return worst;
}

inline double rms(const std::vector<double>& x) {
  double s = 0;
  for (double e : x) s += e * e;
  return std::sqrt(s / static_cast<double>(x.size()));
}

// The references, each a step(p, g) on whole vectors, written from the rules in the headers.
struct sgd_reference {
  double lr, momentum;
  bool nesterov;
  double weight_decay;
  std::vector<double> buffer{};
  void step(std::vector<double>& p, const std::vector<double>& g) {
    buffer.resize(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double d = g[i] + weight_decay * p[i];
      if (momentum == 0) {
        p[i] -= lr * d;
        continue;
      }
      buffer[i] = momentum * buffer[i] + d;
      p[i] -= lr * (nesterov ? d + momentum * buffer[i] : buffer[i]);
    }
  }
};

struct adam_reference {
  double lr, beta1, beta2, epsilon, weight_decay;
  std::vector<double> m{}, v{};
  int t = 0;
  void step(std::vector<double>& p, const std::vector<double>& g) {
    m.resize(p.size(), 0.0);
    v.resize(p.size(), 0.0);
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = beta1 * m[i] + (1 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      const double v_hat = v[i] / (1 - std::pow(beta2, t));
      p[i] -= lr * (m_hat / (std::sqrt(v_hat) + epsilon) + weight_decay * p[i]);
    }
  }
};

// Mesh-TensorFlow's AdafactorOptimizer.apply_grad in plain loops, for a variable of shape
// [L, R, C] (L = 1 for a matrix; a vector is [1, 1, C], never factored).
struct adafactor_reference {
  mp::adafactor_options o;
  std::size_t L, R, C;
  bool factored;
  std::vector<double> vr{}, vc{}, v{}, m{};
  int t = 0;

  void step(std::vector<double>& p, const std::vector<double>& g) {
    const std::size_t n = p.size();
    ++t;
    const double decay = o.decay_rate ? *o.decay_rate : 1 - std::pow(t, -o.decay_exponent);
    double rate = o.learning_rate ? *o.learning_rate
                                  : std::min(1e-2, 1 / std::sqrt(static_cast<double>(t))) *
                                        (o.multiply_by_parameter_scale ? 1 : 0.05);
    if (o.multiply_by_parameter_scale) rate *= std::max(rms(p), o.epsilon2);
    std::vector<double> x(n);
    auto at = [&](std::size_t l, std::size_t r, std::size_t c) { return (l * R + r) * C + c; };
    if (factored) {
      vr.resize(L * R, 0.0);
      vc.resize(L * C, 0.0);
      for (std::size_t l = 0; l < L; ++l) {
        for (std::size_t r = 0; r < R; ++r) {
          double s = 0;
          for (std::size_t c = 0; c < C; ++c) s += g[at(l, r, c)] * g[at(l, r, c)] + o.epsilon1;
          vr[l * R + r] = decay * vr[l * R + r] + (1 - decay) * (s / static_cast<double>(C));
        }
        for (std::size_t c = 0; c < C; ++c) {
          double s = 0;
          for (std::size_t r = 0; r < R; ++r) s += g[at(l, r, c)] * g[at(l, r, c)] + o.epsilon1;
          vc[l * C + c] = decay * vc[l * C + c] + (1 - decay) * (s / static_cast<double>(R));
        }
        double mean = 0;
        for (std::size_t r = 0; r < R; ++r) mean += vr[l * R + r];
        mean /= static_cast<double>(R);
        for (std::size_t r = 0; r < R; ++r) {
          for (std::size_t c = 0; c < C; ++c) {
            x[at(l, r, c)] = g[at(l, r, c)] * (1 / std::sqrt(vr[l * R + r] / mean)) *
                             (1 / std::sqrt(vc[l * C + c]));
          }
        }
      }
    } else {
      v.resize(n, 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        v[i] = decay * v[i] + (1 - decay) * (g[i] * g[i] + o.epsilon1);
        x[i] = g[i] / std::sqrt(v[i]);
      }
    }
    if (o.clipping_threshold) {
      const double denominator = std::max(1.0, rms(x) / *o.clipping_threshold);
      for (double& e : x) e /= denominator;
    }
    m.resize(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      double u = rate * x[i];
      if (o.beta1 != 0) {
        m[i] = o.beta1 * m[i] + (1 - o.beta1) * u;
        u = m[i];
      }
      p[i] -= u;
    }
  }
};

// adafactor_reference_for<Tensor>(o): the reference for a variable of Tensor's dims
template <class Tensor>
adafactor_reference adafactor_reference_for(const mp::adafactor_options& o) {
  using S = typename Tensor::shape_type;
  adafactor_reference ref{o, 1, 1, 1, false};
  ref.C = sizes.get<mp::dim_at_t<S, S::rank - 1>>();
  if constexpr (S::rank >= 2) ref.R = sizes.get<mp::dim_at_t<S, S::rank - 2>>();
  if constexpr (S::rank >= 3) ref.L = sizes.get<mp::dim_at_t<S, 0>>();
  ref.factored = S::rank >= 2 && o.factored && ref.R >= o.min_dim_size_to_factor &&
                 ref.C >= o.min_dim_size_to_factor;
  return ref;
}

// tracked<Tensor, Ref>: variable `which` of type Tensor and its reference
template <class Tensor, class Ref>
struct tracked {
  int which;
  mp::variable<Tensor> var;
  std::vector<double> p;
  Ref ref;
  bool stale = false;  // sharded updates left its state in shares (optimizer_slot::apply)
  int updates = 0;     // the optimizer's updates of it so far

  tracked(const typename Tensor::mesh_type& m, int w, Ref r)
      : which(w),
        var(filled<Tensor>(m, [w](auto i) { return initial(i, w); }), std::to_string(w)),
        ref(std::move(r)) {
    std::size_t n = 1;
    for (auto s : var.value().global_shape()) n *= s;
    for (std::size_t i = 0; i < n; ++i) p.push_back(initial(i, w));
  }
  void set_gradient(int k) {
    var.grad() = filled<Tensor>(var.value().mesh(), [&](auto i) { return gradient(i, which, k); });
  }
  void reference_step(int k) {
    std::vector<double> g(p.size());
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = gradient(i, which, k);
    ref.step(p, g);
  }
  double error() const { return max_error(var.value(), p); }
};

// shared_update<Tensor>(v): the allgather a sharded update of v makes (Adam's and AdamW's:
// optimizer_slot::apply), restated: none when v is split over every mesh dim or its replicas
// are one rank (a group of one counts nothing); else the p
// replicas (the ranks differing only in the mesh dims v does not use) take shares of the n
// local elements in whole chunks of 16: of the C = ceil(n / 16) chunks, the first C mod p
// shares hold floor(C / p) + 1 and the others floor(C / p), the last share ending at n: the
// values are this rank's share, the bytes sent the others' shares.
struct gather_count {
  std::uint64_t calls = 0, values = 0, bytes = 0;
  std::uint64_t replicas = 1;
  void add(const gather_count& c) {
    calls += c.calls;
    values += c.values;
    bytes += c.bytes;
  }
};
template <class Tensor>
gather_count shared_update(const Tensor& v) {
  using Mesh = typename Tensor::mesh_type;
  const unsigned all = (1u << Mesh::ndims) - 1;
  const unsigned mask = all & ~Tensor::split_mask();
  if (mask == 0) return {};
  const auto& m = v.mesh();
  const auto p = static_cast<std::uint64_t>(m.group_size(mask));
  if (p == 1) return {};  // a group of one rank counts nothing
  const auto me = static_cast<std::uint64_t>(m.group_rank(mask));
  const std::uint64_t n = v.local().size(), chunks = (n + 15) / 16;
  const auto begin = [&](std::uint64_t j) {
    return std::min<std::uint64_t>(n, 16 * (j * (chunks / p) + std::min(j, chunks % p)));
  };
  const std::uint64_t share = begin(me + 1) - begin(me);
  return {1, share, (n - share) * sizeof(typename Tensor::value_type), p};
}

// sgd_momentum(opt): an SGD's momentum, 0 for any other optimizer
template <class Opt>
double sgd_momentum(const Opt& opt) {
  if constexpr (requires { opt.options().momentum; })
    return opt.options().momentum;
  else
    return 0;
}

// How run() drives an optimizer: `steps` steps; the learning rate halved before step 3
// (references with an `lr`); no allreduce in a step (`local_only`); sharded updates turned
// off before step `unshard_from` (-1: never).
struct schedule {
  int steps = 5;
  bool halve_rate = true;
  bool local_only = true;
  double tolerance = tol;
  int unshard_from = -1;
  // how the optimizer shards (sharding::on unless a case says otherwise: the allgathers each
  // step makes are then known before it; under measured, from the optimizer's choice)
  mp::sharding sharding = mp::sharding::on;
  // shard_level::state: every update of a variable with replicas sharded, its state in shares
  mp::shard_level shard = mp::shard_level::none;
};

// run(opt, schedule, variables...): opt on the variables, each checked against its reference
// after every step. The first variable gets no gradient at step 2: it must stay as it was,
// and its state too (its reference skips that step as well).
template <class Opt, class... Tracked>
void run(Opt& opt, const schedule& s, Tracked&... vs) {
  opt.set_sharding(s.sharding);
  opt.set_shard(s.shard);
  opt.add(vs.var...);
  REQUIRE(opt.size() == sizeof...(vs));  // variable i of the optimizer: the i-th of vs
  auto& first = std::get<0>(std::tie(vs...));
  for (int k = 0; k < s.steps; ++k) {
    CAPTURE(k);
    if (s.halve_rate && k == 3) {
      opt.set_learning_rate(opt.learning_rate() / 2);
      auto halve = [](auto& v) {
        if constexpr (requires { v.ref.lr; }) v.ref.lr /= 2;
      };
      (halve(vs), ...);
    }
    (vs.set_gradient(k), ...);
    if (k == 2) first.var.zero_grad();
    const auto before = first.var.value().local();
    if (k == s.unshard_from) opt.set_sharded_updates(false);
    // Adam(W)'s replicas share each update and allgather it; SGD (too light to gain) and
    // Adafactor (it reduces over rows and columns) update whole slices. The first update
    // after sharding is turned off completes Adam's state first: m and v, each as the shares.
    // Under sharding::measured a replicated variable's updates 1-3 are sharded, 4-6 whole,
    // and from the 7th on as the optimizer chose (sharded_updates(i), read after the step);
    // one without replicas as under sharding::on.
    const bool had_grad[] = {static_cast<bool>(vs.var.grad())...};
    const auto& mesh = first.var.value().mesh();
    mesh.counters().reset();
    opt.step();
    gather_count expected;
    using O = std::remove_cvref_t<Opt>;
    // sharded state: each update sharded, the state never completed
    const bool state_in_shares =
        s.shard == mp::shard_level::state &&
        (std::is_same_v<O, mp::adam> || std::is_same_v<O, mp::adamw> || sgd_momentum(opt) != 0);
    if (state_in_shares) {
      std::size_t i = 0;
      auto add = [&](auto& v) {
        if (had_grad[i++]) expected.add(shared_update(v.var.value()));
      };
      (add(vs), ...);
    } else if constexpr (std::is_same_v<O, mp::adam> || std::is_same_v<O, mp::adamw>) {
      std::size_t i = 0;
      auto add = [&](auto& v) {
        const std::size_t index = i++;
        if (!had_grad[index]) return;
        const auto c = shared_update(v.var.value());
        const int u = v.updates++;
        const bool measured = opt.sharding_mode() == mp::sharding::measured;
        bool sharded = opt.sharding_mode() == mp::sharding::on || (measured && c.replicas <= 1);
        if (measured && c.replicas > 1) sharded = u >= 6 ? opt.sharded_updates(index) : u < 3;
        if (sharded) {
          expected.add(c);
          v.stale = c.calls == 1 && c.replicas > 1;
        } else if (v.stale) {
          expected.add(c);
          expected.add(c);
          v.stale = false;
        }
      };
      (add(vs), ...);
    }
    const auto gathered = mesh.counters().total(mp::collective::allgather);
    CHECK(gathered.calls == expected.calls);
    CHECK(gathered.values == expected.values);
    CHECK(gathered.bytes_sent == expected.bytes);
    if (s.local_only) CHECK(mesh.counters().total(mp::collective::allreduce).calls == 0);
    CHECK_ALL_RANKS((... && !vs.var.grad()));
    if (k == 2) CHECK_ALL_RANKS(meshpp_test::bit_equal(first.var.value().local(), before));
    auto reference_step = [&](auto& v) {
      if (k != 2 || static_cast<const void*>(&v) != &first) v.reference_step(k);
    };
    (reference_step(vs), ...);
    auto check = [&](const auto& v) {
      CAPTURE(v.which);
      CHECK(v.error() < s.tolerance);
    };
    (check(vs), ...);
  }
  CHECK(opt.steps() == s.steps);
}

// The Adafactor option sets every layout is run with (factoring from size 2 up, so these
// small variables factor).
inline std::vector<std::pair<const char*, mp::adafactor_options>> adafactor_option_sets() {
  return {
      {"Mesh-TensorFlow defaults", {.min_dim_size_to_factor = 2}},
      {"beta1, fixed rate, tight clipping, no parameter scale",
       {.learning_rate = 0.05,
        .beta1 = 0.9,
        .clipping_threshold = 0.5,
        .multiply_by_parameter_scale = false,
        .min_dim_size_to_factor = 2}},
      {"fixed decay, no clipping, beta1, relative step without parameter scale",
       {.beta1 = 0.5,
        .decay_rate = 0.9,
        .clipping_threshold = std::nullopt,
        .multiply_by_parameter_scale = false,
        .min_dim_size_to_factor = 2}},
      {"loose clipping (never reached), fixed rate",
       {.learning_rate = 0.02, .clipping_threshold = 3.0, .min_dim_size_to_factor = 2}},
      {"sizes under min_dim_size_to_factor: not factored", {.min_dim_size_to_factor = 5}},
      {"factored = false, beta1", {.beta1 = 0.9, .factored = false, .min_dim_size_to_factor = 2}},
  };
}

// check_adafactor<Tensors...>(mesh): every option set on variables of these types in one
// optimizer (the first skips step 2), then on the last type alone skipping step 2
template <class... Tensors, class Mesh>
void check_adafactor(const Mesh& m) {
  // (not a structured binding: clang 14 cannot capture those in a lambda)
  for (const auto& set : adafactor_option_sets()) {
    const char* what = set.first;
    const mp::adafactor_options& o = set.second;
    CAPTURE(what);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::tuple<tracked<Tensors, adafactor_reference>...> vs{
          {m, static_cast<int>(I), adafactor_reference_for<Tensors>(o)}...};
      mp::adafactor opt(o);
      run(opt, schedule{.halve_rate = false, .local_only = false}, std::get<I>(vs)...);
    }
    (std::index_sequence_for<Tensors...>{});
    using last = std::tuple_element_t<sizeof...(Tensors) - 1, std::tuple<Tensors...>>;
    tracked<last, adafactor_reference> alone(m, 7, adafactor_reference_for<last>(o));
    mp::adafactor opt(o);
    run(opt, schedule{.halve_rate = false, .local_only = false}, alone);
  }
}

}  // namespace optim_check
